//! Realtime interfaces' connections and the checks of a realtime session's
//! start (R-RT-5, R-RT-7, design `realtime.md` §5c), without a provider:
//! every refusal here happens before any connection is opened.

use serde_json::{Value, json};

use crate::harness::{Api, on_both};

const KEY: &str = "sk-realtime-test-key-0123456789";

/// An interface `id` of `dialect` at `url`, declaring HTTP and client tools
/// and the three platform built-ins.
pub fn interface(id: &str, dialect: &str, url: &str) -> Value {
    let voice = if dialect == "openai" {
        "marin"
    } else {
        "Cherry"
    };
    json!({"id": id, "name": format!("{dialect} test"), "provider": dialect,
        "fieldSchema": {"features": {"realtimePromptTools": {"toolTypes": ["http", "mcp", "client"],
            "builtInTools": ["endConversation", "updateState", "requestHumanHandoff"]}}},
        "connection": {"dialect": dialect, "url": url, "model": "test-model", "voice": voice,
            "apiKey": "{{secret__rt_key}}"}})
}

pub async fn seed_key(ws: &Api) -> anyhow::Result<()> {
    ws.put("/v1/secrets/secret__rt_key", json!({"value": KEY}))
        .await?
        .assert_status(201);
    Ok(())
}

on_both!(connections_are_checked_when_saved, |srv| {
    let (_, ws) = srv.workspace("A").await?;
    // The shipped interfaces carry their providers' documented defaults.
    let qwen = ws
        .get("/v1/realtime-interfaces/qwen-audio-realtime")
        .await?;
    let c = &qwen.assert_status(200)["connection"];
    assert_eq!(c["dialect"], "qwen");
    assert_eq!(c["url"], "wss://dashscope.aliyuncs.com/api-ws/v1/realtime");
    assert_eq!(
        (c["inputRate"].as_u64(), c["outputRate"].as_u64()),
        (Some(16_000), Some(24_000))
    );
    assert_eq!(c["apiKey"], "{{secret__dashscope_api_key}}");
    let stepfun = ws.get("/v1/realtime-interfaces/stepfun-realtime").await?;
    assert_eq!(stepfun.body["connection"]["dialect"], "stepfun");
    assert_eq!(
        stepfun.body["connection"]["url"],
        "wss://api.stepfun.com/v1/realtime"
    );

    let good = interface("oa", "openai", "wss://api.openai.com/v1/realtime");
    ws.post("/v1/realtime-interfaces", good.clone())
        .await?
        .assert_error(422, "unknown_secret", Some("connection.apiKey"));
    seed_key(&ws).await?;
    let cases: Vec<(&str, Value, &str, &str)> = vec![
        (
            "/connection/url",
            json!("https://api.openai.com/v1/realtime"),
            "invalid_url",
            "connection.url",
        ),
        (
            "/connection/url",
            json!("wss://"),
            "invalid_url",
            "connection.url",
        ),
        (
            "/connection/apiKey",
            json!(KEY),
            "invalid_placeholder",
            "connection.apiKey",
        ),
        (
            "/connection/apiKey",
            json!("Bearer {{secret__rt_key}}"),
            "invalid_placeholder",
            "connection.apiKey",
        ),
        (
            "/connection/inputRate",
            json!(4000),
            "out_of_range",
            "connection.inputRate",
        ),
        (
            "/connection/model",
            json!(" "),
            "invalid_name",
            "connection.model",
        ),
        (
            "/connection/dialect",
            json!("gemini"),
            "invalid_value",
            "connection.dialect",
        ),
    ];
    for (pointer, value, code, field) in cases {
        let mut body = good.clone();
        let key = pointer.trim_start_matches("/connection/");
        body["connection"][key] = value;
        let reply = ws.post("/v1/realtime-interfaces", body).await?;
        assert_eq!(reply.status.as_u16(), 422, "{pointer}: {}", reply.text);
        assert_eq!(
            reply.body["error"]["field"], field,
            "{pointer}: {}",
            reply.text
        );
        if code != "invalid_value" && code != "invalid_name" {
            assert_eq!(
                reply.body["error"]["code"], code,
                "{pointer}: {}",
                reply.text
            );
        }
    }
    let mut semantic = interface("sf", "stepfun", "wss://api.stepfun.com/v1/realtime");
    semantic["connection"]["turnDetection"] = json!({"type": "semantic_vad"});
    ws.post("/v1/realtime-interfaces", semantic)
        .await?
        .assert_error(422, "unsupported", Some("connection.turnDetection.type"));
    let saved = ws.create("/v1/realtime-interfaces", good.clone()).await?;
    assert_eq!(
        saved["connection"]["apiKey"], "{{secret__rt_key}}",
        "a reference, never the key"
    );
    assert!(!serde_json::to_string(&saved)?.contains(KEY));
    // The key's secret is in use while an interface names it.
    ws.delete("/v1/secrets/secret__rt_key")
        .await?
        .assert_error(409, "in_use", None);
    Ok(())
});

