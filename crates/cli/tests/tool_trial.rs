//! A tool tried from its editor (`POST /v1/tools/{id}/test`) and the
//! warnings a save answers with, through the binary: an HTTP tool on a
//! listed private address runs with its secret and template input and the
//! secret is scrubbed from what comes back; bad arguments and inputs are
//! named; a tool on an address the guard refuses saves with a
//! `private_address` warning naming `RTC_OUTBOUND_ALLOW` and its test says
//! why it fails; client tools are not run; another workspace sees 404; a
//! workspace runs a bounded number at once.

use std::collections::HashMap;
use std::time::Duration;

use axum::Json;
use axum::http::HeaderMap;
use rtc_testkit::Engine;
use serde_json::{Value, json};

use crate::harness::{Api, start};

const SECRET: &str = "trial-secret-value-7f3a9c";

/// A local service that echoes what it was sent (`/echo/{id}`) or answers
/// after two seconds (`/slow`); its port.
async fn service() -> anyhow::Result<u16> {
    let app = axum::Router::new()
        .route(
            "/echo/{id}",
            axum::routing::post(
                |axum::extract::Path(id): axum::extract::Path<String>,
                 headers: HeaderMap,
                 Json(body): Json<Value>| async move {
                    let auth = headers
                        .get("authorization")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or_default()
                        .to_owned();
                    Json(json!({"id": id, "authorization": auth, "body": body}))
                },
            ),
        )
        .route(
            "/slow",
            axum::routing::post(|| async {
                tokio::time::sleep(Duration::from_secs(2)).await;
                Json(json!({"slow": true}))
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(port)
}

fn http_tool(name: &str, url: String) -> Value {
    json!({
        "name": name, "type": "http", "description": "Ask the service.",
        "parameters": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
        "templateInputs": [{"name": "tenant"}],
        "http": {"method": "POST", "url": url,
                 "headers": {"Authorization": "Bearer {{secret__trial}}"},
                 "body": {"tenant": "{{input__tenant}}"}}
    })
}

async fn test_tool(ws: &Api, id: &str, body: Value) -> anyhow::Result<crate::harness::Reply> {
    ws.post(&format!("/v1/tools/{id}/test"), body).await
}

async fn tried_and_warned(engine: Engine) -> anyhow::Result<()> {
    let (listed, unlisted) = (service().await?, service().await?);
    let env = HashMap::from([(
        "RTC_OUTBOUND_ALLOW".to_owned(),
        format!("127.0.0.1:{listed}"),
    )]);
    let Some(srv) = start(engine, env).await? else {
        return Ok(());
    };
    let (_, ws) = srv.workspace("Trials").await?;
    ws.put("/v1/secrets/secret__trial", json!({"value": SECRET}))
        .await?
        .assert_status(201);

    // A listed address: saved without warnings, and it runs.
    let saved = ws
        .post(
            "/v1/tools",
            http_tool(
                "lookup",
                format!("http://127.0.0.1:{listed}/echo/{{{{id}}}}"),
            ),
        )
        .await?;
    let tool = saved.assert_status(201).clone();
    assert!(tool.get("warnings").is_none(), "{tool}");
    let id = tool["id"].as_str().unwrap();
    let tried = test_tool(
        &ws,
        id,
        json!({"arguments": {"id": "42"}, "inputs": {"tenant": "acme"}}),
    )
    .await?;
    let tried = tried.assert_status(200);
    assert_eq!(tried["ok"], true, "{tried}");
    assert_eq!(tried["result"]["id"], "42", "{tried}");
    assert_eq!(
        tried["result"]["body"],
        json!({"tenant": "acme"}),
        "{tried}"
    );
    let auth = tried["result"]["authorization"].as_str().unwrap();
    assert!(
        auth.starts_with("Bearer ") && !auth.contains(SECRET),
        "the secret is scrubbed: {auth}"
    );
    assert!(!tried.to_string().contains(SECRET), "{tried}");
    assert!(tried["durationMs"].is_u64(), "{tried}");

    // Bad arguments and inputs are named.
    test_tool(
        &ws,
        id,
        json!({"arguments": {}, "inputs": {"tenant": "acme"}}),
    )
    .await?
    .assert_error(422, "invalid_arguments", Some("arguments"));
    test_tool(&ws, id, json!({"arguments": {"id": "1"}}))
        .await?
        .assert_error(422, "missing_input", Some("inputs.tenant"));
    test_tool(
        &ws,
        id,
        json!({"arguments": {"id": "1"}, "inputs": {"tenant": "a", "other": "b"}}),
    )
    .await?
    .assert_error(422, "unknown_input", Some("inputs.other"));
    test_tool(&ws, id, json!({"argument": {}}))
        .await?
        .assert_error(422, "invalid_field", Some("argument"));

    // An address the guard refuses: saved, with a warning naming the
    // setting; a read does not carry it; its test says why it fails.
    let refused = ws
        .post(
            "/v1/tools",
            http_tool(
                "unlisted",
                format!("http://127.0.0.1:{unlisted}/echo/{{{{id}}}}"),
            ),
        )
        .await?;
    let refused = refused.assert_status(201).clone();
    let warning = &refused["warnings"][0];
    assert_eq!(warning["code"], "private_address", "{refused}");
    assert_eq!(warning["field"], "http.url", "{refused}");
    assert!(
        warning["message"]
            .as_str()
            .unwrap()
            .contains("RTC_OUTBOUND_ALLOW"),
        "{refused}"
    );
    let refused_id = refused["id"].as_str().unwrap();
    let read = ws.get(&format!("/v1/tools/{refused_id}")).await?;
    assert!(
        read.assert_status(200).get("warnings").is_none(),
        "{}",
        read.text
    );
    let mut edited = http_tool("unlisted", format!("http://localhost:{unlisted}/x"));
    edited["warnings"] = json!([{"code": "sent", "field": "x", "message": "by the client"}]);
    let replaced = ws.put(&format!("/v1/tools/{refused_id}"), edited).await?;
    let replaced = replaced.assert_status(200);
    assert_eq!(
        replaced["warnings"].as_array().map(Vec::len),
        Some(1),
        "{replaced}"
    );
    assert_eq!(
        replaced["warnings"][0]["code"], "private_address",
        "{replaced}"
    );
    let failed = test_tool(
        &ws,
        refused_id,
        json!({"arguments": {"id": "1"}, "inputs": {"tenant": "a"}}),
    )
    .await?;
    let failed = failed.assert_status(200);
    assert_eq!(failed["ok"], false, "{failed}");
    assert_eq!(failed["error"]["code"], "tool_error", "{failed}");
    assert!(
        failed["error"]["message"]
            .as_str()
            .unwrap()
            .contains("RTC_OUTBOUND_ALLOW"),
        "{failed}"
    );

    // An operator-run OpenCode server on a private address warns too.
    let backend = ws
        .post(
            "/v1/task-backends",
            json!({"name": "Coder", "type": "opencode", "opencode": {"baseUrl": "http://10.0.0.7:4096", "model": {"providerID": "anthropic", "modelID": "claude-sonnet-4"}}}),
        )
        .await?;
    let backend = backend.assert_status(201);
    assert_eq!(
        backend["warnings"][0]["field"], "opencode.baseUrl",
        "{backend}"
    );

    // A client tool runs in the host app, not here.
    let client = ws
        .create(
            "/v1/tools",
            json!({"name": "pick", "type": "client", "parameters": {"type": "object", "properties": {}}, "client": {"functionName": "pick"}}),
        )
        .await?;
    test_tool(&ws, client["id"].as_str().unwrap(), json!({}))
        .await?
        .assert_error(422, "client_tool_not_runnable", Some("type"));

    // Another workspace does not see the tool.
    let (_, other) = srv.workspace("Other").await?;
    test_tool(
        &other,
        id,
        json!({"arguments": {"id": "1"}, "inputs": {"tenant": "a"}}),
    )
    .await?
    .assert_error(404, "not_found", None);

    // At most four at once per workspace; the fifth is refused at once.
    let slow = ws
        .create(
            "/v1/tools",
            json!({"name": "slow", "type": "http", "http": {"method": "POST", "url": format!("http://127.0.0.1:{listed}/slow")}}),
        )
        .await?;
    let slow_id = slow["id"].as_str().unwrap().to_owned();
    let replies =
        futures::future::join_all((0..5).map(|_| test_tool(&ws, &slow_id, json!({})))).await;
    let mut statuses: Vec<u16> = replies
        .into_iter()
        .map(|r| r.map(|r| r.status.as_u16()))
        .collect::<Result<_, _>>()?;
    statuses.sort_unstable();
    assert_eq!(statuses, [200, 200, 200, 200, 429]);
    Ok(())
}

#[tokio::test]
async fn tried_and_warned_sqlite() -> anyhow::Result<()> {
    tried_and_warned(Engine::Sqlite).await
}

#[tokio::test]
async fn tried_and_warned_postgres() -> anyhow::Result<()> {
    tried_and_warned(Engine::Postgres).await
}
