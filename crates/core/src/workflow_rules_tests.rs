//! The validation matrix (design §8 scenario 2 and every code of §4): each
//! case edits the §5 example at JSON pointers and names the code and field
//! the document is refused with, or `None` when it is accepted.

use std::collections::{BTreeMap, BTreeSet};

use rtc_protocol::Tool;
use serde_json::{Value, json};

use super::*;
use crate::realtime::shipped_interfaces;
use crate::workflow_parse::parse_workflow;

fn example() -> Value {
    serde_json::from_str(include_str!(
        "../../cli/tests/fixtures/workflows/order_support_v4.json"
    ))
    .expect("the design's example is JSON")
}

fn tools() -> BTreeMap<String, Tool> {
    let text = include_str!("../../cli/tests/fixtures/workflows/tool_query_order.json")
        .replace("{{base_url}}", "https://orders.example.com");
    let order: Tool = serde_json::from_str(&text).expect("the fixture tool parses");
    let notify: Tool = serde_json::from_value(
        json!({"id": "tool_notify", "name": "query_order", "type": "client",
        "client": {"functionName": "notify"}}),
    )
    .expect("a client tool");
    BTreeMap::from([
        ("tool_query_order".to_owned(), order),
        ("tool_notify".to_owned(), notify),
    ])
}

/// Stands for a JSON `null` to set (a plain `null` removes).
const NULL: &str = "<null>";

/// Set the value at a JSON pointer; `null` removes the key or array item,
/// [`NULL`] sets `null`, and a pointer ending in `/-` appends.
fn edit(mut v: Value, pointer: &str, value: Value) -> Value {
    let (parent, key) = pointer.rsplit_once('/').expect("pointer");
    let target = v.pointer_mut(parent).unwrap_or_else(|| panic!("{pointer}"));
    match (target, key) {
        (Value::Array(items), "-") => items.push(value),
        (Value::Array(items), i) if value.is_null() => {
            items.remove(i.parse::<usize>().expect("index"));
        }
        (Value::Array(items), i) => items[i.parse::<usize>().expect("index")] = value,
        (Value::Object(map), k) if value.is_null() => {
            map.remove(k);
        }
        (Value::Object(map), k) if value == NULL => {
            map.insert(k.to_owned(), Value::Null);
        }
        (Value::Object(map), k) => {
            map.insert(k.to_owned(), value);
        }
        _ => panic!("{pointer}"),
    }
    v
}

/// Parse and validate as the API does: `Err((code, field))` when refused.
fn outcome(v: &Value) -> Result<(), (&'static str, String)> {
    let w = parse_workflow(v).map_err(|e| (e.code, e.field))?;
    let tools = tools();
    let assistants = BTreeSet::from(["asst_sales".to_owned()]);
    let providers = BTreeSet::from(["openai".to_owned()]);
    let interfaces = shipped_interfaces();
    let iface = w
        .realtime_interface_id
        .as_ref()
        .and_then(|id| interfaces.iter().find(|i| i.id.as_ref() == Some(id)));
    let ctx = WorkflowContext {
        tools: &tools,
        assistants: &assistants,
        realtime_interface: iface,
        providers: &providers,
        update_bounds: Default::default(),
    };
    validate_workflow(&w, &ctx).map_err(|e| {
        assert!(!e.message.is_empty(), "{} has a message", e.code);
        (e.code, e.field)
    })
}

fn llm_leaf() -> Value {
    json!({"type": "llm", "prompt": "Does the user need a human?", "outputType": "boolean"})
}

fn always(id: &str, from: &str, to: &str) -> Value {
    json!({"id": id, "from": from, "to": to, "condition": {"type": "always"}})
}

fn greet_binding(result: Value) -> Value {
    json!([{"toolId": "tool_query_order", "argumentBindings": {"order_id": {"source": "model"},
        "tenant": {"source": "variable", "variableName": "tenant_id"}}, "resultAssignments": result}])
}

fn many_nodes(n: usize) -> Value {
    let mut nodes = example()["nodes"].as_array().cloned().unwrap_or_default();
    for i in nodes.len()..n {
        nodes.push(json!({"id": format!("end_{i}"), "type": "end", "reason": "x"}));
    }
    Value::Array(nodes)
}

fn many_edges(n: usize) -> Value {
    let mut edges = example()["edges"].as_array().cloned().unwrap_or_default();
    for i in edges.len()..n {
        edges.push(
            json!({"id": format!("e{i}"), "from": "greet", "to": "wrap_up",
            "condition": {"type": "llm", "condition": "The user is done"}}),
        );
    }
    Value::Array(edges)
}

