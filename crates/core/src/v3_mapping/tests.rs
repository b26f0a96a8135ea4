//! The v3 → v4 mapping against the design's example (§6 gives §5) and one
//! case per rule of §7.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::{Migrated, V3Export, migrate_export};

const EXPORT: &str = include_str!("../../../cli/tests/fixtures/workflows/v3_export.json");
const V4: &str = include_str!("../../../cli/tests/fixtures/workflows/order_support_v4.json");

fn export() -> Value {
    serde_json::from_str(EXPORT).expect("fixture")
}

fn run(export: &Value) -> Migrated {
    let list = |k: &str| export[k].as_array().cloned().unwrap_or_default();
    migrate_export(
        &V3Export {
            tools: list("tools"),
            assistants: list("assistants"),
            workflows: list("workflows"),
        },
        &BTreeMap::new(),
    )
}

/// Nodes and edges sorted by id, so documents compare apart from array order.
fn sorted(mut v: Value) -> Value {
    for key in ["nodes", "edges"] {
        if let Some(items) = v[key].as_array_mut() {
            items.sort_by(|a, b| a["id"].as_str().cmp(&b["id"].as_str()));
        }
    }
    v
}

fn workflow_json(m: &Migrated) -> Value {
    assert!(m.problems.is_empty(), "{:?}", m.problems);
    let mut v = serde_json::to_value(&m.workflows[0]).expect("json");
    v.as_object_mut().expect("object").remove("id");
    sorted(v)
}

#[test]
fn the_design_example_migrates_to_section_5_exactly() {
    let m = run(&export());
    assert_eq!(
        workflow_json(&m),
        sorted(serde_json::from_str(V4).expect("fixture"))
    );
    assert_eq!(m.workflows[0].id.as_deref(), Some("wf_order_support"));
    assert_eq!(
        m.system_tools,
        [
            "tool_sys_end",
            "tool_sys_update",
            "tool_sys_skip",
            "tool_sys_human"
        ]
    );
    assert_eq!(m.tools.len(), 1);
    assert_eq!(m.tools[0].id.as_deref(), Some("tool_query_order"));
    assert!(m.warnings.is_empty(), "{:?}", m.warnings);
}

#[test]
fn an_assistant_gets_built_ins_and_model_bindings() {
    let m = run(&export());
    let a = serde_json::to_value(&m.assistants[0]).expect("json");
    assert_eq!(
        a["builtInTools"],
        json!({
            "endConversation": {"description": "User says goodbye", "messageType": "generated", "customMessage": "", "captureReason": true, "allowEndInterruption": false},
            "updateState": {"description": "Call when the user gave the order number", "rules": [
                {"variable": "order_id", "expression": {"type": "llm", "prompt": "The order number the user gave", "outputType": "string"}}]},
            "requestHumanHandoff": {"description": "Hand over"}
        })
    );
    assert_eq!(
        a["toolBindings"],
        json!([{"toolId": "tool_query_order", "argumentBindings": {"order_id": {"source": "model"}, "tenant": {"source": "model"}}}])
    );
    assert!(a.get("toolIds").is_none());
}

/// A small v3 workflow around `nodes` and `edges`, with the export's tools.
fn mini(nodes: Value, edges: Value) -> Value {
    let mut e = export();
    e["assistants"] = json!([]);
    e["workflows"] = json!([{
        "id": "wf_t", "specVersion": 3, "name": "t",
        "variables": [{"name": "n", "type": "number", "default": 0}, {"name": "s", "type": "string", "default": ""}],
        "nodes": nodes, "edges": edges
    }]);
    e
}

fn codes(m: &Migrated) -> Vec<(String, &'static str)> {
    m.problems
        .iter()
        .map(|p| (p.path.clone(), p.code))
        .collect()
}

fn agent() -> Value {
    json!({"type": "agent", "prompt": "p"})
}

#[test]
fn update_state_with_no_list_writes_every_variable() {
    let m = run(&mini(
        json!({"start": {"type": "start"}, "a": {"type": "agent", "prompt": "p", "tools": [{"toolId": "tool_sys_update"}]}}),
        json!({"e0": {"source": "start", "target": "a"}}),
    ));
    let w = workflow_json(&m);
    let a = &w["nodes"][0];
    assert_eq!(a["writableVariables"], json!(["n", "s"]));
    assert_eq!(a["entryBehavior"], "respond");
    assert_eq!(
        a["builtInTools"]["updateState"]["rules"][0],
        json!({"variable": "n", "expression": {"type": "llm", "prompt": "The new value of n", "outputType": "number"}})
    );
    assert_eq!(w["startNodeId"], "a");
}

