//! What a second instance adds to a client tool round trip (R-ST-2): two
//! `rtc-agent serve` on one PostgreSQL, the host's WebSocket on A, and a
//! conversation whose one tool is the host's function. Each round sends a
//! user message (to A, or to B, whose turn then calls the function
//! through A), answers the `client_tool.call` and waits for the turn's
//! end; the scripted model answers at once. Prints p50/p90 per route and
//! the difference of the medians.
//!
//! `RTC_TEST_POSTGRES_URL=postgres://… cargo bench -p rtc-cli --bench cross_instance_client_tool`
//! (`ROUNDS`, default 200).

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::cast_precision_loss,
    reason = "a benchmark binary"
)]

use std::collections::HashMap;
use std::time::{Duration, Instant};

use futures::{SinkExt, StreamExt};
use rtc_testkit::{Engine, MockLlm, MockReply, ServerProcess, TEST_ADMIN_TOKEN, TestDatabase};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

fn model(req: &Value) -> MockReply {
    let last = req["messages"]
        .as_array()
        .and_then(|m| m.last())
        .cloned()
        .unwrap_or_default();
    if last["role"] == "tool" {
        MockReply::text("done")
    } else {
        MockReply::call("blink", json!({}))
    }
}

async fn post(
    client: &reqwest::Client,
    url: String,
    key: &str,
    body: Value,
) -> anyhow::Result<Value> {
    let resp = client.post(url).bearer_auth(key).json(&body).send().await?;
    anyhow::ensure!(resp.status().is_success(), "{}", resp.text().await?);
    Ok(resp.json().await.unwrap_or(Value::Null))
}

/// Wait for the next event of `kind`.
async fn next_of(sock: &mut Socket, kind: &str) -> anyhow::Result<Value> {
    loop {
        let msg = tokio::time::timeout(Duration::from_secs(30), sock.next())
            .await?
            .ok_or_else(|| anyhow::anyhow!("socket closed"))??;
        if let Message::Text(text) = msg {
            let ev: Value = serde_json::from_str(&text)?;
            if ev["type"] == kind {
                return Ok(ev);
            }
        }
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let rounds: usize = std::env::var("ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(200);
    let Some(db) = TestDatabase::new(Engine::Postgres).await? else {
        eprintln!("set RTC_TEST_POSTGRES_URL to a PostgreSQL server (scripts/pg-throwaway start)");
        return Ok(());
    };
    let mock = MockLlm::with_responder(model).await?;
    let env = HashMap::from([
        ("RTC_LLM_BASE_URL".to_owned(), mock.base_url.clone()),
        ("RTC_ALLOW_PRIVATE_NETWORK".to_owned(), "1".to_owned()),
    ]);
    let dir = tempfile::tempdir()?;
    let binary = std::path::PathBuf::from(env!("CARGO_BIN_EXE_rtc-agent"));
    let a = ServerProcess::start(&binary, &db.url, dir.path(), &env).await?;
    let b = ServerProcess::start(&binary, &db.url, dir.path(), &env).await?;
    let client = reqwest::Client::new();
    let ws = post(
        &client,
        format!("{}/v1/workspaces", a.base_url),
        TEST_ADMIN_TOKEN,
        json!({"name": "bench"}),
    )
    .await?;
    let key = ws["apiKey"].as_str().unwrap_or_default().to_owned();
    post(
        &client,
        format!("{}/v1/tools", a.base_url),
        &key,
        json!({"id": "blink", "name": "blink", "type": "client",
        "client": {"functionName": "blink", "waitForResponse": true, "timeoutMs": 10000}}),
    )
    .await?;
    let assistant = post(
        &client,
        format!("{}/v1/assistants", a.base_url),
        &key,
        json!({"name": "Bench", "toolBindings": [{"toolId": "blink"}]}),
    )
    .await?;
    let mut results = Vec::new();
    for (route, base) in [
        ("one instance", &a.base_url),
        ("two instances", &b.base_url),
    ] {
        let session = post(
            &client,
            format!("{}/v1/sessions", a.base_url),
            &key,
            json!({"assistantId": assistant["id"]}),
        )
        .await?;
        let (sid, token) = (
            session["id"].as_str().unwrap_or_default(),
            session["clientToken"].as_str().unwrap_or_default(),
        );
        let url = format!(
            "{}/v1/sessions/{sid}/ws?token={token}",
            a.base_url.replace("http://", "ws://")
        );
        let (mut sock, _) = tokio_tungstenite::connect_async(url).await?;
        sock.send(Message::Text(
            json!({"type": "client.hello", "clientTools": [{"name": "blink"}]})
                .to_string()
                .into(),
        ))
        .await?;
        tokio::time::sleep(Duration::from_millis(500)).await;
        let mut times = Vec::with_capacity(rounds);
        for round in 0..rounds + 10 {
            let started = Instant::now();
            post(
                &client,
                format!("{base}/v1/sessions/{sid}/messages"),
                &key,
                json!({"text": "blink"}),
            )
            .await?;
            let call = next_of(&mut sock, "client_tool.call").await?;
            sock.send(Message::Text(json!({"type": "client_tool.result", "callId": call["callId"], "result": {"ok": true}}).to_string().into())).await?;
            loop {
                let done = next_of(&mut sock, "turn.completed").await?;
                if done["interrupted"] == false {
                    break;
                }
            }
            if round >= 10 {
                times.push(started.elapsed());
            }
        }
        times.sort();
        let (p50, p90) = (percentile(&times, 0.5), percentile(&times, 0.9));
        println!(
            "{route:>14}: p50 {:>8.2} ms  p90 {:>8.2} ms  ({rounds} rounds)",
            p50.as_secs_f64() * 1e3,
            p90.as_secs_f64() * 1e3
        );
        results.push(p50);
    }
    let added = results[1].as_secs_f64() - results[0].as_secs_f64();
    println!(
        "added by routing through a second instance: {:+.2} ms at p50",
        added * 1e3
    );
    a.kill().await;
    b.kill().await;
    Ok(())
}
