//! v3 workflows to v4 (design §7, "Placement" and "Graph"): maps become
//! arrays, the `start` node becomes `startNodeId` (or a router),
//! `tool` nodes become actions (a chain for several tools), ends or
//! transfers, `set_variables` becomes `updateState`, conditions and their
//! ASTs are renamed, a `backwardCondition` becomes a second edge.

use std::collections::BTreeMap;

use rtc_protocol::{
    ActionNode, AgentNode, BuiltInTools, BuiltInToolsPatch, DynamicVariable, EndNode,
    EntryBehavior, NodeKind, TransferNode, TransferTarget, UpdateStateNode, UpdateStateRule,
    Workflow, WorkflowEdge, WorkflowNode,
};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::builtins::{BindingUse, SystemKind, binding_for, string_param};
use super::edges::{V3Edge, chain_edges, condition, is_failure, v3_edges};
use super::expr::{expression, has_llm_leaf};
use super::{Catalog, Report, Resolved, join, tool_refs};

/// The reason an end node made from `end_call` records.
const END_REASON: &str = "workflow_end";

const KNOWN_KEYS: [&str; 15] = [
    "id",
    "specVersion",
    "name",
    "description",
    "runMode",
    "realtimeInterfaceId",
    "llm",
    "systemPrompt",
    "variables",
    "dynamicVariables",
    "globalToolIds",
    "limits",
    "onErrorNodeId",
    "nodes",
    "edges",
];

fn field<T: DeserializeOwned>(
    map: &Map<String, Value>,
    key: &str,
    path: &str,
    report: &mut Report,
) -> Option<T> {
    let value = map.get(key).filter(|v| !v.is_null())?;
    match serde_json::from_value(value.clone()) {
        Ok(v) => Some(v),
        Err(e) => {
            report.problem(join(path, key), "invalid_field", e.to_string());
            None
        }
    }
}

/// What one v3 node becomes.
enum Mapped {
    Node(Box<WorkflowNode>),
    /// A `tool` node with n tools: n actions, the first with the node's id.
    Chain(Vec<ActionNode>),
    /// The `start` node (dropped, or a router when it has several edges).
    Start,
}

