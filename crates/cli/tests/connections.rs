//! Connections: one that sends its headers too slowly is closed after
//! `RTC_HEADER_READ_TIMEOUT_SECS`, while complete requests are served; an
//! idle keep-alive connection is closed after the same time, which every
//! answer advertises in `Keep-Alive: timeout=N`; a request that changes a
//! session runs to its end when its client goes away.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use rtc_testkit::Engine;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::harness::{Server, start};

/// A server whose header-read timeout is `secs`, and a raw connection to it.
async fn server_and_connection(secs: &str) -> anyhow::Result<Option<(Server, TcpStream)>> {
    let env = HashMap::from([("RTC_HEADER_READ_TIMEOUT_SECS".to_owned(), secs.to_owned())]);
    let Some(srv) = start(Engine::Sqlite, env).await? else {
        return Ok(None);
    };
    let addr = srv.process.base_url.trim_start_matches("http://");
    let conn = TcpStream::connect(addr).await?;
    Ok(Some((srv, conn)))
}

/// Read until the server closes `conn` (EOF or reset); how long that took,
/// or `None` when it is still open after 10 s.
async fn time_to_close(conn: &mut TcpStream) -> Option<Duration> {
    let started = Instant::now();
    let mut buf = [0u8; 1024];
    tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match conn.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await
    .ok()
    .map(|()| started.elapsed())
}

#[tokio::test]
async fn partial_headers_are_cut_off_after_the_header_read_timeout() -> anyhow::Result<()> {
    let Some((srv, mut conn)) = server_and_connection("1").await? else {
        return Ok(());
    };
    conn.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        .await?;
    let closed = time_to_close(&mut conn).await;
    let closed = closed.expect("the connection is still open after 10 s");
    assert!(
        closed >= Duration::from_millis(500),
        "closed too early: {closed:?}"
    );
    // A complete request is still served.
    let health = srv
        .client
        .get(format!("{}/healthz", srv.process.base_url))
        .send()
        .await?;
    assert!(health.status().is_success(), "{}", health.status());
    Ok(())
}

#[tokio::test]
async fn an_idle_connection_is_closed_after_the_advertised_keep_alive() -> anyhow::Result<()> {
    let Some((_srv, mut conn)) = server_and_connection("2").await? else {
        return Ok(());
    };
    conn.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .await?;
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = conn.read(&mut buf).await?;
        assert!(n > 0, "closed before the answer");
        head.extend_from_slice(&buf[..n]);
    }
    // The answer tells a client how long the idle connection stays open.
    let text = String::from_utf8_lossy(&head).to_lowercase();
    assert!(text.contains("keep-alive: timeout=2"), "{text}");
    // Left idle, it is closed after that time (not before 1 s).
    let closed = time_to_close(&mut conn).await;
    let closed = closed.expect("the idle connection is still open after 10 s");
    assert!(
        closed >= Duration::from_secs(1),
        "closed too early: {closed:?}"
    );
    Ok(())
}

/// A session created by a client that goes away while its startup action
/// runs (a slow HTTP tool) is still created whole: the action's end and
/// the first message follow (before, the server dropped the creation
/// halfway with the connection).
#[tokio::test]
async fn a_session_whose_creator_goes_away_is_still_created_whole() -> anyhow::Result<()> {
    let slow = axum::Router::new().route(
        "/slow",
        axum::routing::get(|| async {
            tokio::time::sleep(Duration::from_millis(1500)).await;
            axum::Json(json!({"status": "ready"}))
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let tool_base = format!("http://{}", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, slow).await });
    let env = HashMap::from([("RTC_ALLOW_PRIVATE_NETWORK".to_owned(), "1".to_owned())]);
    let Some(srv) = start(Engine::Sqlite, env).await? else {
        return Ok(());
    };
    let (_, ws) = srv.workspace("A").await?;
    let tool = ws
        .create(
            "/v1/tools",
            json!({"name": "warm_up", "type": "http",
                   "parameters": {"type": "object", "properties": {}},
                   "http": {"method": "GET", "url": format!("{tool_base}/slow")}}),
        )
        .await?;
    let assistant = ws
        .create(
            "/v1/assistants",
            json!({"name": "Desk", "firstMessage": "Welcome.",
                   "startupActions": [{"toolId": tool["id"]}]}),
        )
        .await?;
    let body = json!({"assistantId": assistant["id"]}).to_string();
    let request = format!(
        "POST /v1/sessions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        ws.token.as_deref().unwrap_or_default(),
        body.len()
    );
    let addr = srv.process.base_url.trim_start_matches("http://");
    let mut conn = TcpStream::connect(addr).await?;
    conn.write_all(request.as_bytes()).await?;
    // Gone while the startup action runs.
    tokio::time::sleep(Duration::from_millis(400)).await;
    drop(conn);
    let mut messages = serde_json::Value::Null;
    for _ in 0..100 {
        let sessions = ws.get("/v1/sessions").await?.body;
        if let Some(id) = sessions["data"][0]["id"].as_str() {
            messages = ws.get(&format!("/v1/sessions/{id}/messages")).await?.body;
            if messages["data"]
                .as_array()
                .is_some_and(|m| m.iter().any(|m| m["content"] == "Welcome."))
            {
                return Ok(());
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    anyhow::bail!("the session was left half created: {messages}")
}
