//! Tool resources (R-TR-1..5) through HTTP.

use serde_json::{Value, json};

use crate::harness::{assert_contains, on_both};

fn http_tool() -> Value {
    json!({
        "id": "tool_query_order",
        "name": "query_order",
        "description": "Look up an order",
        "type": "http",
        "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}, "tenant": {"type": "string"}}, "required": ["order_id"]},
        "templateInputs": [{"name": "region", "description": "Data center", "required": true}],
        "http": {
            "method": "POST",
            "url": "https://api.example.com/{{input__region}}/orders/{{order_id}}",
            "headers": {"Authorization": "Bearer {{secret__api_key}}", "X-Tenant": "{{tenant}}"},
            "body": {"order": "{{order_id}}", "meta": {"source": "rtc"}},
            "timeoutMs": 5000
        },
        "mockResponse": {"status": "shipped"}
    })
}

on_both!(valid_tools_round_trip, |srv| {
    let (_, ws) = srv.workspace("A").await?;
    ws.put(
        "/v1/secrets/secret__api_key",
        json!({"value": "k-secret-value"}),
    )
    .await?
    .assert_status(201);
    let created = ws.create("/v1/tools", http_tool()).await?;
    assert_contains(&created, &http_tool());
    let read = ws.get("/v1/tools/tool_query_order").await?;
    assert_eq!(read.assert_status(200), &created);
    // Sending back what was read changes nothing but `updatedAt`.
    let again = ws
        .put("/v1/tools/tool_query_order", created.clone())
        .await?;
    let mut expected = created.clone();
    expected["updatedAt"] = again.body["updatedAt"].clone();
    assert_eq!(again.assert_status(200), &expected);
    ws.post("/v1/tools", http_tool())
        .await?
        .assert_error(409, "already_exists", Some("id"));

    let client = ws.create("/v1/tools", json!({"name": "set_photo_button_visible", "type": "client", "client": {"functionName": "setPhotoButtonVisible", "waitForResponse": false}})).await?;
    assert!(client["id"].as_str().unwrap().starts_with("tool_"));
    assert_eq!(
        client["parameters"],
        json!({"type": "object", "properties": {}})
    );
    assert_eq!(
        client["client"],
        json!({"functionName": "setPhotoButtonVisible", "waitForResponse": false, "timeoutMs": 30000})
    );
    let list = ws.get("/v1/tools").await?;
    assert_eq!(list.assert_status(200)["data"].as_array().unwrap().len(), 2);
    ws.delete(&format!("/v1/tools/{}", client["id"].as_str().unwrap()))
        .await?
        .assert_status(204);
    ws.get(&format!("/v1/tools/{}", client["id"].as_str().unwrap()))
        .await?
        .assert_error(404, "not_found", None);
    Ok(())
});

