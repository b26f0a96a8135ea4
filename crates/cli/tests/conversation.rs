//! Conversations end to end: the real binary, the scripted mock LLM, real
//! HTTP and MCP tools, SSE and the WebSocket (R-RN, R-API-5/6, R-TB, R-BI).

use std::collections::HashMap;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use rtc_testkit::{Engine, MockLlm, MockReply};
use serde_json::{Value, json};

use crate::harness::{Api, Server, start};

/// A server whose default provider is `mock`, allowed to reach loopback tools.
pub async fn server(engine: Engine, mock: &MockLlm) -> anyhow::Result<Option<Server>> {
    let env = HashMap::from([
        ("RTC_LLM_BASE_URL".to_owned(), mock.base_url.clone()),
        ("RTC_LLM_MODEL".to_owned(), "mock-model".to_owned()),
        ("RTC_ALLOW_PRIVATE_NETWORK".to_owned(), "1".to_owned()),
    ]);
    start(engine, env).await
}

/// Read SSE events of a session from `after` until `done` says stop.
pub async fn events_until(
    srv: &Server,
    token: &str,
    session: &str,
    after: i64,
    done: impl Fn(&Value) -> bool,
) -> anyhow::Result<Vec<Value>> {
    let url = format!(
        "{}/v1/sessions/{session}/events?after={after}&token={token}",
        srv.process.base_url
    );
    read_events(srv.client.get(url), Duration::from_secs(20), done).await
}

/// Send an SSE request and read its events until `done` says stop, for at
/// most `patience`.
pub async fn read_events(
    request: reqwest::RequestBuilder,
    patience: Duration,
    done: impl Fn(&Value) -> bool,
) -> anyhow::Result<Vec<Value>> {
    let deadline = tokio::time::Instant::now() + patience;
    let resp = tokio::time::timeout_at(deadline, request.send())
        .await
        .map_err(|_| anyhow::anyhow!("the event stream did not answer"))??;
    anyhow::ensure!(resp.status().is_success(), "SSE answered {}", resp.status());
    let mut body = resp.bytes_stream();
    let mut buf = String::new();
    let mut out = Vec::new();
    loop {
        let chunk = tokio::time::timeout_at(deadline, body.next())
            .await
            .map_err(|_| anyhow::anyhow!("timed out; events so far: {out:#?}"))?;
        let Some(chunk) = chunk else {
            anyhow::bail!("stream ended; events so far: {out:#?}")
        };
        buf.push_str(&String::from_utf8_lossy(&chunk?));
        while let Some(end) = buf.find("\n\n") {
            let block: String = buf.drain(..end + 2).collect();
            for line in block.lines() {
                if let Some(data) = line.strip_prefix("data:") {
                    let ev: Value = serde_json::from_str(data.trim())?;
                    let stop = done(&ev);
                    out.push(ev);
                    if stop {
                        return Ok(out);
                    }
                }
            }
        }
    }
}

pub fn kinds(events: &[Value]) -> Vec<&str> {
    events.iter().filter_map(|e| e["type"].as_str()).collect()
}

pub fn turn_done(ev: &Value) -> bool {
    ev["type"] == "turn.completed"
}

pub async fn assistant(ws: &Api, body: Value) -> anyhow::Result<String> {
    Ok(ws.create("/v1/assistants", body).await?["id"]
        .as_str()
        .unwrap()
        .to_owned())
}

pub async fn open(ws: &Api, body: Value) -> anyhow::Result<(String, String)> {
    let s = ws.create("/v1/sessions", body).await?;
    Ok((
        s["id"].as_str().unwrap().to_owned(),
        s["clientToken"].as_str().unwrap().to_owned(),
    ))
}