pub(crate) fn workflow(doc: &Value, catalog: &Catalog, report: &mut Report) -> Option<Workflow> {
    let Some(map) = doc.as_object() else {
        report.problem("", "invalid_workflow", "a workflow must be an object");
        return None;
    };
    let before = report.problems.len();
    for key in map.keys().filter(|k| !KNOWN_KEYS.contains(&k.as_str())) {
        report.warn(
            key.clone(),
            format!("`{key}` has no v4 counterpart and is dropped"),
        );
    }
    if map
        .get("specVersion")
        .and_then(Value::as_u64)
        .is_some_and(|v| v >= 4)
    {
        report.problem(
            "specVersion",
            "unsupported_spec_version",
            "only documents before specVersion 4 are migrated",
        );
    }
    let name: Option<String> = field(map, "name", "", report);
    if name.is_none() {
        report.problem("name", "invalid_field", "a workflow needs a `name`");
    }
    let variables: Vec<DynamicVariable> = field(map, "variables", "", report)
        .or_else(|| field(map, "dynamicVariables", "", report))
        .unwrap_or_default();
    let mut built_in_tools = BuiltInTools::default();
    let mut tool_bindings = Vec::new();
    for (path, id) in tool_refs(map, "globalToolIds", report) {
        match catalog.resolve(&id) {
            Resolved::System(s) => {
                if let Some(b) = s.built_in(None, &variables, &path, report) {
                    b.apply_to(&mut built_in_tools);
                }
            }
            Resolved::Tool(t) => {
                if let Some(b) = binding_for(&id, t, None, None, BindingUse::Model, &path, report) {
                    tool_bindings.push(b);
                }
            }
            Resolved::Missing => report.warn(
                path,
                format!("tool `{id}` no longer exists; the reference is dropped"),
            ),
        }
    }
    let empty = Map::new();
    let nodes_in = match map.get("nodes") {
        Some(Value::Object(m)) => m,
        _ => {
            report.problem(
                "nodes",
                "invalid_field",
                "nodes must be an object keyed by node id",
            );
            &empty
        }
    };
    let edges = v3_edges(map, nodes_in, report);
    let mut nodes = Vec::new();
    let mut out_edges = Vec::new();
    let mut last_of: BTreeMap<String, String> = BTreeMap::new();
    let mut kinds: BTreeMap<String, NodeKind> = BTreeMap::new();
    let mut start_node_id: Option<String> = field(map, "startNodeId", "", report);
    for (id, node) in nodes_in {
        let path = format!("nodes/{id}");
        let Some(node) = node.as_object() else {
            report.problem(path, "invalid_node", "a node must be an object");
            continue;
        };
        let failure = edges
            .iter()
            .find(|e| &e.source == id && is_failure(e.forward))
            .map(|e| e.target.clone());
        match node_of(id, node, &variables, catalog, &path, report) {
            Some(Mapped::Node(n)) => {
                kinds.insert(id.clone(), n.kind());
                nodes.push(*n);
            }
            Some(Mapped::Chain(actions)) => {
                chain_edges(id, &actions, failure.as_deref(), &mut out_edges);
                if let Some(last) = actions.last() {
                    kinds.insert(last.id.clone(), NodeKind::Action);
                    last_of.insert(id.clone(), last.id.clone());
                }
                nodes.extend(actions.into_iter().map(WorkflowNode::Action));
            }
            Some(Mapped::Start) => {
                let leaving: Vec<&V3Edge> = edges.iter().filter(|e| &e.source == id).collect();
                if let [only] = leaving.as_slice() {
                    start_node_id = Some(only.target.clone());
                } else {
                    start_node_id = Some(id.clone());
                    kinds.insert(id.clone(), NodeKind::UpdateState);
                    nodes.push(WorkflowNode::UpdateState(UpdateStateNode {
                        id: id.clone(),
                        position: None,
                        rules: Vec::new(),
                    }));
                }
            }
            None => {}
        }
    }
    for e in &edges {
        // The single edge of a dropped start node became `startNodeId`.
        if !kinds.contains_key(&e.source)
            && !last_of.contains_key(&e.source)
            && nodes_in.get(&e.source).is_some_and(is_start)
        {
            continue;
        }
        let path = format!("edges/{}", e.id);
        let from = last_of
            .get(&e.source)
            .cloned()
            .unwrap_or_else(|| e.source.clone());
        if let Some(condition) = condition(
            e.forward,
            kinds.get(&from).copied(),
            &join(&path, "forwardCondition"),
            report,
        ) {
            out_edges.push(WorkflowEdge {
                id: e.id.clone(),
                from: from.clone(),
                to: e.target.clone(),
                condition,
            });
        }
        if let Some(back) = e.backward {
            let back_from = last_of
                .get(&e.target)
                .cloned()
                .unwrap_or_else(|| e.target.clone());
            if let Some(condition) = condition(
                Some(back),
                kinds.get(&back_from).copied(),
                &join(&path, "backwardCondition"),
                report,
            ) {
                out_edges.push(WorkflowEdge {
                    id: format!("{}__back", e.id),
                    from: back_from,
                    to: e.source.clone(),
                    condition,
                });
            }
        }
    }
    if report.problems.len() > before {
        return None;
    }
    Some(Workflow {
        id: map.get("id").and_then(Value::as_str).map(str::to_owned),
        spec_version: rtc_protocol::WORKFLOW_SPEC_VERSION,
        name: name.unwrap_or_default(),
        description: field(map, "description", "", report),
        run_mode: field(map, "runMode", "", report),
        realtime_interface_id: field(map, "realtimeInterfaceId", "", report),
        llm: field(map, "llm", "", report),
        system_prompt: field(map, "systemPrompt", "", report),
        dynamic_variables: (map.contains_key("variables") || map.contains_key("dynamicVariables"))
            .then_some(variables),
        built_in_tools: (!built_in_tools.enabled().is_empty()).then_some(built_in_tools),
        tool_bindings: (!tool_bindings.is_empty()).then_some(tool_bindings),
        limits: field(map, "limits", "", report),
        on_error_node_id: field(map, "onErrorNodeId", "", report),
        start_node_id,
        nodes,
        edges: out_edges,
        created_at: None,
        updated_at: None,
    })
}

