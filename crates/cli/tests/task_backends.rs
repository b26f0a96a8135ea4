//! Task backend resources (R-TK-1, R-TK-5; design `task-backends.md` §0):
//! CRUD of `reasoner` and `opencode` backends, every save-time rule through
//! the API, an assistant's `taskBackendId`, "in use" and "would break"
//! conflicts, the admin-only `opencode.command`, and passwords that stay
//! secret references.

use serde_json::{Value, json};

use crate::harness::{Api, assert_contains, on_both};

const PASSWORD: &str = "opencode-pw-value-0123";

async fn seed(ws: &Api) -> anyhow::Result<()> {
    ws.put(
        "/v1/secrets/secret__opencode_pw",
        json!({"value": PASSWORD}),
    )
    .await?
    .assert_status(201);
    ws.create("/v1/tools", json!({
        "id": "tool_search", "name": "search", "type": "http",
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}, "tenant": {"type": "string"}}, "required": ["q"]},
        "http": {"method": "GET", "url": "https://api.example.com/search?q={{q}}&t={{tenant}}"}
    }))
    .await?;
    ws.create(
        "/v1/tools",
        json!({"id": "tool_notify", "name": "notify", "type": "client", "client": {"functionName": "notify"}}),
    )
    .await?;
    Ok(())
}

fn reasoner() -> Value {
    json!({
        "name": "Research",
        "description": "Looks things up",
        "type": "reasoner",
        "reasoner": {
            "llm": {"model": "gpt-4o-mini"},
            "systemPrompt": "You research carefully.",
            "maxSteps": 12,
            "toolBindings": [{
                "toolId": "tool_search",
                "argumentBindings": {"q": {"source": "model"}, "tenant": {"source": "variable", "variableName": "tenant_id"}}
            }]
        },
        "timeoutSeconds": 600,
        "maxConcurrentTasks": 2
    })
}

fn opencode() -> Value {
    json!({
        "name": "Coder",
        "type": "opencode",
        "opencode": {
            "baseUrl": "http://127.0.0.1:4096",
            "password": "{{secret__opencode_pw}}",
            "model": {"providerID": "mock", "modelID": "tools-0"},
            "directory": "/srv/work",
            "agent": "build"
        },
        "timeoutSeconds": 1800
    })
}

fn started() -> Value {
    json!({
        "name": "Local coder",
        "type": "opencode",
        "opencode": {
            "command": "opencode",
            "config": {"model": "mock/tools-0"},
            "model": {"providerID": "mock", "modelID": "tools-0"}
        }
    })
}

/// `base` with the value at a JSON pointer set (`null` removes it).
fn with(mut base: Value, pointer: &str, value: Value) -> Value {
    let (parent, key) = pointer.rsplit_once('/').unwrap();
    let obj = base.pointer_mut(parent).unwrap().as_object_mut().unwrap();
    if value.is_null() {
        obj.remove(key);
    } else {
        obj.insert(key.to_owned(), value);
    }
    base
}