#[test]
fn inline_params_become_variable_template_or_literal_sources() {
    let mut e = mini(
        json!({"start": {"type": "start"}, "x": {"type": "tool", "tools": [{"toolId": "tool_query_order",
            "params": {"order_id": "{{ s }}", "tenant": "t-{{s}}"}}]}, "y": {"type": "tool", "tools": [{"toolId": "tool_query_order",
            "params": {"order_id": 42, "tenant": "acme"}}]}, "z": {"type": "end"}}),
        json!({"e0": {"source": "start", "target": "x"}, "a": {"source": "x", "target": "y"}, "b": {"source": "y", "target": "z"}}),
    );
    e["tools"][4]["parameters"]["properties"]["order_id"] = json!({});
    let w = workflow_json(&run(&e));
    assert_eq!(
        w["nodes"][0]["binding"]["argumentBindings"],
        json!({"order_id": {"source": "variable", "variableName": "s"}, "tenant": {"source": "template", "template": "t-{{s}}"}})
    );
    assert_eq!(
        w["nodes"][1]["binding"]["argumentBindings"],
        json!({"order_id": {"source": "literal", "value": 42}, "tenant": {"source": "literal", "value": "acme"}})
    );
    assert_eq!(
        w["edges"][0],
        json!({"id": "a", "from": "x", "to": "y", "condition": {"type": "always"}})
    );
}

fn query(order: &str) -> Value {
    json!({"toolId": "tool_query_order", "params": {"order_id": order, "tenant": "acme"}})
}

#[test]
fn a_tool_node_with_several_tools_becomes_a_chain_of_actions() {
    let m = run(&mini(
        json!({"start": {"type": "start"}, "look": {"type": "tool", "tools": [query("a"), query("b"), query("c")]},
               "ok": {"type": "end"}, "bad": {"type": "tool", "tools": [{"toolId": "tool_sys_human"}]}}),
        json!({"e0": {"source": "start", "target": "look"},
               "fine": {"source": "look", "target": "ok", "forwardCondition": {"type": "result", "successful": true}},
               "failed": {"source": "look", "target": "bad", "forwardCondition": {"type": "result", "successful": false}}}),
    ));
    let w = workflow_json(&m);
    let ids: Vec<&str> = w["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["bad", "look", "look__2", "look__3", "ok"]);
    let edges: Vec<(String, String, String, Value)> = w["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["id"].as_str().unwrap().into(),
                e["from"].as_str().unwrap().into(),
                e["to"].as_str().unwrap().into(),
                e["condition"].clone(),
            )
        })
        .collect();
    let t = json!({"type": "result", "success": true});
    let f = json!({"type": "result", "success": false});
    assert_eq!(
        edges,
        vec![
            ("failed".into(), "look__3".into(), "bad".into(), f.clone()),
            ("fine".into(), "look__3".into(), "ok".into(), t.clone()),
            ("look__fail1".into(), "look".into(), "bad".into(), f.clone()),
            ("look__fail2".into(), "look__2".into(), "bad".into(), f),
            (
                "look__ok1".into(),
                "look".into(),
                "look__2".into(),
                t.clone()
            ),
            ("look__ok2".into(), "look__2".into(), "look__3".into(), t),
        ]
    );
    assert_eq!(
        w["nodes"][0],
        json!({"id": "bad", "type": "transfer", "target": {"type": "human"}})
    );
}