fn is_start(node: &Value) -> bool {
    node.get("type").and_then(Value::as_str) == Some("start")
}

/// One entry of a node's `tools`: `(path, toolId, params, resultMapping)`.
type NodeTool<'a> = (
    String,
    String,
    Option<&'a Map<String, Value>>,
    Option<&'a Value>,
);

/// The `tools` entries of a node (and its `toolIds`).
fn entries<'a>(node: &'a Map<String, Value>, path: &str, report: &mut Report) -> Vec<NodeTool<'a>> {
    let mut out = Vec::new();
    if let Some(items) = node.get("tools").and_then(Value::as_array) {
        for (i, t) in items.iter().enumerate() {
            let at = join(path, format!("tools/{i}"));
            let Some(id) = t.get("toolId").and_then(Value::as_str) else {
                report.problem(
                    join(&at, "toolId"),
                    "invalid_field",
                    "a node tool needs a string `toolId`",
                );
                continue;
            };
            out.push((
                at,
                id.to_owned(),
                t.get("params").and_then(Value::as_object),
                t.get("resultMapping"),
            ));
        }
    }
    for (at, id) in tool_refs(node, "toolIds", report) {
        out.push((join(path, at), id, None, None));
    }
    out
}

fn node_of(
    id: &str,
    node: &Map<String, Value>,
    vars: &[DynamicVariable],
    catalog: &Catalog,
    path: &str,
    report: &mut Report,
) -> Option<Mapped> {
    let kind = node.get("type").and_then(Value::as_str).unwrap_or_default();
    match kind {
        "start" => Some(Mapped::Start),
        "agent" => agent(id, node, vars, catalog, path, report)
            .map(|n| Mapped::Node(Box::new(WorkflowNode::Agent(n)))),
        "tool" => tool_node(id, node, catalog, path, report),
        "set_variables" => {
            let mut rules = Vec::new();
            let items = node
                .get("assignments")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            for (i, a) in items.iter().enumerate() {
                let at = join(path, format!("assignments/{i}"));
                let Some(variable) = a.get("variable").and_then(Value::as_str) else {
                    report.problem(
                        join(&at, "variable"),
                        "invalid_field",
                        "an assignment needs a `variable`",
                    );
                    continue;
                };
                let ex_at = join(&at, "expression");
                match expression(a.get("expression").unwrap_or(&Value::Null), &ex_at) {
                    Ok(e) if has_llm_leaf(&e) => report.problem(
                        ex_at,
                        "llm_leaf_not_allowed",
                        "a deterministic node cannot call the model",
                    ),
                    Ok(expression) => rules.push(UpdateStateRule {
                        variable: variable.to_owned(),
                        expression,
                    }),
                    Err((p, m)) => report.problem(p, "invalid_expression", m),
                }
            }
            Some(Mapped::Node(Box::new(WorkflowNode::UpdateState(
                UpdateStateNode {
                    id: id.to_owned(),
                    position: None,
                    rules,
                },
            ))))
        }
        "end" => Some(Mapped::Node(Box::new(WorkflowNode::End(EndNode {
            id: id.to_owned(),
            position: None,
            message: string_param(node, "message"),
            reason: string_param(node, "reason").unwrap_or_else(|| END_REASON.to_owned()),
        })))),
        other => {
            report.problem(
                join(path, "type"),
                "unsupported_node_type",
                format!("node type `{other}` has no v4 form"),
            );
            None
        }
    }
}