on_both!(invalid_tools_name_their_field, |srv| {
    let (_, ws) = srv.workspace("A").await?;
    ws.put(
        "/v1/secrets/secret__api_key",
        json!({"value": "k-secret-value"}),
    )
    .await?
    .assert_status(201);
    let cases: Vec<(&str, Value, &str, &str)> = vec![
        ("/name", json!("has space"), "invalid_name", "name"),
        ("/name", json!("askUser"), "reserved_name", "name"),
        ("/name", json!("createLoop"), "reserved_name", "name"),
        ("/name", json!("searchMemory"), "reserved_name", "name"),
        ("/name", json!("endConversation"), "reserved_name", "name"),
        ("/name", json!("delegate_task"), "reserved_name", "name"),
        ("/type", json!("grpc"), "invalid_field", "type"),
        (
            "/parameters",
            json!({"type": "object", "properties": {"a": {"type": 7}}}),
            "invalid_schema",
            "parameters",
        ),
        (
            "/parameters",
            json!({"type": "array"}),
            "invalid_schema",
            "parameters",
        ),
        (
            "/http/url",
            json!("https://x/{{secret__api_key}}/{{input__region}}"),
            "secret_outside_headers",
            "http.url",
        ),
        (
            "/http/body",
            json!({"k": "{{secret__api_key}}", "r": "{{input__region}}"}),
            "secret_outside_headers",
            "http.body.k",
        ),
        (
            "/http/url",
            json!("https://x/{{order_id}}"),
            "unused_template_input",
            "templateInputs[0].name",
        ),
        (
            "/http/url",
            json!("https://x/{{input__zone}}"),
            "unknown_template_input",
            "http.url",
        ),
        (
            "/http/url",
            json!("https://x/{{input__region}}/{{nope}}"),
            "unknown_parameter",
            "http.url",
        ),
        (
            "/http/url",
            json!("not a url {{input__region}}"),
            "invalid_url",
            "http.url",
        ),
        (
            "/http/headers",
            json!({"Authorization": "{{secret__missing}}"}),
            "unknown_secret",
            "http.headers.Authorization",
        ),
        (
            "/http/method",
            json!("FETCH"),
            "invalid_field",
            "http.method",
        ),
        (
            "/http/timeoutMs",
            json!(0),
            "out_of_range",
            "http.timeoutMs",
        ),
        (
            "/http/timeoutMs",
            json!(-5),
            "invalid_field",
            "http.timeoutMs",
        ),
        (
            "/templateInputs",
            json!([{"name": "region"}, {"name": "region"}]),
            "duplicate_name",
            "templateInputs[1].name",
        ),
        (
            "/client",
            json!({"functionName": "f"}),
            "unexpected_field",
            "client",
        ),
        ("/http/extra", json!(1), "invalid_field", "http.extra"),
    ];
    for (pointer, value, code, field) in cases {
        let mut body = http_tool();
        body["id"] = json!(null);
        let (parent, key) = pointer.rsplit_once('/').unwrap();
        body.pointer_mut(if parent.is_empty() { "" } else { parent })
            .unwrap()
            .as_object_mut()
            .unwrap()
            .insert(key.to_owned(), value);
        let r = ws.post("/v1/tools", body).await?;
        r.assert_error(422, code, Some(field));
    }
    let missing = json!({"name": "x", "type": "http"});
    ws.post("/v1/tools", missing)
        .await?
        .assert_error(422, "missing_field", Some("http"));
    let client = json!({"name": "c", "type": "client", "client": {"functionName": "f", "timeoutMs": 700000}});
    ws.post("/v1/tools", client)
        .await?
        .assert_error(422, "out_of_range", Some("client.timeoutMs"));
    let client = json!({"name": "c", "type": "client", "client": {"functionName": ""}});
    ws.post("/v1/tools", client).await?.assert_error(
        422,
        "invalid_name",
        Some("client.functionName"),
    );
    ws.post(
        "/v1/tools",
        json!({"id": "bad id", "name": "c", "type": "client", "client": {"functionName": "f"}}),
    )
    .await?
    .assert_error(422, "invalid_id", Some("id"));
    assert_eq!(
        ws.get("/v1/tools").await?.body["data"],
        json!([]),
        "nothing invalid was stored"
    );
    Ok(())
});

on_both!(tools_in_use_are_protected, |srv| {
    let (_, ws) = srv.workspace("A").await?;
    let tool = json!({"id": "lookup", "name": "lookup", "type": "http",
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
        "http": {"method": "GET", "url": "https://x/?q={{q}}"}});
    ws.create("/v1/tools", tool.clone()).await?;
    let asst = ws
        .create("/v1/assistants", json!({"name": "A", "toolBindings": [{"toolId": "lookup", "argumentBindings": {"q": {"source": "model"}}}]}))
        .await?;
    ws.delete("/v1/tools/lookup")
        .await?
        .assert_error(409, "in_use", None);
    // A change that would break the binding is refused and nothing changes.
    let mut breaking = tool.clone();
    breaking["parameters"] = json!({"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]});
    breaking["http"]["url"] = json!("https://x/?q={{query}}");
    let r = ws.put("/v1/tools/lookup", breaking).await?;
    r.assert_error(409, "breaks_assistant", None);
    assert!(r.text.contains(asst["id"].as_str().unwrap()));
    assert_eq!(
        ws.get("/v1/tools/lookup").await?.body["parameters"],
        tool["parameters"]
    );
    // A compatible change is accepted.
    let mut compatible = tool.clone();
    compatible["description"] = json!("Search");
    ws.put("/v1/tools/lookup", compatible)
        .await?
        .assert_status(200);
    ws.delete(&format!("/v1/assistants/{}", asst["id"].as_str().unwrap()))
        .await?
        .assert_status(204);
    ws.delete("/v1/tools/lookup").await?.assert_status(204);
    Ok(())
});