on_both!(starting_checks_the_gate_and_the_connection_again, |srv| {
    let (_, ws) = srv.workspace("A").await?;
    seed_key(&ws).await?;
    ws.create(
        "/v1/tools",
        json!({"id": "lookup", "name": "lookup", "type": "http",
        "http": {"method": "GET", "url": "https://example.com/lookup"}}),
    )
    .await?;
    ws.create(
        "/v1/realtime-interfaces",
        interface(
            "rt",
            "qwen",
            "wss://dashscope.aliyuncs.com/api-ws/v1/realtime",
        ),
    )
    .await?;
    let assistant = ws
        .create(
            "/v1/assistants",
            json!({"name": "Voice", "runMode": "realtime",
        "realtimeInterfaceId": "rt", "systemPrompt": "Be brief.",
        "toolBindings": [{"toolId": "lookup"}]}),
        )
        .await?;
    let id = assistant["id"].as_str().unwrap();

    // The interface stops declaring HTTP tools: the session does not start
    // (nothing is filtered silently, nothing is connected).
    let mut reduced = interface(
        "rt",
        "qwen",
        "wss://dashscope.aliyuncs.com/api-ws/v1/realtime",
    );
    reduced["fieldSchema"]["features"]["realtimePromptTools"]["toolTypes"] = json!(["client"]);
    ws.put("/v1/realtime-interfaces/rt", reduced.clone())
        .await?
        .assert_status(200);
    ws.post("/v1/sessions", json!({"assistantId": id}))
        .await?
        .assert_error(422, "realtime_capability", Some("toolBindings[0]"));

    // Declared again, but without a connection: nothing to reach.
    let mut unreachable = interface("rt", "qwen", "wss://x.example");
    unreachable.as_object_mut().unwrap().remove("connection");
    ws.put("/v1/realtime-interfaces/rt", unreachable)
        .await?
        .assert_status(200);
    ws.post("/v1/sessions", json!({"assistantId": id}))
        .await?
        .assert_error(422, "realtime_not_configured", Some("realtimeInterfaceId"));

    // The shipped StepFun interface declares no tools at all.
    let mut stepfun = assistant.clone();
    stepfun["realtimeInterfaceId"] = json!("stepfun-realtime");
    ws.put(&format!("/v1/assistants/{id}"), stepfun)
        .await?
        .assert_error(422, "realtime_incompatible", Some("toolBindings[0]"));

    // The shipped Qwen interface needs its key's secret in the workspace.
    let plain = ws
        .create(
            "/v1/assistants",
            json!({"name": "Plain voice", "runMode": "realtime",
        "realtimeInterfaceId": "qwen-audio-realtime"}),
        )
        .await?;
    ws.post("/v1/sessions", json!({"assistantId": plain["id"]}))
        .await?
        .assert_error(422, "unknown_secret", Some("realtimeInterfaceId"));
    Ok(())
});