#[test]
fn graph_renames_backward_conditions_and_edge_order() {
    let m = run(&mini(
        json!({"start": {"type": "start"}, "a": {"type": "agent", "prompt": "p", "edgeOrder": ["second", "first"]}, "b": agent()}),
        json!({"e0": {"source": "start", "target": "a"},
               "first": {"source": "a", "target": "b", "forwardCondition": {"type": "llm", "condition": "go"},
                         "backwardCondition": {"type": "expression", "expression": {"type": "gte_operator",
                             "left": {"type": "dynamic_variable", "name": "n"}, "right": {"type": "number_literal", "value": 2}}}},
               "second": {"source": "a", "target": "b", "forwardCondition": {"type": "expression", "expression": {"type": "not_operator",
                   "children": [{"type": "lte_operator", "left": {"type": "dynamic_variable", "name": "n"}, "right": {"type": "number_literal", "value": 1}}]}}}}),
    ));
    assert!(m.problems.is_empty(), "{:?}", m.problems);
    let edges = serde_json::to_value(&m.workflows[0].edges).unwrap();
    assert_eq!(
        edges,
        json!([
            {"id": "second", "from": "a", "to": "b", "condition": {"type": "expression", "expression": {"type": "not", "arg":
                {"type": "le", "left": {"type": "variable", "name": "n"}, "right": {"type": "constant", "value": 1}}}}},
            {"id": "first", "from": "a", "to": "b", "condition": {"type": "llm", "condition": "go"}},
            {"id": "first__back", "from": "b", "to": "a", "condition": {"type": "expression", "expression": {"type": "ge",
                "left": {"type": "variable", "name": "n"}, "right": {"type": "constant", "value": 2}}}}
        ])
    );
}

#[test]
fn a_start_node_with_several_edges_becomes_a_router() {
    let m = run(&mini(
        json!({"start": {"type": "start"}, "a": agent(), "b": agent()}),
        json!({"to_a": {"source": "start", "target": "a", "forwardCondition": {"type": "expression", "expression": {"type": "dynamic_variable", "name": "flag"}}},
               "to_b": {"source": "start", "target": "b"}}),
    ));
    let w = workflow_json(&m);
    assert_eq!(w["startNodeId"], "start");
    assert!(
        w["nodes"]
            .as_array()
            .unwrap()
            .contains(&json!({"id": "start", "type": "updateState", "rules": []}))
    );
    assert_eq!(w["edges"].as_array().unwrap().len(), 2);
}

#[test]
fn a_lone_llm_leaf_becomes_an_llm_edge() {
    let m = run(&mini(
        json!({"start": {"type": "start"}, "a": agent(), "b": agent()}),
        json!({"e0": {"source": "start", "target": "a"},
               "e1": {"source": "a", "target": "b", "forwardCondition": {"type": "expression", "expression": {"type": "llm", "prompt": "User is done", "outputType": "boolean"}}}}),
    ));
    let w = workflow_json(&m);
    assert_eq!(
        w["edges"][0]["condition"],
        json!({"type": "llm", "condition": "User is done"})
    );
}

#[test]
fn unmappable_items_are_reported_with_their_path_and_code() {
    let llm = json!({"type": "llm", "prompt": "x", "outputType": "boolean"});
    let cases = [
        // A required param with no inline value.
        (
            json!({"start": {"type": "start"}, "lookup_order": {"type": "tool", "tools": [{"toolId": "tool_query_order", "params": {"tenant": "acme"}}]}}),
            json!({"e0": {"source": "start", "target": "lookup_order"}}),
            "nodes/lookup_order/tools/0/params/order_id",
            "missing_required_param",
        ),
        // An llm leaf inside an expression.
        (
            json!({"start": {"type": "start"}, "a": agent(), "b": agent()}),
            json!({"e0": {"source": "start", "target": "a"}, "e1": {"source": "a", "target": "b", "forwardCondition": {"type": "expression", "expression": {"type": "and_operator", "children": [llm.clone()]}}}}),
            "edges/e1/forwardCondition/expression",
            "llm_leaf_not_allowed",
        ),
        (
            json!({"start": {"type": "start"}, "u": {"type": "set_variables", "assignments": [{"variable": "n", "expression": llm.clone()}]}}),
            json!({"e0": {"source": "start", "target": "u"}}),
            "nodes/u/assignments/0/expression",
            "llm_leaf_not_allowed",
        ),
        // An llm edge leaving a deterministic node.
        (
            json!({"start": {"type": "start"}, "u": {"type": "set_variables", "assignments": []}, "a": agent()}),
            json!({"e0": {"source": "start", "target": "u"}, "e1": {"source": "u", "target": "a", "forwardCondition": {"type": "llm", "condition": "x"}}}),
            "edges/e1/forwardCondition",
            "llm_condition_not_allowed",
        ),
        (
            json!({"start": {"type": "start"}, "x": {"type": "tool", "tools": [{"toolId": "tool_gone"}]}}),
            json!({"e0": {"source": "start", "target": "x"}}),
            "nodes/x/tools/0/toolId",
            "tool_not_found",
        ),
        (
            json!({"start": {"type": "start"}, "x": {"type": "tool", "tools": [{"toolId": "tool_sys_skip"}]}}),
            json!({"e0": {"source": "start", "target": "x"}}),
            "nodes/x/tools/0",
            "unmappable_system_tool",
        ),
        (
            json!({"start": {"type": "start"}, "x": {"type": "router"}}),
            json!({"e0": {"source": "start", "target": "x"}}),
            "nodes/x/type",
            "unsupported_node_type",
        ),
    ];
    for (nodes, edges, path, code) in cases {
        let m = run(&mini(nodes, edges));
        assert_eq!(codes(&m), vec![(path.to_owned(), code)], "{path}");
        assert_eq!(m.problems[0].resource, "workflow/wf_t");
        assert!(m.workflows.is_empty());
    }
}