on_both!(reasoner_and_opencode_backends_round_trip, |srv| {
    let (_, ws) = srv.workspace("A").await?;
    seed(&ws).await?;
    let r = ws.create("/v1/task-backends", reasoner()).await?;
    assert_contains(&r, &reasoner());
    let rid = r["id"].as_str().unwrap().to_owned();
    assert!(rid.starts_with("tb_"), "{rid}");
    assert!(r["createdAt"].is_string() && r["updatedAt"].is_string());
    let o = ws
        .create(
            "/v1/task-backends",
            with(opencode(), "/id", json!("tb_code")),
        )
        .await?;
    assert_contains(&o, &opencode());
    assert_eq!(o["id"], "tb_code");
    assert_eq!(o["maxConcurrentTasks"], 4, "the default: {o}");
    // Defaults of a minimal reasoner.
    let minimal = ws
        .create(
            "/v1/task-backends",
            json!({"name": "Minimal", "type": "reasoner", "reasoner": {}}),
        )
        .await?;
    assert_eq!(minimal["timeoutSeconds"], 900);
    assert_eq!(minimal["maxConcurrentTasks"], 4);
    assert_eq!(minimal["reasoner"]["maxSteps"], 40);

    let got = ws.get(&format!("/v1/task-backends/{rid}")).await?;
    assert_eq!(got.assert_status(200), &r);
    let list = ws.get("/v1/task-backends").await?;
    let names: Vec<&str> = list.assert_status(200)["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["name"].as_str())
        .collect();
    // Oldest first; backends created in the same millisecond go by id.
    let mut expected = [&r, &o, &minimal];
    expected.sort_by_key(|b| {
        (
            b["createdAt"].as_str().unwrap().to_owned(),
            b["id"].as_str().unwrap().to_owned(),
        )
    });
    let expected: Vec<&str> = expected
        .iter()
        .map(|b| b["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, expected);
    // A backend is not a tool.
    let tools = ws.get("/v1/tools").await?;
    assert!(!tools.text.contains("tb_code") && !tools.text.contains(&rid));
    // The password shows as the reference it is, never as the secret.
    for path in ["/v1/task-backends", "/v1/task-backends/tb_code"] {
        let r = ws.get(path).await?;
        assert!(!r.text.contains(PASSWORD), "{path}: {}", r.text);
        assert!(r.text.contains("{{secret__opencode_pw}}"), "{}", r.text);
    }

    let changed = with(reasoner(), "/reasoner/maxSteps", json!(30));
    let put = ws
        .put(&format!("/v1/task-backends/{rid}"), changed.clone())
        .await?;
    assert_contains(put.assert_status(200), &changed);
    assert_eq!(put.body["id"], rid.as_str());
    assert_eq!(put.body["createdAt"], r["createdAt"]);
    let put = ws
        .put(
            "/v1/task-backends/tb_code",
            with(opencode(), "/name", json!("Coder 2")),
        )
        .await?;
    assert_eq!(put.assert_status(200)["name"], "Coder 2");
    ws.put("/v1/task-backends/tb_nope", reasoner())
        .await?
        .assert_error(404, "not_found", None);
    ws.post(
        "/v1/task-backends",
        with(reasoner(), "/id", json!("tb_code")),
    )
    .await?
    .assert_error(409, "already_exists", Some("id"));

    for id in [rid.as_str(), "tb_code"] {
        let path = format!("/v1/task-backends/{id}");
        ws.delete(&path).await?.assert_status(204);
        ws.get(&path).await?.assert_error(404, "not_found", None);
        ws.delete(&path).await?.assert_error(404, "not_found", None);
    }
    Ok(())
});

on_both!(save_time_rules_answer_their_code_and_field, |srv| {
    let (ws_id, ws) = srv.workspace("A").await?;
    seed(&ws).await?;
    let (r, o, c) = (reasoner(), opencode(), started());
    let cases: Vec<(&Value, &str, Value, &str, &str)> = vec![
        (&r, "/name", json!(" "), "invalid_name", "name"),
        (&r, "/reasoner", Value::Null, "missing_field", "reasoner"),
        (
            &r,
            "/opencode",
            o["opencode"].clone(),
            "unexpected_field",
            "opencode",
        ),
        (&o, "/opencode", Value::Null, "missing_field", "opencode"),
        (
            &r,
            "/timeoutSeconds",
            json!(0),
            "out_of_range",
            "timeoutSeconds",
        ),
        (
            &o,
            "/timeoutSeconds",
            json!(86_401),
            "out_of_range",
            "timeoutSeconds",
        ),
        (
            &r,
            "/maxConcurrentTasks",
            json!(65),
            "out_of_range",
            "maxConcurrentTasks",
        ),
        (
            &r,
            "/reasoner/maxSteps",
            json!(201),
            "out_of_range",
            "reasoner.maxSteps",
        ),
        (
            &r,
            "/reasoner/maxSteps",
            json!(0),
            "out_of_range",
            "reasoner.maxSteps",
        ),
        (
            &r,
            "/reasoner/llm",
            json!({"provider": "nobody"}),
            "unknown_provider",
            "reasoner.llm.provider",
        ),
        (
            &r,
            "/reasoner/systemPrompt",
            json!("x".repeat(200_001)),
            "too_long",
            "reasoner.systemPrompt",
        ),
        (
            &r,
            "/reasoner/toolBindings",
            json!([{"toolId": "tool_search", "argumentBindings": {"q": {"source": "model"}}}, {"toolId": "tool_missing"}]),
            "unknown_tool",
            "reasoner.toolBindings[1].toolId",
        ),
        (
            &r,
            "/reasoner/toolBindings",
            json!([{"toolId": "tool_search", "argumentBindings": {"q": {"source": "model"}}}, {"toolId": "tool_notify"}]),
            "tool_type_unsupported",
            "reasoner.toolBindings[1].toolId",
        ),
        (
            &r,
            "/reasoner/toolBindings",
            json!([{"toolId": "tool_search", "argumentBindings": {"q": {"source": "model"}}, "resultAssignments": {"status": "status"}}]),
            "result_assignments_not_allowed",
            "reasoner.toolBindings[0].resultAssignments",
        ),
        (
            &r,
            "/reasoner/toolBindings",
            json!([{"toolId": "tool_search"}]),
            "missing_argument",
            "reasoner.toolBindings[0].argumentBindings.q",
        ),
        (
            &r,
            "/reasoner/toolBindings",
            json!([{"toolId": "tool_search", "argumentBindings": {"q": {"source": "variable", "variableName": "not-a-name"}}}]),
            "invalid_name",
            "reasoner.toolBindings[0].argumentBindings.q.variableName",
        ),
        (
            &r,
            "/reasoner/toolBindings",
            json!([{"toolId": "tool_search", "argumentBindings": {"q": {"source": "model"}}}, {"toolId": "tool_search", "argumentBindings": {"q": {"source": "model"}}}]),
            "duplicate_tool_name",
            "reasoner.toolBindings[1].toolId",
        ),
        (
            &o,
            "/opencode/baseUrl",
            json!("not a url"),
            "invalid_url",
            "opencode.baseUrl",
        ),
        (
            &o,
            "/opencode/baseUrl",
            Value::Null,
            "missing_field",
            "opencode.baseUrl",
        ),
        (
            &o,
            "/opencode/password",
            json!("plain-password"),
            "invalid_placeholder",
            "opencode.password",
        ),
        (
            &o,
            "/opencode/password",
            json!("{{secret__missing}}"),
            "unknown_secret",
            "opencode.password",
        ),
        (
            &o,
            "/opencode/config",
            json!({"a": 1}),
            "unexpected_field",
            "opencode.config",
        ),
        (
            &o,
            "/opencode/directory",
            json!("work"),
            "invalid_value",
            "opencode.directory",
        ),
        (
            &o,
            "/opencode/model",
            json!({"providerID": "", "modelID": "m"}),
            "invalid_name",
            "opencode.model.providerID",
        ),
        (
            &o,
            "/opencode/model",
            json!({"providerID": "p", "modelID": " "}),
            "invalid_name",
            "opencode.model.modelID",
        ),
        (
            &o,
            "/opencode/agent",
            json!(""),
            "invalid_name",
            "opencode.agent",
        ),
    ];
    for (base, pointer, value, code, field) in cases {
        ws.post("/v1/task-backends", with(base.clone(), pointer, value))
            .await?
            .assert_error(422, code, Some(field));
    }
    // Rules of a started server, with the admin token.
    let admin = srv.admin_in(&ws_id);
    let admin_cases: Vec<(&str, Value, &str, &str)> = vec![
        (
            "/opencode/command",
            json!(" "),
            "invalid_name",
            "opencode.command",
        ),
        (
            "/opencode/baseUrl",
            json!("http://127.0.0.1:4096"),
            "unexpected_field",
            "opencode.command",
        ),
        (
            "/opencode/password",
            json!("{{secret__opencode_pw}}"),
            "unexpected_field",
            "opencode.password",
        ),
        (
            "/opencode/config",
            json!({"k": "{{secret__missing}}"}),
            "unknown_secret",
            "opencode.config.k",
        ),
        (
            "/opencode/config",
            json!([1]),
            "invalid_field",
            "opencode.config",
        ),
    ];
    for (pointer, value, code, field) in admin_cases {
        admin
            .post("/v1/task-backends", with(c.clone(), pointer, value))
            .await?
            .assert_error(422, code, Some(field));
    }
    // Unknown fields and wrong types are shapes the document refuses.
    ws.post("/v1/task-backends", with(r.clone(), "/extra", json!(1)))
        .await?
        .assert_error(422, "invalid_field", None);
    ws.post(
        "/v1/task-backends",
        with(r.clone(), "/type", json!("shell")),
    )
    .await?
    .assert_error(422, "invalid_field", Some("type"));
    // A refused password is never echoed.
    let refused = ws
        .post(
            "/v1/task-backends",
            with(o.clone(), "/opencode/password", json!("hunter2-typed-in")),
        )
        .await?;
    assert!(!refused.text.contains("hunter2"), "{}", refused.text);
    assert_eq!(ws.get("/v1/task-backends").await?.body["data"], json!([]));
    Ok(())
});

on_both!(assistants_name_a_backend_and_keep_it_in_use, |srv| {
    let (_, ws) = srv.workspace("A").await?;
    seed(&ws).await?;
    ws.create(
        "/v1/task-backends",
        with(reasoner(), "/id", json!("tb_research")),
    )
    .await?;
    let assistant = json!({
        "id": "asst_1", "name": "Support", "taskBackendId": "tb_research",
        "dynamicVariables": [{"name": "tenant_id", "type": "string"}]
    });
    ws.post(
        "/v1/assistants",
        with(assistant.clone(), "/taskBackendId", json!("tb_missing")),
    )
    .await?
    .assert_error(422, "unknown_task_backend", Some("taskBackendId"));
    let realtime = json!({"name": "Voice", "runMode": "realtime",
        "realtimeInterfaceId": "qwen-audio-realtime", "builtInTools": {}});
    ws.create("/v1/assistants", realtime.clone()).await?;
    ws.post(
        "/v1/assistants",
        with(realtime, "/taskBackendId", json!("tb_research")),
    )
    .await?
    .assert_error(422, "task_backend_not_supported", Some("taskBackendId"));
    // The backend's bindings read `tenant_id`: the assistant declares it.
    ws.post(
        "/v1/assistants",
        with(assistant.clone(), "/dynamicVariables", json!([])),
    )
    .await?
    .assert_error(422, "unknown_variable", Some("taskBackendId"));
    let created = ws.create("/v1/assistants", assistant.clone()).await?;
    assert_eq!(created["taskBackendId"], "tb_research");

    // In use: the backend, and the tool and the secret it binds.
    ws.delete("/v1/task-backends/tb_research")
        .await?
        .assert_error(409, "in_use", None);
    ws.delete("/v1/tools/tool_search")
        .await?
        .assert_error(409, "in_use", None);
    ws.create(
        "/v1/task-backends",
        with(opencode(), "/id", json!("tb_code")),
    )
    .await?;
    ws.delete("/v1/secrets/secret__opencode_pw")
        .await?
        .assert_error(409, "in_use", None);

    // A change that would break the assistant, or the backend, is refused.
    let reads_more = with(
        reasoner(),
        "/reasoner/toolBindings/0/argumentBindings/q",
        json!({"source": "variable", "variableName": "query"}),
    );
    ws.put("/v1/task-backends/tb_research", reads_more)
        .await?
        .assert_error(409, "breaks_assistant", None);
    let as_client = json!({"name": "search", "type": "client", "parameters": {"type": "object", "properties": {"q": {"type": "string"}, "tenant": {"type": "string"}}}, "client": {"functionName": "search"}});
    ws.put("/v1/tools/tool_search", as_client)
        .await?
        .assert_error(409, "breaks_task_backend", None);
    // The assistant may switch to another backend; then the first one is free.
    ws.put(
        "/v1/assistants/asst_1",
        with(assistant, "/taskBackendId", json!("tb_code")),
    )
    .await?
    .assert_status(200);
    ws.delete("/v1/task-backends/tb_code")
        .await?
        .assert_error(409, "in_use", None);
    ws.delete("/v1/task-backends/tb_research")
        .await?
        .assert_status(204);
    ws.delete("/v1/tools/tool_search").await?.assert_status(204);
    Ok(())
});

on_both!(a_started_opencode_server_is_the_admins, |srv| {
    let (ws_id, ws) = srv.workspace("A").await?;
    seed(&ws).await?;
    let admin = srv.admin_in(&ws_id);
    ws.post("/v1/task-backends", started()).await?.assert_error(
        403,
        "stdio_requires_admin",
        Some("opencode.command"),
    );
    let created = admin.create("/v1/task-backends", started()).await?;
    assert_contains(&created, &started());
    let path = format!("/v1/task-backends/{}", created["id"].as_str().unwrap());
    // The workspace key sees it, but may neither change nor delete it.
    ws.get(&path).await?.assert_status(200);
    ws.put(&path, with(started(), "/name", json!("x")))
        .await?
        .assert_error(403, "stdio_requires_admin", Some("opencode.command"));
    ws.put(&path, opencode()).await?.assert_error(
        403,
        "stdio_requires_admin",
        Some("opencode.command"),
    );
    ws.delete(&path)
        .await?
        .assert_error(403, "stdio_requires_admin", Some("opencode.command"));
    // Nor turn a backend of its own into one.
    let own = ws.create("/v1/task-backends", opencode()).await?;
    let own_path = format!("/v1/task-backends/{}", own["id"].as_str().unwrap());
    ws.put(&own_path, started()).await?.assert_error(
        403,
        "stdio_requires_admin",
        Some("opencode.command"),
    );
    admin.put(&own_path, started()).await?.assert_status(200);
    admin.put(&path, opencode()).await?.assert_status(200);
    ws.delete(&path).await?.assert_status(204);
    admin.delete(&own_path).await?.assert_status(204);
    Ok(())
});