fn agent(
    id: &str,
    node: &Map<String, Value>,
    vars: &[DynamicVariable],
    catalog: &Catalog,
    path: &str,
    report: &mut Report,
) -> Option<AgentNode> {
    let mut patch = BuiltInToolsPatch::default();
    let mut bindings = Vec::new();
    let mut writable: Option<Vec<String>> = None;
    for (at, tool_id, params, mapping) in entries(node, path, report) {
        match catalog.resolve(&tool_id) {
            Resolved::System(s) => {
                if let Some(w) = s
                    .built_in(params, vars, &at, report)
                    .and_then(|b| b.apply_to_patch(&mut patch))
                {
                    let list = writable.get_or_insert_with(Vec::new);
                    list.extend(
                        w.into_iter()
                            .filter(|v| !list.contains(v))
                            .collect::<Vec<_>>(),
                    );
                }
            }
            Resolved::Tool(t) => {
                if let Some(b) =
                    binding_for(&tool_id, t, params, mapping, BindingUse::Model, &at, report)
                {
                    bindings.push(b);
                }
            }
            Resolved::Missing => report.warn(
                at,
                format!("tool `{tool_id}` no longer exists; the reference is dropped"),
            ),
        }
    }
    let first_message = string_param(node, "firstMessage");
    Some(AgentNode {
        id: id.to_owned(),
        position: field(node, "position", path, report),
        prompt: string_param(node, "prompt").unwrap_or_default(),
        entry_behavior: Some(if first_message.is_some() {
            EntryBehavior::Say
        } else {
            EntryBehavior::Respond
        }),
        first_message,
        llm: field(node, "llm", path, report),
        independent: field(node, "independent", path, report),
        built_in_tools: (patch != BuiltInToolsPatch::default()).then_some(patch),
        tool_bindings: (!bindings.is_empty()).then_some(bindings),
        writable_variables: writable,
    })
}

fn tool_node(
    id: &str,
    node: &Map<String, Value>,
    catalog: &Catalog,
    path: &str,
    report: &mut Report,
) -> Option<Mapped> {
    let list = entries(node, path, report);
    if list.is_empty() {
        report.problem(
            join(path, "tools"),
            "empty_tool_node",
            "a tool node needs at least one tool",
        );
        return None;
    }
    let system: Vec<_> = list
        .iter()
        .filter_map(|(at, tid, params, _)| match catalog.resolve(tid) {
            Resolved::System(s) => Some((at.clone(), s, *params)),
            _ => None,
        })
        .collect();
    if let Some((at, s, params)) = system.first() {
        if list.len() > 1 {
            report.problem(
                join(path, "tools"),
                "mixed_tool_node",
                "a tool node holding a system tool must hold only that tool",
            );
            return None;
        }
        let merged = s.merged(*params);
        return match s.kind {
            SystemKind::EndCall => Some(Mapped::Node(Box::new(WorkflowNode::End(EndNode {
                id: id.to_owned(),
                position: None,
                message: string_param(&merged, "customMessage").filter(|m| !m.is_empty()),
                reason: END_REASON.to_owned(),
            })))),
            SystemKind::TransferToHuman => Some(Mapped::Node(Box::new(WorkflowNode::Transfer(
                TransferNode {
                    id: id.to_owned(),
                    position: None,
                    target: TransferTarget::Human,
                    message: string_param(&merged, "message"),
                    reason: None,
                },
            )))),
            SystemKind::SkipTurn | SystemKind::UpdateState => {
                report.problem(
                    at.clone(),
                    "unmappable_system_tool",
                    format!(
                        "`{}` only exists in a conversation, not as a deterministic node",
                        s.name
                    ),
                );
                None
            }
        };
    }
    let mut actions = Vec::new();
    for (i, (at, tool_id, params, mapping)) in list.iter().enumerate() {
        match catalog.resolve(tool_id) {
            Resolved::Tool(t) => {
                if let Some(binding) = binding_for(
                    tool_id,
                    t,
                    *params,
                    *mapping,
                    BindingUse::Action,
                    at,
                    report,
                ) {
                    let action_id = if i == 0 {
                        id.to_owned()
                    } else {
                        format!("{id}__{}", i + 1)
                    };
                    actions.push(ActionNode {
                        id: action_id,
                        position: None,
                        binding,
                    });
                }
            }
            _ => report.problem(
                join(at, "toolId"),
                "tool_not_found",
                format!("tool `{tool_id}` does not exist"),
            ),
        }
    }
    (actions.len() == list.len()).then_some(Mapped::Chain(actions))
}