async fn chat_basics(engine: Engine) -> anyhow::Result<()> {
    let mock = MockLlm::start(vec![MockReply::text(
        "Hello Ann, your order is on its way.",
    )])
    .await?;
    let Some(srv) = server(engine, &mock).await? else {
        return Ok(());
    };
    let (_, ws) = srv.workspace("A").await?;
    let id = assistant(&ws, json!({
        "name": "Support", "systemPrompt": "You help {{customer}} (turn {{system__turn_count}}).", "firstMessage": "Hi {{customer}}!",
        "dynamicVariables": [{"name": "customer", "type": "string", "default": "there"}]
    })).await?;
    ws.post(
        "/v1/sessions",
        json!({"assistantId": id, "dynamicVariables": {"ghost": 1}}),
    )
    .await?
    .assert_error(422, "unknown_variable", Some("dynamicVariables.ghost"));
    ws.post(
        "/v1/sessions",
        json!({"assistantId": id, "dynamicVariables": {"customer": 5}}),
    )
    .await?
    .assert_error(422, "invalid_value", Some("dynamicVariables.customer"));
    ws.post("/v1/sessions", json!({"assistantId": "asst_nope"}))
        .await?
        .assert_error(422, "unknown_assistant", Some("assistantId"));
    let created = ws
        .create(
            "/v1/sessions",
            json!({"assistantId": id, "userId": "u-1", "dynamicVariables": {"customer": "Ann"}}),
        )
        .await?;
    let (sid, token) = (
        created["id"].as_str().unwrap(),
        created["clientToken"].as_str().unwrap(),
    );
    assert_eq!(created["status"], "active");
    assert_eq!(created["rootSessionId"], sid);
    let history = ws.get(&format!("/v1/sessions/{sid}/messages")).await?;
    assert_eq!(history.assert_status(200)["data"][0]["content"], "Hi Ann!");
    ws.post(
        &format!("/v1/sessions/{sid}/messages"),
        json!({"text": "Where is my order?"}),
    )
    .await?
    .assert_status(202);
    let events = events_until(&srv, token, sid, 0, turn_done).await?;
    let k = kinds(&events);
    for expected in [
        "session.started",
        "message.completed",
        "turn.started",
        "state.updated",
        "message.delta",
        "turn.completed",
    ] {
        assert!(k.contains(&expected), "{expected} missing from {k:?}");
    }
    let seqs: Vec<i64> = events.iter().map(|e| e["seq"].as_i64().unwrap()).collect();
    assert!(
        seqs.windows(2).all(|w| w[1] == w[0] + 1),
        "seq increases by one: {seqs:?}"
    );
    assert!(
        events
            .iter()
            .all(|e| e["sessionId"] == sid && e["timestamp"].is_string())
    );
    let history = ws.get(&format!("/v1/sessions/{sid}/messages")).await?.body;
    let roles: Vec<&str> = history["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["assistant", "user", "assistant"]);
    assert_eq!(
        history["data"][2]["content"],
        "Hello Ann, your order is on its way."
    );
    let sent = &mock.requests()[0];
    assert_eq!(
        sent["messages"][0]["content"], "You help Ann (turn 1).",
        "prompt rendered with current variables"
    );
    assert_eq!(
        sent["messages"].as_array().unwrap().last().unwrap()["content"],
        "Where is my order?"
    );
    // Resume: only events after a given seq.
    let later = events_until(&srv, token, sid, seqs[seqs.len() - 2], turn_done).await?;
    assert_eq!(later.len(), 1);
    // The client token opens this session only.
    let (other, _) = open(&ws, json!({"assistantId": id})).await?;
    let mut client = ws.clone();
    client.token = Some(token.to_owned());
    client
        .get(&format!("/v1/sessions/{sid}"))
        .await?
        .assert_status(200);
    client
        .get(&format!("/v1/sessions/{other}"))
        .await?
        .assert_error(401, "unauthorized", None);
    client
        .get("/v1/tools")
        .await?
        .assert_error(401, "unauthorized", None);
    let state = ws.get(&format!("/v1/sessions/{sid}/state")).await?;
    assert_eq!(state.body["variables"]["customer"], "Ann");
    assert_eq!(state.body["variables"]["system__user_id"], "u-1");
    Ok(())
}

#[tokio::test]
async fn chat_basics_sqlite() -> anyhow::Result<()> {
    chat_basics(Engine::Sqlite).await
}

#[tokio::test]
async fn chat_basics_postgres() -> anyhow::Result<()> {
    chat_basics(Engine::Postgres).await
}

/// A local HTTP service that records what it receives.
async fn order_service() -> anyhow::Result<(String, std::sync::Arc<std::sync::Mutex<Vec<Value>>>)> {
    use axum::routing::post;
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    let app = axum::Router::new().route(
        "/{region}/orders/{id}",
        post(move |axum::extract::Path((region, id)): axum::extract::Path<(String, String)>, headers: axum::http::HeaderMap, body: axum::Json<Value>| {
            let log = log.clone();
            async move {
                log.lock().unwrap().push(json!({"region": region, "id": id, "auth": headers.get("authorization").and_then(|v| v.to_str().ok()), "body": body.0}));
                axum::Json(json!({"status": "shipped", "eta": "tomorrow", "internal": {"warehouse": "W-7"}}))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok((format!("http://{addr}"), seen))
}

async fn http_tool_through_binding(engine: Engine) -> anyhow::Result<()> {
    let mock = MockLlm::start(vec![
        MockReply::call(
            "query_order",
            json!({"order_id": "A-1", "tenant": "evil-override"}),
        ),
        MockReply::text("It ships tomorrow."),
    ])
    .await?;
    let Some(srv) = server(engine, &mock).await? else {
        return Ok(());
    };
    let (base, seen) = order_service().await?;
    let (_, ws) = srv.workspace("A").await?;
    ws.put(
        "/v1/secrets/secret__orders_key",
        json!({"value": "sk-live-123"}),
    )
    .await?
    .assert_status(201);
    ws.create("/v1/tools", json!({"id": "query_order", "name": "query_order", "type": "http",
        "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}, "tenant": {"type": "string"}, "channel": {"type": "string"}, "note": {"type": "string"}}, "required": ["order_id"]},
        "templateInputs": [{"name": "region"}],
        "http": {"method": "POST", "url": format!("{base}/{{{{input__region}}}}/orders/{{{{order_id}}}}"),
                 "headers": {"Authorization": "Bearer {{secret__orders_key}}"},
                 "body": {"tenant": "{{tenant}}", "channel": "{{channel}}", "note": "{{note}}"}}})).await?;
    let id = assistant(&ws, json!({"name": "Orders", "systemPrompt": "Help.",
        "dynamicVariables": [{"name": "tenant_id", "type": "string"}, {"name": "order_status", "type": "string"}],
        "toolBindings": [{"toolId": "query_order",
            "argumentBindings": {"order_id": {"source": "model"}, "tenant": {"source": "variable", "variableName": "tenant_id"},
                                 "channel": {"source": "literal", "value": "voice"}, "note": {"source": "template", "template": "for {{tenant_id}}"}},
            "templateBindings": {"region": {"source": "literal", "value": "cn"}},
            "resultAssignments": {"order_status": "status"},
            "modelResultFilter": ["status", "eta"]}]})).await?;
    let (sid, token) = open(
        &ws,
        json!({"assistantId": id, "dynamicVariables": {"tenant_id": "acme"}}),
    )
    .await?;
    ws.post(
        &format!("/v1/sessions/{sid}/messages"),
        json!({"text": "Where is A-1?"}),
    )
    .await?
    .assert_status(202);
    let events = events_until(&srv, &token, &sid, 0, turn_done).await?;
    let hit = seen.lock().unwrap().clone();
    assert_eq!(
        hit,
        vec![
            json!({"region": "cn", "id": "A-1", "auth": "Bearer sk-live-123", "body": {"tenant": "acme", "channel": "voice", "note": "for acme"}})
        ]
    );
    let reqs = mock.requests();
    let tool_schema = &reqs[0]["tools"][0]["function"]["parameters"];
    assert_eq!(
        tool_schema["properties"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["order_id"],
        "the model sees only its own arguments"
    );
    let tool_msg = reqs[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()
        .clone();
    let shown: Value = serde_json::from_str(tool_msg["content"].as_str().unwrap())?;
    assert_eq!(
        shown,
        json!({"status": "shipped", "eta": "tomorrow"}),
        "modelResultFilter hides the rest"
    );
    let all_model_input = serde_json::to_string(&reqs)?;
    assert!(!all_model_input.contains("sk-live-123") && !all_model_input.contains("W-7"));
    let all_events = serde_json::to_string(&events)?;
    assert!(
        !all_events.contains("sk-live-123"),
        "secrets never reach events"
    );
    let update = events
        .iter()
        .find(|e| e["type"] == "state.updated" && e["source"] == "tool:query_order")
        .expect("state.updated from the tool");
    assert_eq!(update["changes"], json!({"order_status": "shipped"}));
    assert_eq!(
        ws.get(&format!("/v1/sessions/{sid}/state")).await?.body["variables"]["order_status"],
        "shipped"
    );
    let k = kinds(&events);
    assert!(k.contains(&"tool.called") && k.contains(&"tool.completed"));
    Ok(())
}

#[tokio::test]
async fn http_tool_through_binding_sqlite() -> anyhow::Result<()> {
    http_tool_through_binding(Engine::Sqlite).await
}

#[tokio::test]
async fn http_tool_through_binding_postgres() -> anyhow::Result<()> {
    http_tool_through_binding(Engine::Postgres).await
}

async fn client_tools_over_websocket(engine: Engine) -> anyhow::Result<()> {
    let mock = MockLlm::start(vec![
        MockReply::call("set_photo_button_visible", json!({"visible": true})),
        MockReply::text("Done."),
        MockReply::call("get_location", json!({})),
        MockReply::text("I cannot read your location."),
        MockReply::call("vibrate", json!({})),
        MockReply::text("Your app is outdated."),
    ])
    .await?;
    let Some(srv) = server(engine, &mock).await? else {
        return Ok(());
    };
    let (_, ws) = srv.workspace("A").await?;
    ws.create("/v1/tools", json!({"id": "photo", "name": "set_photo_button_visible", "type": "client",
        "parameters": {"type": "object", "properties": {"visible": {"type": "boolean"}}, "required": ["visible"]},
        "client": {"functionName": "setPhotoButtonVisible", "waitForResponse": true, "timeoutMs": 5000}})).await?;
    ws.create("/v1/tools", json!({"id": "loc", "name": "get_location", "type": "client", "client": {"functionName": "getLocation"}})).await?;
    ws.create("/v1/tools", json!({"id": "vib", "name": "vibrate", "type": "client", "client": {"functionName": "vibrate"}})).await?;
    let id = assistant(&ws, json!({"name": "UI", "toolBindings": [
        {"toolId": "photo", "argumentBindings": {"visible": {"source": "model"}}}, {"toolId": "loc"}, {"toolId": "vib"}]})).await?;
    let (sid, token) = open(&ws, json!({"assistantId": id})).await?;
    let url = format!(
        "{}/v1/sessions/{sid}/ws?token={token}",
        srv.process.base_url.replace("http://", "ws://")
    );
    let (mut sock, _) = tokio_tungstenite::connect_async(url).await?;
    sock.send(tokio_tungstenite::tungstenite::Message::Text(
        json!({"type": "client.hello", "clientTools": [
        {"name": "setPhotoButtonVisible", "schemaHash": rtc_runtime::schema_hash(&json!({"type": "object", "properties": {"visible": {"type": "boolean"}}, "required": ["visible"]}))},
        {"name": "vibrate", "schemaHash": "0000"}]})
            .to_string()
            .into(),
    ))
    .await?;
    sock.send(tokio_tungstenite::tungstenite::Message::Text(
        json!({"type": "user.message", "text": "show the photo button"})
            .to_string()
            .into(),
    ))
    .await?;
    let mut saw_call = false;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let mut turns = 0;
    let mut mismatch = false;
    while turns < 3 {
        let msg = tokio::time::timeout_at(deadline, sock.next())
            .await?
            .expect("socket open")?;
        let tokio_tungstenite::tungstenite::Message::Text(text) = msg else {
            continue;
        };
        let ev: Value = serde_json::from_str(&text)?;
        if ev["type"] == "client_tool.call" {
            assert_eq!(ev["functionName"], "setPhotoButtonVisible");
            assert_eq!(ev["arguments"], json!({"visible": true}));
            saw_call = true;
            let reply = json!({"type": "client_tool.result", "callId": ev["callId"], "result": {"visible": true}});
            sock.send(tokio_tungstenite::tungstenite::Message::Text(
                reply.to_string().into(),
            ))
            .await?;
        }
        if ev["type"] == "turn.completed" {
            turns += 1;
            if turns == 1 {
                // The undeclared function fails at once, without waiting for its timeout.
                sock.send(tokio_tungstenite::tungstenite::Message::Text(
                    json!({"type": "user.message", "text": "where am I?"})
                        .to_string()
                        .into(),
                ))
                .await?;
            }
            if turns == 2 {
                // A declared function whose schema hash differs fails at once (R-BX-9).
                let frame = json!({"type": "user.message", "text": "vibrate"}).to_string();
                sock.send(tokio_tungstenite::tungstenite::Message::Text(frame.into()))
                    .await?;
            }
        }
        if ev["type"] == "tool.completed" && ev["name"] == "vibrate" {
            assert!(
                ev["result"]["error"]
                    .as_str()
                    .unwrap()
                    .contains("another parameter schema"),
                "{ev}"
            );
            mismatch = true;
        }
        if ev["type"] == "tool.completed" && ev["name"] == "get_location" {
            assert_eq!(ev["isError"], true);
            assert!(
                ev["result"]["error"]
                    .as_str()
                    .unwrap()
                    .contains("no connected client"),
                "{ev}"
            );
        }
    }
    assert!(saw_call && mismatch);
    let reqs = mock.requests();
    let tool_result = reqs[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()["content"]
        .clone();
    assert_eq!(tool_result, json!("{\"visible\":true}"));
    Ok(())
}

#[tokio::test]
async fn client_tools_over_websocket_sqlite() -> anyhow::Result<()> {
    client_tools_over_websocket(Engine::Sqlite).await
}

#[tokio::test]
async fn client_tools_over_websocket_postgres() -> anyhow::Result<()> {
    client_tools_over_websocket(Engine::Postgres).await
}

/// Named providers from the config file, chosen per assistant (R-API-7).
#[tokio::test]
async fn named_providers_from_the_config_file() -> anyhow::Result<()> {
    let default = MockLlm::start(vec![MockReply::text("from the default provider")]).await?;
    let alt = MockLlm::start(vec![MockReply::text("from the alt provider")]).await?;
    let dir = tempfile::tempdir()?;
    let config = dir.path().join("rtc-agent.toml");
    std::fs::write(
        &config,
        format!(
            "[providers.alt]\nbase_url = \"{}\"\napi_key = \"sk-alt\"\nmodel = \"alt-model\"\n",
            alt.base_url
        ),
    )?;
    let env = HashMap::from([
        ("RTC_LLM_BASE_URL".to_owned(), default.base_url.clone()),
        ("RTC_LLM_MODEL".to_owned(), "mock-model".to_owned()),
        ("RTC_CONFIG".to_owned(), config.display().to_string()),
    ]);
    let srv = start(Engine::Sqlite, env).await?.unwrap();
    let (_, ws) = srv.workspace("A").await?;
    let on_alt = assistant(
        &ws,
        json!({"name": "alt", "llm": {"provider": "alt", "temperature": 0.1}}),
    )
    .await?;
    let on_default = assistant(&ws, json!({"name": "default"})).await?;
    for (id, text) in [
        (on_alt, "from the alt provider"),
        (on_default, "from the default provider"),
    ] {
        let (sid, token) = open(&ws, json!({"assistantId": id})).await?;
        ws.post(
            &format!("/v1/sessions/{sid}/messages"),
            json!({"text": "hi"}),
        )
        .await?
        .assert_status(202);
        let ev = events_until(&srv, &token, &sid, 0, turn_done).await?;
        assert!(
            ev.iter()
                .any(|e| e["type"] == "message.completed" && e["content"] == text),
            "{ev:#?}"
        );
    }
    assert_eq!(alt.requests()[0]["model"], "alt-model");
    assert_eq!(alt.requests()[0]["temperature"], 0.1);
    assert_eq!(default.requests()[0]["model"], "mock-model");
    Ok(())
}

/// A provider's configuration overrides the capability table per
/// provider and per model, and bounds the functions of a request
/// (R-RN-6): past `max_tools` an assistant is refused at save.
#[tokio::test]
async fn provider_capabilities_and_function_bounds_from_the_config_file() -> anyhow::Result<()> {
    let default = MockLlm::start(vec![]).await?;
    let strict = MockLlm::start(vec![MockReply::text("ok")]).await?;
    let dir = tempfile::tempdir()?;
    let config = dir.path().join("rtc-agent.toml");
    std::fs::write(
        &config,
        format!(
            "[providers.strict]\nbase_url = \"{}\"\nmodel = \"house-reasoner\"\nsampling = false\nmax_tools = 12\n\n[providers.strict.models.\"house-reasoner\"]\ntoken_parameter = \"max_completion_tokens\"\n",
            strict.base_url
        ),
    )?;
    let env = HashMap::from([
        ("RTC_LLM_BASE_URL".to_owned(), default.base_url.clone()),
        ("RTC_CONFIG".to_owned(), config.display().to_string()),
    ]);
    let srv = start(Engine::Sqlite, env).await?.unwrap();
    let (_, ws) = srv.workspace("A").await?;
    // Every built-in family on: more than 12 functions.
    ws.post(
        "/v1/assistants",
        json!({"name": "wide", "llm": {"provider": "strict"}}),
    )
    .await?
    .assert_error(422, "too_many_functions", Some("toolBindings"));
    let lean = assistant(
        &ws,
        json!({"name": "lean", "llm": {"provider": "strict", "temperature": 0.3, "maxTokens": 50},
            "features": {"subAgents": false, "goals": false, "loops": false, "memory": false}}),
    )
    .await?;
    let (sid, token) = open(&ws, json!({"assistantId": lean})).await?;
    ws.post(
        &format!("/v1/sessions/{sid}/messages"),
        json!({"text": "hi"}),
    )
    .await?
    .assert_status(202);
    events_until(&srv, &token, &sid, 0, turn_done).await?;
    let sent = &strict.requests()[0];
    assert_eq!(sent["model"], "house-reasoner");
    assert_eq!(sent["max_completion_tokens"], 50, "{sent}");
    assert!(
        sent.get("temperature").is_none() && sent.get("max_tokens").is_none(),
        "{sent}"
    );
    assert!(sent["tools"].as_array().is_some_and(|t| t.len() <= 12));
    Ok(())
}
