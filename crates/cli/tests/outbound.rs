//! `RTC_OUTBOUND_ALLOW` through the binary (R-SEC-2): a tool on a listed
//! private `address:port` works; the same address on another port is
//! refused, and the refusal names the setting; a listed host name keeps
//! its loopback address.

use std::collections::HashMap;

use rtc_testkit::{Engine, MockLlm, MockReply};
use serde_json::{Value, json};

use crate::conversation::{assistant, events_until, open, turn_done};
use crate::harness::{Api, start};

/// A local service answering `{"ok": true}`; its port.
async fn service() -> anyhow::Result<u16> {
    let app = axum::Router::new().route(
        "/ok",
        axum::routing::post(|| async { axum::Json(json!({"ok": true})) }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(port)
}

async fn tool(ws: &Api, name: &str, url: String) -> anyhow::Result<Value> {
    ws.create(
        "/v1/tools",
        json!({"name": name, "type": "http", "description": "Ask the service.",
               "http": {"method": "POST", "url": url}}),
    )
    .await
}

/// What the tool call of the next turn came back with.
async fn call(
    srv: &crate::harness::Server,
    ws: &Api,
    sid: &str,
    token: &str,
    n: usize,
) -> anyhow::Result<Value> {
    ws.post(
        &format!("/v1/sessions/{sid}/messages"),
        json!({"text": "go"}),
    )
    .await?
    .assert_status(202);
    let done = std::cell::Cell::new(0);
    let events = events_until(srv, token, sid, 0, |e| {
        done.set(done.get() + usize::from(turn_done(e)));
        done.get() == n
    })
    .await?;
    Ok(events
        .iter()
        .rev()
        .find(|e| e["type"] == "tool.completed")
        .cloned()
        .unwrap_or(Value::Null))
}

async fn listed_targets_only(engine: Engine) -> anyhow::Result<()> {
    let (open_port, closed_port) = (service().await?, service().await?);
    let mock = MockLlm::start(vec![
        MockReply::call("listed", json!({})),
        MockReply::text("Done."),
        MockReply::call("other_port", json!({})),
        MockReply::text("Done."),
        MockReply::call("by_name", json!({})),
        MockReply::text("Done."),
    ])
    .await?;
    let env = HashMap::from([
        ("RTC_LLM_BASE_URL".to_owned(), mock.base_url.clone()),
        (
            "RTC_OUTBOUND_ALLOW".to_owned(),
            format!("127.0.0.1:{open_port}, localhost:{closed_port}"),
        ),
    ]);
    let Some(srv) = start(engine, env).await? else {
        return Ok(());
    };
    let (_, ws) = srv.workspace("Internal").await?;
    let mut ids = Vec::new();
    for (name, url) in [
        ("listed", format!("http://127.0.0.1:{open_port}/ok")),
        ("other_port", format!("http://127.0.0.1:{closed_port}/ok")),
        ("by_name", format!("http://localhost:{closed_port}/ok")),
    ] {
        ids.push(tool(&ws, name, url).await?["id"].clone());
    }
    let bindings: Vec<Value> = ids.iter().map(|id| json!({"toolId": id})).collect();
    let a = assistant(
        &ws,
        json!({"name": "Ops", "systemPrompt": "Use the tools.", "toolBindings": bindings}),
    )
    .await?;
    let (sid, token) = open(&ws, json!({"assistantId": a})).await?;
    let listed = call(&srv, &ws, &sid, &token, 1).await?;
    assert_eq!(
        (listed["name"].as_str(), listed["isError"].as_bool()),
        (Some("listed"), Some(false)),
        "{listed}"
    );
    assert_eq!(listed["result"], json!({"ok": true}));
    let refused = call(&srv, &ws, &sid, &token, 2).await?;
    assert_eq!(
        (refused["name"].as_str(), refused["isError"].as_bool()),
        (Some("other_port"), Some(true)),
        "{refused}"
    );
    assert!(
        refused.to_string().contains("RTC_OUTBOUND_ALLOW"),
        "{refused}"
    );
    let by_name = call(&srv, &ws, &sid, &token, 3).await?;
    assert_eq!(
        (by_name["name"].as_str(), by_name["isError"].as_bool()),
        (Some("by_name"), Some(false)),
        "{by_name}"
    );
    Ok(())
}

#[tokio::test]
async fn listed_targets_only_sqlite() -> anyhow::Result<()> {
    listed_targets_only(Engine::Sqlite).await
}

#[tokio::test]
async fn listed_targets_only_postgres() -> anyhow::Result<()> {
    listed_targets_only(Engine::Postgres).await
}

/// A bad entry stops the server at start, naming the setting and entry.
#[tokio::test]
async fn a_bad_entry_is_named_at_start() -> anyhow::Result<()> {
    let out = tokio::process::Command::new(crate::harness::binary())
        .args(["doctor"])
        .env("RTC_OUTBOUND_ALLOW", "10.0.0.0/40")
        .kill_on_drop(true)
        .output()
        .await?;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("RTC_OUTBOUND_ALLOW") && err.contains("10.0.0.0/40"),
        "{err}"
    );
    Ok(())
}
