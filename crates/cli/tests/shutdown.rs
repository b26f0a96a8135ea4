//! SIGTERM: live streams close, running turns finish within the grace
//! period or are checkpointed at its end, and the process exits 0 with
//! everything recorded.

use std::collections::HashMap;
use std::time::Duration;

use futures::StreamExt;
use rtc_testkit::{Engine, MockLlm, MockReply, ServerProcess};
use serde_json::json;
use tokio_tungstenite::tungstenite::Message;

use crate::conversation::{assistant, events_until, open, turn_done};
use crate::harness::{Server, binary, start};

/// A session whose turn answers after `delay`, with an SSE stream open
/// and the turn started; then SIGTERM. Returns the restarted server, the
/// workspace id and the session id.
async fn terminate_during_turn(
    engine: Engine,
    delay: Duration,
    grace_secs: u64,
) -> anyhow::Result<Option<(Server, String, String, String)>> {
    let mock = MockLlm::start(vec![MockReply::Delayed(
        delay,
        Box::new(MockReply::text("finished")),
    )])
    .await?;
    let env = HashMap::from([
        ("RTC_LLM_BASE_URL".to_owned(), mock.base_url.clone()),
        ("RTC_SHUTDOWN_GRACE_SECS".to_owned(), grace_secs.to_string()),
    ]);
    let Some(srv) = start(engine, env.clone()).await? else {
        return Ok(None);
    };
    let (workspace, ws) = srv.workspace("W").await?;
    let a = assistant(&ws, json!({"name": "a", "systemPrompt": "Hi."})).await?;
    let (session, token) = open(&ws, json!({"assistantId": a})).await?;
    let url = format!(
        "{}/v1/sessions/{session}/events?token={token}",
        srv.process.base_url
    );
    let mut sse = srv.client.get(url).send().await?.bytes_stream();
    let ws_url = format!(
        "{}/v1/sessions/{session}/ws?token={token}",
        srv.process.base_url.replace("http://", "ws://")
    );
    let (mut socket, _) = tokio_tungstenite::connect_async(ws_url).await?;
    ws.post(
        &format!("/v1/sessions/{session}/messages"),
        json!({"text": "work"}),
    )
    .await?
    .assert_status(202);
    let mut seen = String::new();
    while !seen.contains("turn.started") {
        let chunk = tokio::time::timeout(Duration::from_secs(10), sse.next())
            .await?
            .ok_or_else(|| anyhow::anyhow!("the stream ended early"))??;
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    let Server {
        process,
        db,
        data_dir,
        client,
    } = srv;
    let stopping = tokio::spawn(process.terminate(Duration::from_secs(grace_secs + 10)));
    // The live stream ends instead of holding the server open.
    let ended = tokio::time::timeout(Duration::from_secs(grace_secs + 10), async {
        while let Some(chunk) = sse.next().await {
            if chunk.is_err() {
                break;
            }
        }
    })
    .await;
    anyhow::ensure!(ended.is_ok(), "the SSE stream stayed open after SIGTERM");
    // The WebSocket gets a proper close (1001, going away).
    let closed = tokio::time::timeout(Duration::from_secs(grace_secs + 10), async {
        while let Some(msg) = socket.next().await {
            if let Ok(Message::Close(frame)) = msg {
                return frame.map(|f| u16::from(f.code));
            }
        }
        None
    })
    .await?;
    anyhow::ensure!(closed == Some(1001), "WebSocket close: {closed:?}");
    let status = stopping.await??;
    anyhow::ensure!(status.success(), "rtc-agent exited with {status}");
    let process = ServerProcess::start(&binary(), &db.url, data_dir.path(), &env).await?;
    let srv = Server {
        process,
        db,
        data_dir,
        client,
    };
    Ok(Some((srv, workspace, session, token)))
}

async fn turn_finishes_within_grace(engine: Engine) -> anyhow::Result<()> {
    let Some((srv, workspace, session, _)) =
        terminate_during_turn(engine, Duration::from_millis(800), 10).await?
    else {
        return Ok(());
    };
    let api = srv.admin_in(&workspace);
    let history = api.get(&format!("/v1/sessions/{session}/messages")).await?;
    let contents: Vec<&str> = history.assert_status(200)["data"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert!(
        contents.contains(&"finished"),
        "the turn finished: {contents:?}"
    );
    assert!(
        !srv.process.log().contains("interrupted by the last stop"),
        "nothing was left for recovery"
    );
    Ok(())
}

async fn turn_is_checkpointed_after_grace(engine: Engine) -> anyhow::Result<()> {
    let Some((srv, workspace, session, token)) =
        terminate_during_turn(engine, Duration::from_secs(60), 1).await?
    else {
        return Ok(());
    };
    let events = events_until(&srv, &token, &session, 0, turn_done).await?;
    assert_eq!(events.last().unwrap()["interrupted"], true, "checkpointed");
    let api = srv.admin_in(&workspace);
    let s = api.get(&format!("/v1/sessions/{session}")).await?;
    assert_eq!(s.assert_status(200)["status"], "active", "still usable");
    assert!(
        !srv.process.log().contains("interrupted by the last stop"),
        "the shutdown recorded the turn's end itself"
    );
    Ok(())
}

#[tokio::test]
async fn sigterm_lets_a_running_turn_finish_sqlite() -> anyhow::Result<()> {
    turn_finishes_within_grace(Engine::Sqlite).await
}

#[tokio::test]
async fn sigterm_lets_a_running_turn_finish_postgres() -> anyhow::Result<()> {
    turn_finishes_within_grace(Engine::Postgres).await
}

#[tokio::test]
async fn sigterm_checkpoints_a_turn_past_the_grace_period_sqlite() -> anyhow::Result<()> {
    turn_is_checkpointed_after_grace(Engine::Sqlite).await
}

#[tokio::test]
async fn sigterm_checkpoints_a_turn_past_the_grace_period_postgres() -> anyhow::Result<()> {
    turn_is_checkpointed_after_grace(Engine::Postgres).await
}
