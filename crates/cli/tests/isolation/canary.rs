//! The canary secret (issue 12's campaign): a random value stored as a
//! workspace secret and injected into an HTTP tool's and an MCP server's
//! headers, echoed back by both (as written, base64- and URL-encoded), in
//! results, failures and tool descriptions, while the server logs at trace
//! level; a second one is a (write-only) `env` value of a stdio MCP
//! server whose `get-env` tool prints its environment. Afterwards the
//! canary, in every form the scrubber promises to catch, is looked for in every event (SSE and WebSocket), the history,
//! the state, every response body the test received (errors included),
//! the tool results, every request the model got, the configuration as
//! read back, and the server's whole output: 0 hits.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use futures::StreamExt;
use reqwest::Method;
use rtc_testkit::{Engine, MockLlm, MockReply};
use serde_json::{Value, json};

use super::echo::{Echo, echo_of};
use crate::conversation::{events_until, turn_done};
use crate::harness::{Api, Reply, start};

/// A value nobody else uses, with characters that base64 and URL encoding
/// change (`/`, `+`, `=`).
fn canary() -> String {
    let mut words = [0u64; 3];
    for w in &mut words {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or_default(),
        );
        *w = h.finish();
    }
    format!(
        "cnry-{:016x}/{:08x}+{:08x}=",
        words[0], words[1] as u32, words[2] as u32
    )
}

/// Every form of `secret` the server promises never to let out: as
/// written, base64 (both alphabets, padded or not, and the characters that
/// encode it inside a longer base64 text at each of the three offsets) and
/// percent-encoded (upper, lower case, form encoding).
fn forms(secret: &str) -> Vec<String> {
    let bytes = secret.as_bytes();
    let mut out = vec![secret.to_owned()];
    for engine in [&STANDARD, &STANDARD_NO_PAD, &URL_SAFE, &URL_SAFE_NO_PAD] {
        out.push(engine.encode(bytes));
    }
    for offset in 0..3usize {
        let mut padded = vec![0u8; offset];
        padded.extend_from_slice(bytes);
        let encoded = STANDARD_NO_PAD.encode(&padded);
        // Character i covers bits 6i..6i+6: keep those covering the
        // secret's bits only.
        let (start, end) = ((offset * 8).div_ceil(6), padded.len() * 8 / 6);
        let fragment = encoded[start..end].to_owned();
        out.push(fragment.replace('+', "-").replace('/', "_"));
        out.push(fragment);
    }
    for lower in [false, true] {
        let encoded: String = bytes
            .iter()
            .map(
                |&b| match (b.is_ascii_alphanumeric() || b"-._~".contains(&b), lower) {
                    (true, _) => char::from(b).to_string(),
                    (false, false) => format!("%{b:02X}"),
                    (false, true) => format!("%{b:02x}"),
                },
            )
            .collect();
        out.push(encoded);
    }
    out.push(url::form_urlencoded::byte_serialize(bytes).collect());
    out.sort();
    out.dedup();
    out
}

/// Where the canary was looked for, and what was found.
#[derive(Default)]
struct Search {
    needles: Vec<String>,
    places: usize,
    bytes: usize,
    hits: Vec<String>,
}

impl Search {
    fn look(&mut self, place: &str, text: &str) {
        self.places += 1;
        self.bytes += text.len();
        for n in &self.needles {
            if let Some(at) = text.find(n.as_str()) {
                let from = text.floor_char_boundary(at.saturating_sub(80));
                let to = text.ceil_char_boundary((at + n.len() + 80).min(text.len()));
                self.hits
                    .push(format!("{place}: `{n}` in …{}…", &text[from..to]));
            }
        }
    }
}

/// A caller that keeps every response body it gets.
struct Recorder {
    api: Api,
    replies: Vec<(String, Reply)>,
}

