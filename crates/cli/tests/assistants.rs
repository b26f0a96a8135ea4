//! Assistants: variables, built-ins, bindings, startup actions, realtime
//! gating, compatibility and cleanup (R-DV, R-BI, R-TB, R-RT, R-EX).

use serde_json::{Value, json};

use crate::harness::{Api, assert_contains, on_both};

async fn seed_tools(ws: &Api) -> anyhow::Result<()> {
    ws.put(
        "/v1/secrets/secret__api_key",
        json!({"value": "k-secret-value"}),
    )
    .await?
    .assert_status(201);
    ws.create("/v1/tools", json!({
        "id": "tool_query_order", "name": "query_order", "type": "http",
        "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}, "tenant": {"type": "string"}}, "required": ["order_id", "tenant"]},
        "templateInputs": [{"name": "region"}],
        "http": {"method": "GET", "url": "https://api.example.com/{{input__region}}/orders/{{order_id}}?tenant={{tenant}}",
                 "headers": {"Authorization": "Bearer {{secret__api_key}}"}}
    })).await?;
    ws.create(
        "/v1/tools",
        json!({"id": "tool_photo", "name": "set_photo_button_visible", "type": "client",
        "parameters": {"type": "object", "properties": {"visible": {"type": "boolean"}}},
        "client": {"functionName": "setPhotoButtonVisible", "waitForResponse": false}}),
    )
    .await?;
    Ok(())
}

fn assistant() -> Value {
    json!({
        "name": "Support",
        "llm": {"model": "gpt-4o-mini", "temperature": 0.3},
        "systemPrompt": "Help {{customer_name}} of {{tenant_id}}. Session {{system__session_id}}.",
        "firstMessage": "Hello {{customer_name}}!",
        "dynamicVariables": [
            {"name": "customer_name", "type": "string", "default": "there"},
            {"name": "tenant_id", "type": "string", "description": "Tenant"},
            {"name": "order_status", "type": "string"},
            {"name": "mood_score", "type": "number", "default": 0},
            {"name": "profile", "type": "json", "default": {"tier": "gold"}}
        ],
        "builtInTools": {
            "endConversation": {"description": "When the user says goodbye", "messageType": "none", "customMessage": "", "captureReason": true, "allowEndInterruption": false},
            "updateState": {"description": "When the user's mood changes", "rules": [
                {"variable": "mood_score", "expression": {"type": "if",
                    "cond": {"type": "llm", "prompt": "Is the user happy?", "outputType": "boolean"},
                    "then": {"type": "add", "left": {"type": "variable", "name": "mood_score"}, "right": {"type": "constant", "value": 1}},
                    "else": {"type": "variable", "name": "mood_score"}}}
            ]},
            "skipTurn": {"description": "When the user asks to wait"},
            "requestHumanHandoff": {"description": "When the user asks for a human"}
        },
        "toolBindings": [
            {"toolId": "tool_query_order",
             "argumentBindings": {"order_id": {"source": "model"}, "tenant": {"source": "variable", "variableName": "tenant_id"}},
             "templateBindings": {"region": {"source": "literal", "value": "cn"}},
             "resultAssignments": {"order_status": "status"},
             "modelResultFilter": ["status", "items[0].id"]},
            {"toolId": "tool_photo", "argumentBindings": {"visible": {"source": "model"}}}
        ],
        "startupActions": [
            {"toolId": "tool_query_order",
             "argumentBindings": {"order_id": {"source": "template", "template": "latest-{{system__user_id}}"}, "tenant": {"source": "variable", "variableName": "tenant_id"}},
             "templateBindings": {"region": {"source": "literal", "value": "cn"}},
             "resultAssignments": {"order_status": "status"}}
        ],
        "features": {"subAgents": true, "askUser": true, "todo": true, "goals": false, "loops": false, "webSearch": false, "webFetch": false, "memory": true}
    })
}

