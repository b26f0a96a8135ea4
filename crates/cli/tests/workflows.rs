//! Workflows over the API (design §8): the version gate and the round trip
//! of the §5 example (scenario 1), a part of the validation matrix
//! (scenario 2; the whole matrix is the validator's unit test), the save
//! part of scenario 6 (realtime workflows are not gated, R-RT-6), and "in
//! use" for the tools and assistants a workflow references.

use serde_json::{Value, json};

use crate::harness::{Api, on_both};

/// The design's §5 example.
pub fn example() -> Value {
    serde_json::from_str(include_str!("fixtures/workflows/order_support_v4.json"))
        .expect("the §5 example is JSON")
}

/// The HTTP tool §5's action calls, aimed at `base_url`.
pub fn order_tool(base_url: &str) -> Value {
    let text =
        include_str!("fixtures/workflows/tool_query_order.json").replace("{{base_url}}", base_url);
    serde_json::from_str(&text).expect("the tool fixture is JSON")
}

/// The design's §6 document: the same workflow in the earlier format.
fn legacy_v3() -> Value {
    let var = |name: &str| json!({"type": "dynamic_variable", "name": name});
    json!({"specVersion": 3, "name": "Order support", "runMode": "pipeline", "llm": {"model": "gpt-4o-mini", "temperature": 0.3},
        "systemPrompt": "You are Acme's support agent. Be brief.",
        "variables": example()["dynamicVariables"].clone(), "globalToolIds": ["tool_sys_end"],
        "nodes": {"start": {"type": "start"},
            "greet": {"type": "agent", "prompt": "Ask for the order number.", "firstMessage": "Hi, Acme support. Your order number?",
                "tools": [{"toolId": "tool_sys_update", "params": {"allowedVariables": ["order_id"]}}, {"toolId": "tool_sys_skip"}]},
            "lookup_order": {"type": "tool", "tools": [{"toolId": "tool_query_order", "params": {"order_id": "{{order_id}}", "tenant": "{{tenant_id}}"},
                "resultMapping": {"order_status": "status"}}]},
            "assess": {"type": "set_variables", "assignments": [{"variable": "needs_human", "expression": {"type": "or_operator", "children": [
                {"type": "eq_operator", "left": var("order_status"), "right": {"type": "string_literal", "value": "lost"}},
                {"type": "eq_operator", "left": var("order_status"), "right": {"type": "string_literal", "value": "damaged"}}]}}]},
            "wrap_up": {"type": "tool", "tools": [{"toolId": "tool_sys_end", "params": {"messageType": "custom", "customMessage": "Order {{order_id}} is {{order_status}}. Bye!"}}]},
            "to_human": {"type": "tool", "tools": [{"toolId": "tool_sys_human", "params": {"message": "Connecting you to a colleague."}}]}},
        "edges": {"e0": {"source": "start", "target": "greet"},
            "got_id": {"source": "greet", "target": "lookup_order", "forwardCondition": {"type": "expression", "expression": {"type": "neq_operator", "left": var("order_id"), "right": {"type": "string_literal", "value": ""}}}},
            "wants_human": {"source": "greet", "target": "to_human", "forwardCondition": {"type": "llm", "condition": "The user asked for a human"}},
            "lookup_ok": {"source": "lookup_order", "target": "assess", "forwardCondition": {"type": "result", "successful": true}},
            "lookup_failed": {"source": "lookup_order", "target": "to_human", "forwardCondition": {"type": "result", "successful": false}},
            "escalate": {"source": "assess", "target": "to_human", "forwardCondition": {"type": "expression", "expression": var("needs_human")}},
            "resolved": {"source": "assess", "target": "wrap_up"}}})
}

async fn seed_tool(ws: &Api) -> anyhow::Result<()> {
    ws.create("/v1/tools", order_tool("https://orders.example.com"))
        .await?;
    Ok(())
}