type Case = (
    &'static str,
    Vec<(&'static str, Value)>,
    Option<(&'static str, &'static str)>,
);

#[rustfmt::skip]
fn matrix() -> Vec<Case> {
    vec![
        // Design §8 scenario 2.
        ("edge to ghost", vec![("/edges/0/to", json!("ghost"))], Some(("dangling_edge", "edges[0].to"))),
        ("no startNodeId", vec![("/startNodeId", Value::Null)], Some(("start_node_missing", "startNodeId"))),
        ("orphan node", vec![("/nodes/-", json!({"id": "orphan", "type": "end", "reason": "x"}))], Some(("unreachable_node", "nodes[5]"))),
        ("llm leaf in assess", vec![("/nodes/2/rules/0/expression/args/1", llm_leaf())], Some(("llm_leaf_not_allowed", "nodes[2].rules[0].expression.args[1]"))),
        ("llm leaf in got_id", vec![("/edges/0/condition/expression", llm_leaf())], Some(("llm_leaf_not_allowed", "edges[0].condition.expression"))),
        ("llm edge leaving lookup_order", vec![("/edges/3/condition", json!({"type": "llm", "condition": "The lookup failed"}))], Some(("llm_condition_not_allowed", "edges[3].condition"))),
        ("model source in the action", vec![("/nodes/1/binding/argumentBindings/order_id", json!({"source": "model"}))], Some(("model_source_not_allowed", "nodes[1].binding.argumentBindings.order_id"))),
        ("undeclared assignment target", vec![("/nodes/1/binding/resultAssignments", json!({"ghost": "status"}))], Some(("unknown_variable", "nodes[1].binding.resultAssignments.ghost"))),
        ("resolved removed", vec![("/edges/5", Value::Null)], Some(("non_exhaustive_routing", "nodes[2]"))),
        ("always self-loop on assess", vec![("/edges/-", always("again", "assess", "assess"))], Some(("unbounded_cycle", "edges[6]"))),
        ("toolIds added", vec![("/toolIds", json!(["tool_sys_end"]))], Some(("unknown_field", "toolIds"))),
        ("greet rule targeting needs_human", vec![("/nodes/0/builtInTools/updateState/rules/0/variable", json!("needs_human"))], Some(("variable_not_writable", "nodes[0].builtInTools.updateState.rules[0].variable"))),
        ("control: a conditional cycle through greet", vec![("/edges/3/to", json!("greet")), ("/edges/4/to", json!("greet")),], None),
        // The version gate and the shape.
        ("specVersion 3", vec![("/specVersion", json!(3))], Some(("unsupported_spec_version", "specVersion"))),
        ("no specVersion", vec![("/specVersion", Value::Null)], Some(("unsupported_spec_version", "specVersion"))),
        ("specVersion as a string", vec![("/specVersion", json!("4"))], Some(("unsupported_spec_version", "specVersion"))),
        ("v3 node tools", vec![("/nodes/0/tools", json!([{"toolId": "tool_sys_skip"}]))], Some(("unknown_field", "nodes[0].tools"))),
        ("v3 resultMapping", vec![("/nodes/1/binding/resultMapping", json!({}))], Some(("unknown_field", "nodes[1].binding.resultMapping"))),
        ("a prompt that is a number", vec![("/nodes/0/prompt", json!(3))], Some(("invalid_field", "nodes[0].prompt"))),
        // Ids.
        ("duplicate node id", vec![("/nodes/3/id", json!("assess"))], Some(("duplicate_id", "nodes[3].id"))),
        ("duplicate edge id", vec![("/edges/5/id", json!("escalate"))], Some(("duplicate_id", "edges[5].id"))),
        ("node id with capitals", vec![("/nodes/3/id", json!("Wrap-Up"))], Some(("invalid_id", "nodes[3].id"))),
        ("node id too long", vec![("/nodes/3/id", json!(format!("w{}", "x".repeat(64))))], Some(("invalid_id", "nodes[3].id"))),
        ("edge id with a space", vec![("/edges/5/id", json!("all good"))], Some(("invalid_id", "edges[5].id"))),
        // Start and error nodes.
        ("start names no node", vec![("/startNodeId", json!("ghost"))], Some(("start_node_missing", "startNodeId"))),
        ("start at an end node", vec![("/startNodeId", json!("wrap_up"))], Some(("start_node_invalid", "startNodeId"))),
        ("error node is an agent", vec![("/onErrorNodeId", json!("greet"))], Some(("on_error_node_invalid", "onErrorNodeId"))),
        ("error node names no node", vec![("/onErrorNodeId", json!("ghost"))], Some(("on_error_node_invalid", "onErrorNodeId"))),
        ("control: error node is a transfer", vec![("/onErrorNodeId", json!("to_human"))], None),
        ("control: an unreachable error node counts as reachable", vec![("/nodes/-", json!({"id": "failed", "type": "end", "reason": "workflow_loop_limit"})), ("/onErrorNodeId", json!("failed")),], None),
        // Edges.
        ("edge from ghost", vec![("/edges/1/from", json!("ghost"))], Some(("dangling_edge", "edges[1].from"))),
        ("edge leaving an end node", vec![("/edges/-", always("after_end", "wrap_up", "greet"))], Some(("edge_from_terminal", "edges[6].from"))),
        ("edge leaving a transfer to an assistant", vec![("/nodes/4/target", json!({"type": "assistant", "assistantId": "asst_sales", "history": "none"})), ("/edges/-", always("back", "to_human", "greet")),], Some(("edge_from_terminal", "edges[6].from"))),
        ("control: a human transfer walks on after release", vec![("/edges/-", always("back", "to_human", "greet"))], None),
        ("llm edge leaving a human transfer", vec![("/edges/-", json!({"id": "back", "from": "to_human", "to": "greet", "condition": {"type": "llm", "condition": "x"}}))], Some(("llm_condition_not_allowed", "edges[6].condition"))),
        ("result edge leaving updateState", vec![("/edges/5/condition", json!({"type": "result", "success": true}))], Some(("result_condition_not_allowed", "edges[5].condition"))),
        ("result edge leaving an agent", vec![("/edges/1/condition", json!({"type": "result", "success": false}))], Some(("result_condition_not_allowed", "edges[1].condition"))),
        ("an empty llm condition", vec![("/edges/1/condition/condition", json!(" "))], Some(("missing_field", "edges[1].condition.condition"))),
        ("control: a global llm edge", vec![("/edges/-", json!({"id": "bye", "from": "*", "to": "wrap_up", "condition": {"type": "llm", "condition": "The user says goodbye"}}))], None),
        ("control: a global expression edge", vec![("/edges/-", json!({"id": "escalated", "from": "*", "to": "to_human", "condition": {"type": "expression", "expression": {"type": "variable", "name": "needs_human"}}}))], None),
        ("global always edge", vec![("/edges/-", always("bye", "*", "wrap_up"))], Some(("invalid_condition", "edges[6].condition"))),
        ("global result edge", vec![("/edges/-", json!({"id": "bye", "from": "*", "to": "wrap_up", "condition": {"type": "result", "success": true}}))], Some(("result_condition_not_allowed", "edges[6].condition"))),
        ("global edge to ghost", vec![("/edges/-", json!({"id": "bye", "from": "*", "to": "ghost", "condition": {"type": "llm", "condition": "bye"}}))], Some(("dangling_edge", "edges[6].to"))),
        ("control: a node reached only by a global edge", vec![("/nodes/-", json!({"id": "bye", "type": "end", "reason": "user_left"})), ("/edges/-", json!({"id": "leave", "from": "*", "to": "bye", "condition": {"type": "llm", "condition": "The user says goodbye"}})),], None),
        // Expressions.
        ("edge expression is a string", vec![("/edges/0/condition/expression", json!({"type": "variable", "name": "order_id"}))], Some(("type_mismatch", "edges[0].condition.expression"))),
        ("edge reads an undeclared variable", vec![("/edges/4/condition/expression/name", json!("ghost"))], Some(("unknown_variable", "edges[4].condition.expression.name"))),
        ("control: an edge reads a system variable", vec![("/edges/4/condition/expression", json!({"type": "gt", "left": {"type": "variable", "name": "system__turn_count"}, "right": {"type": "constant", "value": 3}}))], None),
        ("updateState assigns a system variable", vec![("/nodes/2/rules/0/variable", json!("system__turn_count"))], Some(("read_only_variable", "nodes[2].rules[0].variable"))),
        ("updateState assigns an undeclared variable", vec![("/nodes/2/rules/0/variable", json!("ghost"))], Some(("unknown_variable", "nodes[2].rules[0].variable"))),
        ("updateState assigns the wrong type", vec![("/nodes/2/rules/0/variable", json!("order_status"))], Some(("type_mismatch", "nodes[2].rules[0].expression"))),
        ("control: a pure router", vec![("/nodes/2/rules", json!([]))], None),
        ("action assigns a system variable", vec![("/nodes/1/binding/resultAssignments", json!({"system__turn_count": "n"}))], Some(("read_only_variable", "nodes[1].binding.resultAssignments.system__turn_count"))),
        ("stage rule assigns a system variable", vec![("/nodes/0/builtInTools/updateState/rules/0/variable", json!("system__turn_count"))], Some(("read_only_variable", "nodes[0].builtInTools.updateState.rules[0].variable"))),
        ("global rule assigns a system variable", vec![("/builtInTools/updateState", json!({"rules": [{"variable": "system__user_id", "expression": {"type": "constant", "value": "x"}}]}))], Some(("read_only_variable", "builtInTools.updateState.rules[0].variable"))),
        // Bindings.
        ("action tool missing", vec![("/nodes/1/binding/toolId", json!("tool_ghost"))], Some(("tool_not_found", "nodes[1].binding.toolId"))),
        ("global binding tool missing", vec![("/toolBindings", json!([{"toolId": "tool_ghost"}]))], Some(("tool_not_found", "toolBindings[0].toolId"))),
        ("stage binding tool missing", vec![("/nodes/0/toolBindings", json!([{"toolId": "tool_ghost"}]))], Some(("tool_not_found", "nodes[0].toolBindings[0].toolId"))),
        ("action misses a required argument", vec![("/nodes/1/binding/argumentBindings/tenant", Value::Null)], Some(("missing_argument", "nodes[1].binding.argumentBindings.tenant"))),
        ("action binds an unknown argument", vec![("/nodes/1/binding/argumentBindings/region", json!({"source": "literal", "value": "cn"}))], Some(("unknown_argument", "nodes[1].binding.argumentBindings.region"))),
        ("action reads an undeclared variable", vec![("/nodes/1/binding/argumentBindings/tenant/variableName", json!("ghost"))], Some(("unknown_variable", "nodes[1].binding.argumentBindings.tenant.variableName"))),
        ("control: a stage offers a model-sourced binding", vec![("/nodes/0/toolBindings", greet_binding(json!({"order_id": "id"})))], None),
        ("stage binding assigns outside writableVariables", vec![("/nodes/0/toolBindings", greet_binding(json!({"order_status": "status"})))], Some(("variable_not_writable", "nodes[0].toolBindings[0].resultAssignments.order_status"))),
        ("inherited binding assigns outside writableVariables", vec![("/toolBindings", greet_binding(json!({"order_status": "status"})))], Some(("variable_not_writable", "nodes[0].writableVariables"))),
        ("control: an independent stage does not inherit bindings", vec![("/toolBindings", greet_binding(json!({"order_status": "status"}))), ("/nodes/0/independent", json!(true)),], None),
        ("writableVariables names a ghost", vec![("/nodes/0/writableVariables/-", json!("ghost"))], Some(("unknown_variable", "nodes[0].writableVariables[1]"))),
        ("two tools of one name in a stage", vec![("/toolBindings", greet_binding(json!({}))), ("/nodes/0/toolBindings", json!([{"toolId": "tool_notify"}])),], Some(("duplicate_tool_name", "nodes[0].toolBindings[0].toolId"))),
        ("control: a stage binding of its own", vec![("/nodes/0/toolBindings", json!([{"toolId": "tool_notify"}]))], None),
        // Stages.
        ("say without a first message", vec![("/nodes/0/firstMessage", Value::Null)], Some(("entry_behavior", "nodes[0].firstMessage"))),
        ("first message without say", vec![("/nodes/0/entryBehavior", json!("respond"))], Some(("entry_behavior", "nodes[0].entryBehavior"))),
        ("first message with the default entry", vec![("/nodes/0/entryBehavior", Value::Null)], Some(("entry_behavior", "nodes[0].entryBehavior"))),
        ("control: wait without a message", vec![("/nodes/0/entryBehavior", json!("wait")), ("/nodes/0/firstMessage", Value::Null),], None),
        ("stage prompt names a ghost", vec![("/nodes/0/prompt", json!("Ask {{ghost}}"))], Some(("unknown_variable", "nodes[0].prompt"))),
        ("end message names a ghost", vec![("/nodes/3/message", json!("Bye {{ghost}}"))], Some(("unknown_variable", "nodes[3].message"))),
        ("stage provider unknown", vec![("/nodes/0/llm", json!({"provider": "ghost"}))], Some(("unknown_provider", "nodes[0].llm.provider"))),
        ("stage temperature out of range", vec![("/nodes/0/llm", json!({"temperature": 3}))], Some(("out_of_range", "nodes[0].llm.temperature"))),
        ("stage custom end without a message", vec![("/nodes/0/builtInTools/endConversation", json!({"messageType": "custom"}))], Some(("missing_field", "nodes[0].builtInTools.endConversation.customMessage"))),
        ("control: a stage disables a global built-in", vec![("/nodes/0/builtInTools/endConversation", json!(NULL))], None),
        ("transfer to a missing assistant", vec![("/nodes/4/target", json!({"type": "assistant", "assistantId": "asst_ghost"}))], Some(("assistant_not_found", "nodes[4].target.assistantId"))),
        ("control: transfer to an assistant", vec![("/nodes/4/target", json!({"type": "assistant", "assistantId": "asst_sales"}))], None),
        // Routing and cycles.
        ("action with only its success edge", vec![("/edges/3", Value::Null)], Some(("non_exhaustive_routing", "nodes[1]"))),
        ("control: an action routed by always", vec![("/edges/3/condition", json!({"type": "always"}))], None),
        ("a two-node always cycle", vec![("/nodes/-", json!({"id": "recheck", "type": "updateState", "rules": []})), ("/edges/5/to", json!("recheck")), ("/edges/-", always("loop", "recheck", "assess")),], Some(("unbounded_cycle", "edges[6]"))),
        ("control: a deterministic cycle broken by a result edge", vec![("/edges/-", always("again", "assess", "lookup_order"))], None),
        // Sizes, limits, run mode.
        ("201 nodes", vec![("/nodes", many_nodes(201))], Some(("too_many", "nodes"))),
        ("1001 edges", vec![("/edges", many_edges(1_001))], Some(("too_many", "edges"))),
        ("control: 200 nodes, 1000 edges", vec![("/nodes", many_nodes(200)), ("/edges", many_edges(1_000))], Some(("unreachable_node", "nodes[5]"))),
        ("no visits allowed", vec![("/limits", json!({"maxVisitsPerNode": 0}))], Some(("out_of_range", "limits.maxVisitsPerNode"))),
        ("too many hops allowed", vec![("/limits", json!({"maxHopsPerTurn": 1_001}))], Some(("out_of_range", "limits.maxHopsPerTurn"))),
        ("control: limits at their bounds", vec![("/limits", json!({"maxVisitsPerNode": 1, "maxHopsPerTurn": 1_000}))], None),
        ("realtime without an interface", vec![("/runMode", json!("realtime"))], Some(("missing_field", "realtimeInterfaceId"))),
        ("realtime on a missing interface", vec![("/runMode", json!("realtime")), ("/realtimeInterfaceId", json!("ghost")),], Some(("unknown_realtime_interface", "realtimeInterfaceId"))),
        ("control: realtime on stepfun is not gated (R-RT-6)", vec![("/runMode", json!("realtime")), ("/realtimeInterfaceId", json!("stepfun-realtime")),], None),
        ("blank name", vec![("/name", json!(" "))], Some(("invalid_name", "name"))),
        ("duplicate variable", vec![("/dynamicVariables/1/name", json!("tenant_id"))], Some(("duplicate_name", "dynamicVariables[1].name"))),
        ("a default past RTC_MAX_VALUE_BYTES", vec![("/dynamicVariables/0/default", json!("x".repeat(17 * 1024)))], Some(("value_too_large", "dynamicVariables[0].default"))),
    ]
}

#[test]
fn the_design_example_is_valid() {
    assert_eq!(outcome(&example()), Ok(()));
}

#[test]
fn validation_matrix() {
    let mut failures = Vec::new();
    for (name, edits, expected) in matrix() {
        let doc = edits
            .into_iter()
            .fold(example(), |doc, (pointer, value)| edit(doc, pointer, value));
        let got = outcome(&doc);
        let want = expected.map_or(Ok(()), |(code, field)| Err((code, field.to_owned())));
        if got != want {
            failures.push(format!("{name}: expected {want:?}, got {got:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_design_code_is_in_the_matrix() {
    let codes: BTreeSet<&str> = matrix()
        .into_iter()
        .filter_map(|(_, _, expected)| expected.map(|(code, _)| code))
        .collect();
    for code in [
        "unsupported_spec_version",
        "unknown_field",
        "duplicate_id",
        "start_node_missing",
        "start_node_invalid",
        "dangling_edge",
        "edge_from_terminal",
        "unreachable_node",
        "llm_condition_not_allowed",
        "result_condition_not_allowed",
        "non_exhaustive_routing",
        "unbounded_cycle",
        "llm_leaf_not_allowed",
        "type_mismatch",
        "unknown_variable",
        "read_only_variable",
        "model_source_not_allowed",
        "variable_not_writable",
        "duplicate_tool_name",
        "tool_not_found",
        "entry_behavior",
        "on_error_node_invalid",
        "too_many",
        "out_of_range",
        "invalid_id",
        "assistant_not_found",
    ] {
        assert!(codes.contains(code), "{code} has a case");
    }
}