impl Recorder {
    async fn call(
        &mut self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> anyhow::Result<&Reply> {
        let r = self.api.call(method.clone(), path, body).await?;
        self.replies.push((format!("{method} {path}"), r));
        Ok(&self.replies.last().unwrap().1)
    }
}

#[expect(
    clippy::print_stdout,
    reason = "the campaign prints its numbers (shown with --no-capture)"
)]
async fn campaign(engine: Engine) -> anyhow::Result<()> {
    let started = std::time::Instant::now();
    let secret = canary();
    let env_secret = canary();
    let echo = Echo::start().await?;
    let mock = MockLlm::start(vec![
        MockReply::ToolCalls(vec![
            ("echo_http".into(), json!({"note": "first"})),
            ("fail_http".into(), json!({"note": "second"})),
            ("echo_mcp".into(), json!({"mode": "ok"})),
            ("env_mcp".into(), json!({})),
        ]),
        MockReply::ToolCalls(vec![
            ("echo_mcp".into(), json!({"mode": "tool_error"})),
            ("echo_mcp".into(), json!({"mode": "rpc_error"})),
            // Not a string: refused before any request.
            ("echo_http".into(), json!({"note": 5})),
        ]),
        MockReply::text("All done."),
    ])
    .await?;
    let env = HashMap::from([
        ("RTC_LLM_BASE_URL".to_owned(), mock.base_url.clone()),
        ("RTC_LLM_MODEL".to_owned(), "mock-model".to_owned()),
        ("RTC_ALLOW_PRIVATE_NETWORK".to_owned(), "1".to_owned()),
        // The binary reads its log filter from RUST_LOG (README, config.rs):
        // everything at trace, so debug is covered too; `rmcp=trace` asks
        // explicitly for the MCP library's message dumps.
        ("RUST_LOG".to_owned(), "trace,rmcp=trace".to_owned()),
    ]);
    let Some(srv) = start(engine, env).await? else {
        return Ok(());
    };
    let (ws_id, ws) = srv.workspace("A").await?;
    let mut api = Recorder {
        api: ws.clone(),
        replies: Vec::new(),
    };
    api.call(
        Method::PUT,
        "/v1/secrets/secret__canary",
        Some(json!({"value": secret})),
    )
    .await?
    .assert_status(201);

    let headers = json!({"X-Api-Key": "{{secret__canary}}", "Authorization": "Basic {{secret__canary}}", "X-Mixed": "k={{secret__canary}};v=1"});
    let params = json!({"type": "object", "properties": {"note": {"type": "string"}}});
    for (name, path) in [("echo_http", "/echo"), ("fail_http", "/fail")] {
        api.call(Method::POST, "/v1/tools", Some(json!({"id": name, "name": name, "type": "http", "parameters": params,
            "http": {"method": "POST", "url": format!("{}{path}", echo.base), "headers": headers, "body": {"note": "{{note}}"}}})))
            .await?
            .assert_status(201);
    }
    let mcp_transport = |path: &str| json!({"type": "streamableHttp", "url": format!("{}{path}", echo.base), "headers": {"Authorization": "Bearer {{secret__canary}}"}});
    let server = api
        .call(
            Method::POST,
            "/v1/mcp-servers",
            Some(json!({"name": "echo", "transport": mcp_transport("/mcp")})),
        )
        .await?
        .assert_status(201)
        .clone();
    let server_id = server["id"].as_str().unwrap().to_owned();
    api.call(
        Method::GET,
        &format!("/v1/mcp-servers/{server_id}/tools"),
        None,
    )
    .await?
    .assert_status(200);
    api.call(Method::POST, "/v1/tools", Some(json!({"id": "echo_mcp", "name": "echo_mcp", "type": "mcp", "mcp": {"serverId": server_id, "remoteToolName": "echo_headers"}})))
        .await?
        .assert_status(201);
    // A stdio server's `env` values are write-only too (answers show
    // `***`): the second canary is one, and the everything server's
    // `get-env` tool prints its whole environment.
    let (command, args) = rtc_testkit::everything_stdio_command()?;
    let stdio = srv
        .admin_in(&ws_id)
        .create("/v1/mcp-servers", json!({"name": "everything", "transport": {"type": "stdio", "command": command, "args": args, "env": {"RTC_CANARY_ENV": env_secret}}}))
        .await?;
    let stdio_id = stdio["id"].as_str().unwrap().to_owned();
    api.call(
        Method::GET,
        &format!("/v1/mcp-servers/{stdio_id}/tools"),
        None,
    )
    .await?
    .assert_status(200);
    api.call(Method::POST, "/v1/tools", Some(json!({"id": "env_mcp", "name": "env_mcp", "type": "mcp", "mcp": {"serverId": stdio_id, "remoteToolName": "get-env"}})))
        .await?
        .assert_status(201);
    // Error paths that name the secret: refused configurations, a failing
    // discovery whose error body carries the echo, a refused deletion.
    let broken = api
        .call(
            Method::POST,
            "/v1/mcp-servers",
            Some(json!({"name": "broken", "transport": mcp_transport("/mcp-broken")})),
        )
        .await?
        .assert_status(201)
        .clone();
    let broken_id = broken["id"].as_str().unwrap().to_owned();
    let discovery = api
        .call(
            Method::GET,
            &format!("/v1/mcp-servers/{broken_id}/tools"),
            None,
        )
        .await?;
    discovery.assert_error(424, "mcp_unavailable", None);
    let refused = [
        (
            Method::POST,
            "/v1/tools",
            json!({"name": "in_url", "type": "http", "http": {"method": "GET", "url": format!("{}/echo?k={{{{secret__canary}}}}", echo.base)}}),
        ),
        (
            Method::POST,
            "/v1/tools",
            json!({"name": "in_body", "type": "http", "http": {"method": "POST", "url": format!("{}/echo", echo.base), "body": {"k": "{{secret__canary}}"}}}),
        ),
        (
            Method::POST,
            "/v1/tools",
            json!({"name": "bad_method", "type": "http", "http": {"method": "BREW", "url": format!("{}/echo", echo.base), "headers": headers}}),
        ),
        (
            Method::POST,
            "/v1/assistants",
            json!({"name": "leaky", "systemPrompt": "The key is {{secret__canary}}."}),
        ),
        (
            Method::POST,
            "/v1/assistants",
            json!({"name": "leaky", "toolBindings": [{"toolId": "echo_http", "argumentBindings": {"note": {"source": "template", "template": "{{secret__canary}}"}}}]}),
        ),
        (
            Method::PUT,
            "/v1/secrets/secret__canary",
            json!({"value": secret, "extra": true}),
        ),
        (Method::PUT, "/v1/secrets/canary", json!({"value": secret})),
        (Method::DELETE, "/v1/secrets/secret__canary", Value::Null),
    ];
    for (method, path, body) in refused {
        let body = (!body.is_null()).then_some(body);
        let r = api.call(method, path, body).await?;
        assert!(
            r.status.is_client_error(),
            "{path}: {} {}",
            r.status,
            r.text
        );
    }

    let asst = api
        .call(
            Method::POST,
            "/v1/assistants",
            Some(json!({"name": "Echoer", "systemPrompt": "Call the tools.",
            "toolBindings": [
                {"toolId": "echo_http", "argumentBindings": {"note": {"source": "model"}}},
                {"toolId": "fail_http", "argumentBindings": {"note": {"source": "model"}}},
                {"toolId": "echo_mcp", "argumentBindings": {"mode": {"source": "model"}}},
                {"toolId": "env_mcp"}]})),
        )
        .await?
        .assert_status(201)
        .clone();
    let session = api
        .call(
            Method::POST,
            "/v1/sessions",
            Some(json!({"assistantId": asst["id"], "userId": "canary-user"})),
        )
        .await?
        .assert_status(201)
        .clone();
    let sid = session["id"].as_str().unwrap().to_owned();
    let token = session["clientToken"].as_str().unwrap().to_owned();
    api.call(
        Method::POST,
        &format!("/v1/sessions/{sid}/messages"),
        Some(json!({"text": "go"})),
    )
    .await?
    .assert_status(202);
    let live = events_until(&srv, &token, &sid, 0, turn_done).await?;
    let replay = events_until(&srv, &token, &sid, 0, turn_done).await?;
    let frames = ws_frames(&srv.process.base_url, &sid, &token).await?;

    // The canary really went out: in the HTTP tools' and the MCP server's
    // headers (otherwise the search below proves nothing).
    let seen = echo.seen_text();
    assert!(
        seen.contains(&format!("\"x-api-key\":\"{secret}\"")),
        "{seen}"
    );
    assert!(
        seen.contains(&format!("\"authorization\":\"Bearer {secret}\"")),
        "{seen}"
    );
    assert_eq!(
        rtc_testkit::processes_with(&format!("RTC_CANARY_ENV={env_secret}")),
        1,
        "the stdio server runs with the env canary"
    );
    // The search finds every encoding the echo uses.
    let mut search = Search {
        needles: [forms(&secret), forms(&env_secret)].concat(),
        ..Search::default()
    };
    let first = echo.seen.lock().unwrap()[0].clone();
    let echoed = echo_of(&first);
    for key in ["headers", "base64", "urlencoded"] {
        let mut control = Search {
            needles: search.needles.clone(),
            ..Search::default()
        };
        control.look(key, &echoed[key].to_string());
        assert!(!control.hits.is_empty(), "the search misses the {key} echo");
    }
    let completed: Vec<&Value> = live
        .iter()
        .filter(|e| e["type"] == "tool.completed")
        .collect();
    // Read back everything there is to read.
    for path in [
        "/v1/secrets".to_owned(),
        "/v1/secrets/secret__canary".to_owned(),
        "/v1/tools".to_owned(),
        "/v1/tools/echo_http".to_owned(),
        "/v1/tools/fail_http".to_owned(),
        "/v1/tools/echo_mcp".to_owned(),
        "/v1/tools/env_mcp".to_owned(),
        format!("/v1/mcp-servers/{stdio_id}"),
        format!("/v1/mcp-servers/{stdio_id}/tools"),
        "/v1/mcp-servers".to_owned(),
        format!("/v1/mcp-servers/{server_id}"),
        format!("/v1/mcp-servers/{server_id}/tools"),
        format!("/v1/mcp-servers/{broken_id}"),
        "/v1/assistants".to_owned(),
        format!("/v1/sessions/{sid}"),
        format!("/v1/sessions/{sid}/messages"),
        format!("/v1/sessions/{sid}/state"),
        "/v1/sessions".to_owned(),
        "/v1/memories?userId=canary-user".to_owned(),
    ] {
        api.call(Method::GET, &path, None).await?;
    }
    let metrics = srv.anonymous().get("/metrics").await?;

    let mut error_bodies = 0;
    for (what, r) in &api.replies {
        if !r.status.is_success() {
            error_bodies += 1;
        }
        search.look(&format!("{what} → {}", r.status), &r.text);
    }
    search.look("GET /metrics", &metrics.text);
    for (name, events) in [("SSE live", &live), ("SSE replay", &replay)] {
        for e in events.iter() {
            search.look(
                &format!("{name} event {} {}", e["seq"], e["type"]),
                &e.to_string(),
            );
        }
    }
    for (i, f) in frames.iter().enumerate() {
        search.look(&format!("WebSocket frame {i}"), f);
    }
    let tool_messages: Vec<String> = mock
        .requests()
        .iter()
        .flat_map(|r| r["messages"].as_array().cloned().unwrap_or_default())
        .filter(|m| m["role"] == "tool")
        .map(|m| m.to_string())
        .collect();
    for (i, m) in tool_messages.iter().enumerate() {
        search.look(&format!("tool result {i} as the model read it"), m);
    }
    for (i, r) in mock.requests().iter().enumerate() {
        search.look(&format!("model request {i}"), &r.to_string());
    }
    let log = srv.process.log();
    let output = srv.process.output();
    assert!(log.contains("TRACE"), "the server logs at trace level");
    search.look("server log (stderr, trace)", &log);
    search.look("server stdout", &output);
    // What the server stored (SQLite: the database file and its WAL): a
    // workspace secret and a stdio server's `env` values are encrypted at
    // rest (R-SEC-3), so neither canary has any business there.
    if matches!(engine, Engine::Sqlite) {
        let path = srv.db.url.trim_start_matches("sqlite://").to_owned();
        let mut needles = forms(&secret);
        needles.extend(forms(&env_secret));
        let mut at_rest = Search {
            needles,
            ..Search::default()
        };
        for file in [path.clone(), format!("{path}-wal")] {
            if let Ok(bytes) = std::fs::read(&file) {
                at_rest.look(
                    &format!("database file {file}"),
                    &String::from_utf8_lossy(&bytes),
                );
            }
        }
        search.places += at_rest.places;
        search.bytes += at_rest.bytes;
        search.hits.extend(at_rest.hits);
    }

    println!(
        "canary campaign ({engine:?}): {} forms of the canary looked for in {} places, {} bytes \
         ({} events over SSE twice, {} WebSocket frames, {} response bodies of which {error_bodies} errors, \
         {} tool results, {} model requests, {} bytes of trace log); {} hits; {:.1} s",
        search.needles.len(),
        search.places,
        search.bytes,
        live.len(),
        frames.len(),
        api.replies.len(),
        completed.len() + tool_messages.len(),
        mock.requests().len(),
        log.len(),
        search.hits.len(),
        started.elapsed().as_secs_f64()
    );
    assert!(
        search.hits.is_empty(),
        "the canary leaked:\n{}",
        search.hits.join("\n")
    );
    // Calls ran, failed and were scrubbed.
    assert_eq!(completed.len(), 7, "{live:#?}");
    assert_eq!(
        completed.iter().filter(|e| e["isError"] == true).count(),
        4,
        "{completed:#?}"
    );
    assert!(
        completed
            .iter()
            .filter(|e| e.to_string().contains("[redacted]"))
            .count()
            >= 6,
        "{completed:#?}"
    );
    Ok(())
}

/// The session's events as the WebSocket replays them from the start, up
/// to the end of its first turn.
async fn ws_frames(base: &str, sid: &str, token: &str) -> anyhow::Result<Vec<String>> {
    let url = format!(
        "{}/v1/sessions/{sid}/ws?after=0&token={token}",
        base.replace("http://", "ws://")
    );
    let (mut sock, _) = tokio_tungstenite::connect_async(url).await?;
    let mut frames = Vec::new();
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
    while let Ok(Some(msg)) = tokio::time::timeout_at(deadline, sock.next()).await {
        if let tokio_tungstenite::tungstenite::Message::Text(t) = msg? {
            let done = serde_json::from_str::<Value>(&t).is_ok_and(|v| turn_done(&v));
            frames.push(t.to_string());
            if done {
                return Ok(frames);
            }
        }
    }
    anyhow::bail!("the WebSocket replay ended early: {frames:#?}")
}

#[tokio::test]
async fn canary_never_leaves_sqlite() -> anyhow::Result<()> {
    campaign(Engine::Sqlite).await
}

#[tokio::test]
async fn canary_never_leaves_postgres() -> anyhow::Result<()> {
    campaign(Engine::Postgres).await
}