/// `v` without the fields the server sets.
fn without_meta(v: &Value) -> Value {
    let mut v = v.clone();
    if let Some(map) = v.as_object_mut() {
        for key in ["id", "createdAt", "updatedAt"] {
            map.remove(key);
        }
    }
    v
}

/// Set the value at a JSON pointer; `null` removes the key or array item
/// and a pointer ending in `/-` appends.
fn edit(mut v: Value, pointer: &str, value: Value) -> Value {
    let (parent, key) = pointer.rsplit_once('/').expect("pointer");
    match v.pointer_mut(parent).expect(pointer) {
        Value::Array(items) if key == "-" => items.push(value),
        Value::Array(items) if value.is_null() => {
            items.remove(key.parse::<usize>().expect("index"));
        }
        Value::Array(items) => items[key.parse::<usize>().expect("index")] = value,
        Value::Object(map) if value.is_null() => {
            map.remove(key);
        }
        Value::Object(map) => {
            map.insert(key.to_owned(), value);
        }
        _ => panic!("{pointer}"),
    }
    v
}

on_both!(version_gate_and_round_trip, |srv| {
    let (_, ws) = srv.workspace("A").await?;
    seed_tool(&ws).await?;

    // Scenario 1: only version 4 is accepted, with a pointer to the migration.
    let r = ws.post("/v1/workflows", legacy_v3()).await?;
    r.assert_error(400, "unsupported_spec_version", Some("specVersion"));
    let message = r.body["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("rtc-agent import-v3") && message.contains("rtc-agent migrate"),
        "{message}"
    );
    ws.post(
        "/v1/workflows",
        edit(example(), "/specVersion", Value::Null),
    )
    .await?
    .assert_error(400, "unsupported_spec_version", Some("specVersion"));
    ws.post("/v1/workflows", edit(example(), "/specVersion", json!("4")))
        .await?
        .assert_error(400, "unsupported_spec_version", Some("specVersion"));
    ws.post(
        "/v1/tools",
        json!({"id": "tool_sys_end", "type": "system", "name": "end_call", "description": "User says goodbye",
            "params": {"messageType": "generated"}}),
    )
    .await?
    .assert_error(400, "system_tools_are_builtin", Some("type"));
    ws.put(
        "/v1/tools/tool_query_order",
        json!({"type": "system", "name": "end_call"}),
    )
    .await?
    .assert_error(400, "system_tools_are_builtin", Some("type"));

    // §5 is created and reads back unchanged.
    let created = ws.create("/v1/workflows", example()).await?;
    assert_eq!(without_meta(&created), example());
    let id = created["id"].as_str().unwrap().to_owned();
    assert!(!id.is_empty() && created["createdAt"].is_string() && created["updatedAt"].is_string());
    let path = format!("/v1/workflows/{id}");
    assert_eq!(ws.get(&path).await?.assert_status(200), &created);
    let list = ws.get("/v1/workflows").await?;
    assert_eq!(list.assert_status(200)["data"], json!([created.clone()]));

    // A PUT in the earlier format is refused and changes nothing.
    ws.put(&path, edit(example(), "/specVersion", json!(3)))
        .await?
        .assert_error(400, "unsupported_spec_version", Some("specVersion"));
    ws.put(&path, edit(example(), "/toolIds", json!(["tool_sys_end"])))
        .await?
        .assert_error(400, "unknown_field", Some("toolIds"));
    assert_eq!(ws.get(&path).await?.body, created);
    let renamed = edit(example(), "/name", json!("Order support v2"));
    let replaced = ws.put(&path, renamed.clone()).await?;
    assert_eq!(without_meta(replaced.assert_status(200)), renamed);
    assert_eq!(replaced.body["id"], id.as_str());
    assert_eq!(ws.get(&path).await?.body, replaced.body);
    ws.put("/v1/workflows/wf_nope", example())
        .await?
        .assert_error(404, "not_found", None);

    // The tool is in use: no delete, and no change that breaks the action.
    let r = ws.delete("/v1/tools/tool_query_order").await?;
    r.assert_error(409, "in_use", None);
    assert!(r.text.contains(&id), "{}", r.text);
    let mut narrower = order_tool("https://orders.example.com");
    narrower["parameters"] = json!({"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]});
    narrower["http"]["url"] = json!("https://orders.example.com/orders/{{order_id}}");
    let r = ws.put("/v1/tools/tool_query_order", narrower).await?;
    r.assert_error(409, "breaks_workflow", None);
    assert!(
        r.text.contains("nodes[1].binding.argumentBindings.tenant"),
        "{}",
        r.text
    );

    ws.delete(&path).await?.assert_status(204);
    ws.get(&path).await?.assert_error(404, "not_found", None);
    ws.delete("/v1/tools/tool_query_order")
        .await?
        .assert_status(204);
    Ok(())
});

on_both!(invalid_workflows_name_their_path, |srv| {
    let (_, ws) = srv.workspace("A").await?;
    seed_tool(&ws).await?;
    let llm_leaf =
        json!({"type": "llm", "prompt": "Does the user need a human?", "outputType": "boolean"});
    let cases: Vec<(&str, Value, &str, &str)> = vec![
        (
            "/edges/0/to",
            json!("ghost"),
            "dangling_edge",
            "edges[0].to",
        ),
        (
            "/startNodeId",
            Value::Null,
            "start_node_missing",
            "startNodeId",
        ),
        (
            "/nodes/-",
            json!({"id": "orphan", "type": "end", "reason": "x"}),
            "unreachable_node",
            "nodes[5]",
        ),
        (
            "/nodes/2/rules/0/expression",
            llm_leaf.clone(),
            "llm_leaf_not_allowed",
            "nodes[2].rules[0].expression",
        ),
        (
            "/edges/0/condition/expression",
            llm_leaf,
            "llm_leaf_not_allowed",
            "edges[0].condition.expression",
        ),
        (
            "/edges/3/condition",
            json!({"type": "llm", "condition": "The lookup failed"}),
            "llm_condition_not_allowed",
            "edges[3].condition",
        ),
        (
            "/nodes/1/binding/argumentBindings/order_id",
            json!({"source": "model"}),
            "model_source_not_allowed",
            "nodes[1].binding.argumentBindings.order_id",
        ),
        (
            "/nodes/1/binding/resultAssignments/ghost",
            json!("status"),
            "unknown_variable",
            "nodes[1].binding.resultAssignments.ghost",
        ),
        (
            "/edges/5",
            Value::Null,
            "non_exhaustive_routing",
            "nodes[2]",
        ),
        (
            "/edges/-",
            json!({"id": "again", "from": "assess", "to": "assess", "condition": {"type": "always"}}),
            "unbounded_cycle",
            "edges[6]",
        ),
        (
            "/toolIds",
            json!(["tool_sys_end"]),
            "unknown_field",
            "toolIds",
        ),
        (
            "/nodes/0/tools",
            json!([{"toolId": "tool_sys_skip"}]),
            "unknown_field",
            "nodes[0].tools",
        ),
        (
            "/nodes/0/builtInTools/updateState/rules/0/variable",
            json!("needs_human"),
            "variable_not_writable",
            "nodes[0].builtInTools.updateState.rules[0].variable",
        ),
        (
            "/nodes/2/rules/0/variable",
            json!("system__turn_count"),
            "read_only_variable",
            "nodes[2].rules[0].variable",
        ),
        (
            "/nodes/1/binding/toolId",
            json!("tool_ghost"),
            "tool_not_found",
            "nodes[1].binding.toolId",
        ),
        (
            "/nodes/0/entryBehavior",
            json!("respond"),
            "entry_behavior",
            "nodes[0].entryBehavior",
        ),
        (
            "/nodes/4/target",
            json!({"type": "assistant", "assistantId": "asst_ghost"}),
            "assistant_not_found",
            "nodes[4].target.assistantId",
        ),
        (
            "/limits",
            json!({"maxVisitsPerNode": 0}),
            "out_of_range",
            "limits.maxVisitsPerNode",
        ),
        (
            "/nodes/3/id",
            json!("assess"),
            "duplicate_id",
            "nodes[3].id",
        ),
        (
            "/nodes/0/prompt",
            json!(7),
            "invalid_field",
            "nodes[0].prompt",
        ),
    ];
    for (pointer, value, code, field) in cases {
        let r = ws
            .post("/v1/workflows", edit(example(), pointer, value))
            .await?;
        assert_eq!(r.status.as_u16(), 400, "{pointer}: {}", r.text);
        assert_eq!(
            (
                r.body["error"]["code"].as_str(),
                r.body["error"]["field"].as_str()
            ),
            (Some(code), Some(field)),
            "{pointer}: {}",
            r.text
        );
    }
    // Not a JSON object: 400 too.
    ws.post("/v1/workflows", json!([example()]))
        .await?
        .assert_error(400, "invalid_body", None);
    assert_eq!(ws.get("/v1/workflows").await?.body["data"], json!([]));

    // Control: a conditional cycle through greet is accepted.
    let cyclic = edit(
        edit(example(), "/edges/3/to", json!("greet")),
        "/edges/4/to",
        json!("greet"),
    );
    ws.create("/v1/workflows", cyclic).await?;

    // A transfer holds its assistant: deleting it is refused.
    let asst = ws
        .create("/v1/assistants", json!({"name": "Sales"}))
        .await?;
    let asst_id = asst["id"].as_str().unwrap();
    let transfer = edit(
        example(),
        "/nodes/4/target",
        json!({"type": "assistant", "assistantId": asst_id, "history": "none"}),
    );
    let w = ws.create("/v1/workflows", transfer).await?;
    ws.delete(&format!("/v1/assistants/{asst_id}"))
        .await?
        .assert_error(409, "in_use", None);
    ws.delete(&format!("/v1/workflows/{}", w["id"].as_str().unwrap()))
        .await?
        .assert_status(204);
    ws.delete(&format!("/v1/assistants/{asst_id}"))
        .await?
        .assert_status(204);
    Ok(())
});

on_both!(realtime_workflows_are_not_gated, |srv| {
    let (_, ws) = srv.workspace("A").await?;
    seed_tool(&ws).await?;
    // Scenario 6: an independent stage on its own model with a binding
    // whose `tenant` comes from a variable, on an interface that declares
    // no prompt tools at all.
    let binding = json!({"toolId": "tool_query_order", "argumentBindings": {
        "order_id": {"source": "model"}, "tenant": {"source": "variable", "variableName": "tenant_id"}}});
    let mut w = edit(example(), "/runMode", json!("realtime"));
    w = edit(w, "/realtimeInterfaceId", json!("stepfun-realtime"));
    w = edit(
        w,
        "/nodes/-",
        json!({"id": "self_service", "type": "agent", "prompt": "Look the order up.",
        "independent": true, "llm": {"model": "stage-y"}, "toolBindings": [binding.clone()]}),
    );
    w = edit(
        w,
        "/edges/-",
        json!({"id": "wants_self_service", "from": "greet", "to": "self_service",
        "condition": {"type": "llm", "condition": "The user wants to look it up alone"}}),
    );
    let created = ws.create("/v1/workflows", w.clone()).await?;
    assert_eq!(without_meta(&created), w);

    // An assistant with that binding on that interface is refused.
    ws.post(
        "/v1/assistants",
        json!({"name": "Realtime", "runMode": "realtime", "realtimeInterfaceId": "stepfun-realtime",
            "dynamicVariables": [{"name": "tenant_id", "type": "string", "default": "acme"}],
            "toolBindings": [binding]}),
    )
    .await?
    .assert_error(422, "realtime_incompatible", Some("toolBindings[0]"));

    // The interface must exist, though.
    ws.post(
        "/v1/workflows",
        edit(w, "/realtimeInterfaceId", json!("ghost-realtime")),
    )
    .await?
    .assert_error(
        400,
        "unknown_realtime_interface",
        Some("realtimeInterfaceId"),
    );
    Ok(())
});