on_both!(valid_assistant_round_trips, |srv| {
    let (_, ws) = srv.workspace("A").await?;
    seed_tools(&ws).await?;
    let created = ws.create("/v1/assistants", assistant()).await?;
    assert_contains(&created, &assistant());
    assert_eq!(created["runMode"], "pipeline");
    let id = created["id"].as_str().unwrap();
    assert!(id.starts_with("asst_"));
    assert_eq!(
        ws.get(&format!("/v1/assistants/{id}"))
            .await?
            .assert_status(200),
        &created
    );
    let report = ws
        .get(&format!("/v1/assistants/{id}/compatibility"))
        .await?;
    assert_eq!(
        report.assert_status(200),
        &json!({"compatible": true, "issues": []})
    );
    assert_eq!(
        ws.get("/v1/assistants").await?.body["data"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    ws.delete(&format!("/v1/assistants/{id}"))
        .await?
        .assert_status(204);
    Ok(())
});

on_both!(invalid_assistants_name_their_field, |srv| {
    let (_, ws) = srv.workspace("A").await?;
    seed_tools(&ws).await?;
    let cases: Vec<(&str, Value, &str, &str)> = vec![
        (
            "/dynamicVariables/0/name",
            json!("system__x"),
            "reserved_name",
            "dynamicVariables[0].name",
        ),
        (
            "/dynamicVariables/1/name",
            json!("customer_name"),
            "duplicate_name",
            "dynamicVariables[1].name",
        ),
        (
            "/dynamicVariables/3/default",
            json!("high"),
            "invalid_default",
            "dynamicVariables[3].default",
        ),
        (
            "/dynamicVariables/3/type",
            json!("integer"),
            "invalid_field",
            "dynamicVariables[3].type",
        ),
        (
            "/systemPrompt",
            json!("Hi {{ghost}}"),
            "unknown_variable",
            "systemPrompt",
        ),
        (
            "/firstMessage",
            json!("{{secret__api_key}}"),
            "secret_not_allowed",
            "firstMessage",
        ),
        (
            "/llm/temperature",
            json!(5),
            "out_of_range",
            "llm.temperature",
        ),
        (
            "/llm/provider",
            json!("nope"),
            "unknown_provider",
            "llm.provider",
        ),
        (
            "/builtInTools/endConversation/messageType",
            json!("custom"),
            "missing_field",
            "builtInTools.endConversation.customMessage",
        ),
        (
            "/builtInTools/endConversation/messageType",
            json!("loud"),
            "invalid_field",
            "builtInTools.endConversation.messageType",
        ),
        (
            "/builtInTools/updateState/rules/0/variable",
            json!("ghost"),
            "unknown_variable",
            "builtInTools.updateState.rules[0].variable",
        ),
        (
            "/builtInTools/updateState/rules/0/variable",
            json!("customer_name"),
            "type_mismatch",
            "builtInTools.updateState.rules[0].expression",
        ),
        (
            "/builtInTools/updateState/rules/0/expression",
            json!({"type": "div", "left": {"type": "constant", "value": "a"}, "right": {"type": "constant", "value": 1}}),
            "type_mismatch",
            "builtInTools.updateState.rules[0].expression",
        ),
        (
            "/builtInTools/updateState/rules/0/expression",
            json!({"type": "pow"}),
            "invalid_field",
            "builtInTools.updateState.rules[0].expression.type",
        ),
        (
            "/builtInTools/unknownTool",
            json!({}),
            "invalid_field",
            "builtInTools.unknownTool",
        ),
        (
            "/toolBindings/0/toolId",
            json!("tool_nope"),
            "unknown_tool",
            "toolBindings[0].toolId",
        ),
        (
            "/toolBindings/0/argumentBindings/extra",
            json!({"source": "model"}),
            "unknown_argument",
            "toolBindings[0].argumentBindings.extra",
        ),
        (
            "/toolBindings/0/argumentBindings/tenant",
            json!(null),
            "missing_argument",
            "toolBindings[0].argumentBindings.tenant",
        ),
        (
            "/toolBindings/0/argumentBindings/tenant",
            json!({"source": "variable", "variableName": "ghost"}),
            "unknown_variable",
            "toolBindings[0].argumentBindings.tenant.variableName",
        ),
        (
            "/toolBindings/0/argumentBindings/tenant",
            json!({"source": "oracle"}),
            "invalid_field",
            "toolBindings[0].argumentBindings.tenant.source",
        ),
        (
            "/toolBindings/0/templateBindings/region",
            json!(null),
            "missing_template_input",
            "toolBindings[0].templateBindings.region",
        ),
        (
            "/toolBindings/0/resultAssignments/ghost",
            json!("status"),
            "unknown_variable",
            "toolBindings[0].resultAssignments.ghost",
        ),
        (
            "/toolBindings/1/resultAssignments",
            json!({"order_status": "ok"}),
            "assignments_without_response",
            "toolBindings[1].resultAssignments",
        ),
        (
            "/startupActions/0/argumentBindings/order_id",
            json!({"source": "model"}),
            "model_source_not_allowed",
            "startupActions[0].argumentBindings.order_id.source",
        ),
        (
            "/startupActions/0/resultAssignments/system__turn_count",
            json!("n"),
            "unknown_variable",
            "startupActions[0].resultAssignments.system__turn_count",
        ),
        (
            "/runMode",
            json!("realtime"),
            "missing_field",
            "realtimeInterfaceId",
        ),
        (
            "/realtimeInterfaceId",
            json!("rti_missing"),
            "unknown_realtime_interface",
            "realtimeInterfaceId",
        ),
        (
            "/taskBackendId",
            json!("tb_1"),
            "unknown_task_backend",
            "taskBackendId",
        ),
    ];
    for (pointer, value, code, field) in cases {
        let mut body = assistant();
        let (parent, key) = pointer.rsplit_once('/').unwrap();
        let obj = body.pointer_mut(parent).unwrap().as_object_mut().unwrap();
        if value.is_null() {
            obj.remove(key);
        } else {
            obj.insert(key.to_owned(), value.clone());
        }
        ws.post("/v1/assistants", body)
            .await?
            .assert_error(422, code, Some(field));
    }
    assert_eq!(ws.get("/v1/assistants").await?.body["data"], json!([]));
    Ok(())
});

on_both!(realtime_gating_and_cleanup, |srv| {
    let (_, ws) = srv.workspace("A").await?;
    seed_tools(&ws).await?;
    let shipped = ws
        .get("/v1/realtime-interfaces/qwen-audio-realtime")
        .await?;
    assert_eq!(
        shipped.assert_status(200)["fieldSchema"]["features"]["realtimePromptTools"],
        json!({"toolTypes": ["http", "mcp", "client"], "builtInTools": ["endConversation", "updateState", "requestHumanHandoff"]})
    );
    let stepfun = ws.get("/v1/realtime-interfaces/stepfun-realtime").await?;
    assert_eq!(
        stepfun.body["fieldSchema"]["features"]["realtimePromptTools"],
        json!({"toolTypes": [], "builtInTools": []})
    );
    ws.put(
        "/v1/realtime-interfaces/qwen-audio-realtime",
        shipped.body.clone(),
    )
    .await?
    .assert_error(403, "read_only", None);

    // Saving a realtime assistant checks the interface's declaration.
    let mut a = assistant();
    a["runMode"] = json!("realtime");
    a["realtimeInterfaceId"] = json!("qwen-audio-realtime");
    ws.post("/v1/assistants", a.clone()).await?.assert_error(
        422,
        "realtime_incompatible",
        Some("builtInTools.skipTurn"),
    );
    a["realtimeInterfaceId"] = json!("stepfun-realtime");
    ws.post("/v1/assistants", a.clone()).await?.assert_error(
        422,
        "realtime_incompatible",
        Some("toolBindings[0]"),
    );

    // A pipeline assistant saved first: switching it to realtime is refused, not silently trimmed.
    let saved = ws.create("/v1/assistants", assistant()).await?;
    let id = saved["id"].as_str().unwrap().to_owned();
    ws.put(&format!("/v1/assistants/{id}"), a.clone())
        .await?
        .assert_error(422, "realtime_incompatible", None);
    assert_eq!(ws.get(&format!("/v1/assistants/{id}")).await?.body, saved);

    // An operator interface that supports everything realtime may use.
    ws.post("/v1/realtime-interfaces", json!({"name": "x", "fieldSchema": {"features": {"realtimePromptTools": {"builtInTools": ["skipTurn"]}}}}))
        .await?
        .assert_error(422, "pipeline_only", Some("fieldSchema.features.realtimePromptTools.builtInTools[0]"));
    let full = json!({"id": "acme-rt", "name": "Acme Realtime", "provider": "acme",
        "fieldSchema": {"voice": {"type": "string"}, "features": {"realtimePromptTools": {"toolTypes": ["http", "client"], "builtInTools": ["endConversation", "updateState", "requestHumanHandoff"]}}}});
    let iface = ws.create("/v1/realtime-interfaces", full.clone()).await?;
    assert_contains(&iface, &full);
    assert_eq!(iface["shipped"], false);
    a["realtimeInterfaceId"] = json!("acme-rt");
    a["builtInTools"]
        .as_object_mut()
        .unwrap()
        .remove("skipTurn");
    let rt = ws.put(&format!("/v1/assistants/{id}"), a.clone()).await?;
    rt.assert_status(200);
    ws.delete("/v1/realtime-interfaces/acme-rt")
        .await?
        .assert_error(409, "in_use", None);

    // The interface stops declaring client tools and updateState: the
    // assistant keeps its config and reports exactly those items.
    let mut reduced = full.clone();
    reduced["fieldSchema"]["features"]["realtimePromptTools"] =
        json!({"toolTypes": ["http"], "builtInTools": ["endConversation", "requestHumanHandoff"]});
    ws.put("/v1/realtime-interfaces/acme-rt", reduced)
        .await?
        .assert_status(200);
    assert_eq!(
        ws.get(&format!("/v1/assistants/{id}")).await?.body,
        rt.body,
        "nothing removed silently"
    );
    let report = ws
        .get(&format!("/v1/assistants/{id}/compatibility"))
        .await?;
    let report = report.assert_status(200).clone();
    assert_eq!(report["compatible"], false);
    let paths: Vec<&str> = report["issues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["toolBindings[1]", "builtInTools.updateState"]);
    assert_eq!(report["issues"][0]["code"], "tool_type_unsupported");

    let cleanup = format!("/v1/assistants/{id}/compatibility/cleanup");
    ws.post(&cleanup, json!({"expectedPaths": ["toolBindings[1]"]}))
        .await?
        .assert_error(409, "compatibility_changed", None);
    let done = ws.post(&cleanup, json!({"expectedPaths": paths})).await?;
    let done = done.assert_status(200).clone();
    assert_eq!(done["removed"], report["issues"]);
    let after = &done["assistant"];
    assert_eq!(after["toolBindings"], json!([a["toolBindings"][0]]));
    assert!(after["builtInTools"].get("updateState").is_none());
    assert_eq!(
        after["builtInTools"]["endConversation"],
        a["builtInTools"]["endConversation"]
    );
    assert_eq!(
        after["startupActions"], a["startupActions"],
        "startup actions are not prompt tools"
    );
    assert_eq!(after["dynamicVariables"], a["dynamicVariables"]);
    assert_eq!(
        ws.get(&format!("/v1/assistants/{id}/compatibility"))
            .await?
            .body,
        json!({"compatible": true, "issues": []})
    );
    // A second cleanup has nothing to remove.
    assert_eq!(
        ws.post(&cleanup, json!({})).await?.assert_status(200)["removed"],
        json!([])
    );
    Ok(())
});