#[test]
fn references_to_missing_system_tools_are_dropped_with_a_warning() {
    let mut e = mini(
        json!({"start": {"type": "start"}, "a": {"type": "agent", "prompt": "p", "tools": [{"toolId": "tool_sys_language"}]}}),
        json!({"e0": {"source": "start", "target": "a"}}),
    );
    e["workflows"][0]["globalToolIds"] = json!(["tool_sys_gone", "tool_sys_end"]);
    let m = run(&e);
    let w = workflow_json(&m);
    assert!(w["builtInTools"]["endConversation"].is_object());
    let warned: Vec<&str> = m.warnings.iter().map(|w| w.path.as_str()).collect();
    assert_eq!(warned, ["globalToolIds/0", "nodes/a/tools/0"]);
}

#[test]
fn a_system_tool_without_a_v4_built_in_is_reported() {
    let mut e = export();
    e["tools"] = json!([{"id": "tool_sys_lang", "type": "system", "name": "language_detection"}]);
    e["assistants"] = json!([]);
    e["workflows"] = json!([]);
    let m = run(&e);
    assert_eq!(codes(&m), vec![("name".to_owned(), "invalid_system_tool")]);
    assert_eq!(m.problems[0].resource, "tool/tool_sys_lang");
}

#[test]
fn the_migrated_example_passes_the_v4_rules() {
    use crate::assistant_rules::{AssistantContext, validate_assistant};
    use crate::workflow_rules::{WorkflowContext, validate_workflow};
    let m = run(&export());
    let tools: BTreeMap<String, rtc_protocol::Tool> = m
        .tools
        .iter()
        .map(|t| (t.id.clone().unwrap_or_default(), t.clone()))
        .collect();
    let providers = std::collections::BTreeSet::new();
    validate_workflow(
        &m.workflows[0],
        &WorkflowContext {
            tools: &tools,
            assistants: &std::collections::BTreeSet::new(),
            realtime_interface: None,
            providers: &providers,
            update_bounds: Default::default(),
        },
    )
    .expect("valid workflow");
    validate_assistant(
        &m.assistants[0],
        &AssistantContext {
            tools: &tools,
            realtime_interface: None,
            providers: &providers,
            task_backend: None,
            speech_interfaces: &BTreeMap::new(),
            update_bounds: Default::default(),
        },
    )
    .expect("valid assistant");
}

#[test]
fn a_stage_tool_becomes_a_stage_binding_with_model_defaults() {
    let m = run(&mini(
        json!({"start": {"type": "start"}, "a": {"type": "agent", "prompt": "p",
            "tools": [{"toolId": "tool_query_order", "params": {"tenant": "{{s}}"}, "resultMapping": {"s": "status"}}]}}),
        json!({"e0": {"source": "start", "target": "a"}}),
    ));
    let w = workflow_json(&m);
    assert_eq!(
        w["nodes"][0]["toolBindings"],
        json!([{"toolId": "tool_query_order",
            "argumentBindings": {"order_id": {"source": "model"}, "tenant": {"source": "variable", "variableName": "s"}},
            "resultAssignments": {"s": "status"}}])
    );
    assert!(w["nodes"][0].get("builtInTools").is_none());
}
