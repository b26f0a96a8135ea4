//! MCP servers against the real `@modelcontextprotocol/server-everything`
//! (R-TR-2, R-SEC-4).

use std::collections::HashMap;

use rtc_testkit::{Engine, McpHttpServer, everything_stdio_command};
use serde_json::json;

use crate::harness::{on_both, with_server};

on_both!(stdio_servers_need_the_admin_and_are_discovered, |srv| {
    let (ws_id, ws) = srv.workspace("A").await?;
    let (command, args) = everything_stdio_command()?;
    let server = json!({"name": "everything", "transport": {"type": "stdio", "command": command, "args": args}});
    ws.post("/v1/mcp-servers", server.clone())
        .await?
        .assert_error(403, "stdio_requires_admin", Some("transport.type"));
    let admin = srv.admin_in(&ws_id);
    let created = admin.create("/v1/mcp-servers", server).await?;
    let id = created["id"].as_str().unwrap();
    // The workspace key may use (discover) what the admin registered.
    let tools = ws.get(&format!("/v1/mcp-servers/{id}/tools")).await?;
    let list = tools.assert_status(200)["data"].as_array().unwrap().clone();
    let echo = list.iter().find(|t| t["name"] == "echo").expect("echo");
    assert_eq!(echo["inputSchema"]["type"], "object");
    // An mcp tool takes (and pins) the discovered schema.
    let tool = ws
        .create("/v1/tools", json!({"name": "echo", "type": "mcp", "mcp": {"serverId": id, "remoteToolName": "echo"}}))
        .await?;
    assert_eq!(tool["parameters"], echo["inputSchema"]);
    // Tried from the editor, it answers what a session would get.
    let tried = ws
        .post(
            &format!("/v1/tools/{}/test", tool["id"].as_str().unwrap()),
            json!({"arguments": {"message": "hi there"}}),
        )
        .await?;
    let tried = tried.assert_status(200);
    assert_eq!(tried["ok"], true, "{tried}");
    assert!(tried["result"].to_string().contains("hi there"), "{tried}");
    ws.post("/v1/tools", json!({"name": "nope", "type": "mcp", "mcp": {"serverId": id, "remoteToolName": "no-such-tool"}}))
        .await?
        .assert_error(422, "unknown_remote_tool", Some("mcp.remoteToolName"));
    ws.post("/v1/tools", json!({"name": "nope", "type": "mcp", "mcp": {"serverId": "mcp_missing", "remoteToolName": "echo"}}))
        .await?
        .assert_error(422, "unknown_mcp_server", Some("mcp.serverId"));
    // The workspace key cannot change or delete the stdio server; the
    // server in use cannot be deleted by the admin either.
    ws.put(
        &format!("/v1/mcp-servers/{id}"),
        json!({"name": "x", "transport": {"type": "streamableHttp", "url": "https://x/mcp"}}),
    )
    .await?
    .assert_error(403, "stdio_requires_admin", None);
    ws.delete(&format!("/v1/mcp-servers/{id}"))
        .await?
        .assert_error(403, "stdio_requires_admin", Some("transport.type"));
    admin
        .delete(&format!("/v1/mcp-servers/{id}"))
        .await?
        .assert_error(409, "in_use", None);
    Ok(())
});

async fn until(what: &str, mut done: impl FnMut() -> bool) -> anyhow::Result<()> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !done() {
        anyhow::ensure!(std::time::Instant::now() < deadline, "{what} within 10 s");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    Ok(())
}

on_both!(stdio_env_is_write_only_and_processes_follow_edits, |srv| {
    let (ws_id, ws) = srv.workspace("A").await?;
    let admin = srv.admin_in(&ws_id);
    let (command, args) = everything_stdio_command()?;
    // A value unique to this run: it is the stored secret, and it finds the
    // server's processes.
    let value = format!("env-secret-{}-{}", std::process::id(), ws_id);
    let marker = format!("RTC_E2E_MARKER={value}");
    let body = |env: serde_json::Value| json!({"name": "everything", "transport": {"type": "stdio", "command": command, "args": args, "env": env}});
    let created = admin
        .create("/v1/mcp-servers", body(json!({"RTC_E2E_MARKER": value})))
        .await?;
    let id = created["id"].as_str().unwrap().to_owned();
    let path = format!("/v1/mcp-servers/{id}");
    assert_eq!(
        created["transport"]["env"]["RTC_E2E_MARKER"], "***",
        "{created}"
    );
    for (who, api) in [("workspace key", &ws), ("admin", &admin)] {
        for p in [path.clone(), "/v1/mcp-servers".to_owned()] {
            let r = api.get(&p).await?;
            r.assert_status(200);
            assert!(
                !r.text.contains(&value),
                "{who} GET {p} shows the env value: {}",
                r.text
            );
            assert!(r.text.contains("\"RTC_E2E_MARKER\":\"***\""), "{}", r.text);
        }
    }
    // The workspace key may neither change nor delete it.
    ws.put(&path, body(json!({"RTC_E2E_MARKER": "***"})))
        .await?
        .assert_error(403, "stdio_requires_admin", Some("transport.type"));
    ws.delete(&path)
        .await?
        .assert_error(403, "stdio_requires_admin", Some("transport.type"));
    // Discovery, however often, runs on one pooled process.
    let tools = format!("{path}/tools");
    let answers = futures::future::join_all((0..4).map(|_| ws.get(&tools))).await;
    for r in answers {
        r?.assert_status(200);
    }
    for _ in 0..3 {
        ws.get(&tools).await?.assert_status(200);
    }
    assert_eq!(
        rtc_testkit::processes_with(&marker),
        1,
        "one pooled stdio process"
    );
    // `***` sent back keeps the stored value: the new process has it too.
    admin
        .put(&path, body(json!({"RTC_E2E_MARKER": "***", "OTHER": "x"})))
        .await?
        .assert_status(200);
    admin
        .put(&path, body(json!({"NEW_ONE": "***"})))
        .await?
        .assert_error(422, "invalid_value", Some("transport.env.NEW_ONE"));
    // The edit ended the old process; discovery starts one with the value kept.
    until("the edited server's old process ends", || {
        rtc_testkit::processes_with(&marker) == 0
    })
    .await?;
    ws.get(&tools).await?.assert_status(200);
    assert_eq!(
        rtc_testkit::processes_with(&marker),
        1,
        "the kept value reached the new process"
    );
    // Deleting it (admin) ends its process.
    admin.delete(&path).await?.assert_status(204);
    until("the deleted server's process ends", || {
        rtc_testkit::processes_with(&marker) == 0
    })
    .await?;
    Ok(())
});

async fn streamable_http(engine: Engine) -> anyhow::Result<()> {
    let mcp = McpHttpServer::start().await?;
    let env = HashMap::from([("RTC_ALLOW_PRIVATE_NETWORK".to_owned(), "1".to_owned())]);
    let url = mcp.url.clone();
    with_server(engine, env, |srv| async move {
        let (_, ws) = srv.workspace("A").await?;
        ws.put("/v1/secrets/secret__mcp", json!({"value": "token-123"})).await?.assert_status(201);
        let created = ws
            .create("/v1/mcp-servers", json!({"name": "everything", "transport": {"type": "streamableHttp", "url": url, "headers": {"Authorization": "Bearer {{secret__mcp}}"}}}))
            .await?;
        assert!(!created.to_string().contains("token-123"));
        let id = created["id"].as_str().unwrap();
        let tools = ws.get(&format!("/v1/mcp-servers/{id}/tools")).await?;
        assert!(tools.assert_status(200)["data"].as_array().unwrap().iter().any(|t| t["name"] == "get-sum"));
        let tool = ws
            .create("/v1/tools", json!({"name": "sum", "type": "mcp", "mcp": {"serverId": id, "remoteToolName": "get-sum"}}))
            .await?;
        assert!(tool["parameters"]["properties"]["a"].is_object(), "{tool}");
        ws.post("/v1/mcp-servers", json!({"name": "x", "transport": {"type": "streamableHttp", "url": "https://x/mcp", "headers": {"A": "{{secret__none}}"}}}))
            .await?
            .assert_error(422, "unknown_secret", Some("transport.headers.A"));
        ws.post("/v1/mcp-servers", json!({"name": "x", "transport": {"type": "streamableHttp", "url": "ftp://x"}}))
            .await?
            .assert_error(422, "invalid_url", Some("transport.url"));
        Ok(())
    })
    .await?;
    mcp.stop().await;
    Ok(())
}

#[tokio::test]
async fn streamable_http_discovery_sqlite() -> anyhow::Result<()> {
    streamable_http(Engine::Sqlite).await
}

#[tokio::test]
async fn streamable_http_discovery_postgres() -> anyhow::Result<()> {
    streamable_http(Engine::Postgres).await
}

/// Without `RTC_ALLOW_PRIVATE_NETWORK`, a loopback or private MCP URL is
/// refused when it is saved (POST and PUT), naming `transport.url`; a name
/// that resolves to one is still refused at discovery.
#[tokio::test]
async fn loopback_servers_are_refused_by_default() -> anyhow::Result<()> {
    let mcp = McpHttpServer::start().await?;
    let url = mcp.url.clone();
    with_server(Engine::Sqlite, HashMap::new(), |srv| async move {
        let (_, ws) = srv.workspace("A").await?;
        let port = url::Url::parse(&url)?.port().unwrap_or(80);
        for refused in [
            url.clone(),
            format!("http://localhost:{port}/mcp"),
            format!("http://api.localhost:{port}/mcp"),
            "http://[::1]/mcp".to_owned(),
            "http://[::ffff:127.0.0.1]/mcp".to_owned(),
            "http://10.0.0.7/mcp".to_owned(),
            "http://169.254.169.254/mcp".to_owned(),
            "http://2130706433/mcp".to_owned(),
        ] {
            let r = ws
                .post(
                    "/v1/mcp-servers",
                    json!({"name": "local", "transport": {"type": "streamableHttp", "url": refused}}),
                )
                .await?;
            r.assert_error(422, "private_address", Some("transport.url"));
        }
        let created = ws
            .create(
                "/v1/mcp-servers",
                json!({"name": "remote", "transport": {"type": "streamableHttp", "url": "https://mcp.example.com/mcp"}}),
            )
            .await?;
        let id = created["id"].as_str().unwrap();
        ws.put(
            &format!("/v1/mcp-servers/{id}"),
            json!({"name": "remote", "transport": {"type": "streamableHttp", "url": url}}),
        )
        .await?
        .assert_error(422, "private_address", Some("transport.url"));
        Ok(())
    })
    .await?;
    mcp.stop().await;
    Ok(())
}

/// An MCP call whose result carries the server's header secret (here the
/// `echo` tool repeats it, raw, in base64 and percent-encoded) reaches
/// neither `tool.completed` nor the model.
async fn mcp_results_are_scrubbed(engine: Engine) -> anyhow::Result<()> {
    use base64::Engine as _;
    use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};

    use crate::conversation::{assistant, events_until, open, server, turn_done};

    const SECRET: &str = "mcp-token/canary+7?";
    let forms = [
        SECRET.to_owned(),
        STANDARD.encode(SECRET),
        URL_SAFE_NO_PAD.encode(SECRET),
        url::form_urlencoded::byte_serialize(SECRET.as_bytes()).collect::<String>(),
    ];
    let mcp = McpHttpServer::start().await?;
    let mock = rtc_testkit::MockLlm::start(vec![
        rtc_testkit::MockReply::call("echo", json!({"message": forms.join(" | ")})),
        rtc_testkit::MockReply::text("done"),
    ])
    .await?;
    let Some(srv) = server(engine, &mock).await? else {
        mcp.stop().await;
        return Ok(());
    };
    let (_, ws) = srv.workspace("A").await?;
    ws.put("/v1/secrets/secret__mcp", json!({"value": SECRET}))
        .await?
        .assert_status(201);
    let created = ws
        .create("/v1/mcp-servers", json!({"name": "everything", "transport": {"type": "streamableHttp", "url": mcp.url, "headers": {"Authorization": "Bearer {{secret__mcp}}"}}}))
        .await?;
    let id = created["id"].as_str().unwrap();
    let tool = ws
        .create("/v1/tools", json!({"name": "echo", "type": "mcp", "mcp": {"serverId": id, "remoteToolName": "echo"}}))
        .await?;
    let a = assistant(&ws, json!({"name": "a", "systemPrompt": "Hi.", "toolBindings": [{"toolId": tool["id"], "argumentBindings": {"message": {"source": "model"}}}]})).await?;
    let (sid, token) = open(&ws, json!({"assistantId": a})).await?;
    ws.post(
        &format!("/v1/sessions/{sid}/messages"),
        json!({"text": "go"}),
    )
    .await?
    .assert_status(202);
    let events = events_until(&srv, &token, &sid, 0, turn_done).await?;
    let done = events
        .iter()
        .find(|e| e["type"] == "tool.completed")
        .expect("tool.completed")
        .to_string();
    let reqs = mock.requests();
    let tool_message = reqs[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()
        .to_string();
    for (what, text) in [
        ("tool.completed", &done),
        ("the model's tool message", &tool_message),
    ] {
        for form in &forms {
            assert!(!text.contains(form.as_str()), "{what} holds {form}: {text}");
        }
        assert!(text.contains("[redacted]"), "{what}: {text}");
    }
    mcp.stop().await;
    Ok(())
}

#[tokio::test]
async fn mcp_results_are_scrubbed_sqlite() -> anyhow::Result<()> {
    mcp_results_are_scrubbed(Engine::Sqlite).await
}

#[tokio::test]
async fn mcp_results_are_scrubbed_postgres() -> anyhow::Result<()> {
    mcp_results_are_scrubbed(Engine::Postgres).await
}

/// A long MCP call reports its progress to the host as `tool.progress`
/// events while it runs (the everything server's long-running operation).
#[tokio::test]
async fn mcp_progress_reaches_the_host() -> anyhow::Result<()> {
    use crate::conversation::{assistant, events_until, open, server, turn_done};

    let mock = rtc_testkit::MockLlm::start(vec![
        rtc_testkit::MockReply::call("slow_job", json!({"duration": 1.2, "steps": 4})),
        rtc_testkit::MockReply::text("done"),
    ])
    .await?;
    let Some(srv) = server(Engine::Sqlite, &mock).await? else {
        return Ok(());
    };
    let (ws_id, ws) = srv.workspace("A").await?;
    let (command, args) = everything_stdio_command()?;
    let created = srv
        .admin_in(&ws_id)
        .create(
            "/v1/mcp-servers",
            json!({"name": "everything", "timeoutSeconds": 30,
            "transport": {"type": "stdio", "command": command, "args": args}}),
        )
        .await?;
    assert_eq!(created["timeoutSeconds"], 30);
    let tool = ws
        .create("/v1/tools", json!({"name": "slow_job", "type": "mcp",
            "mcp": {"serverId": created["id"], "remoteToolName": "trigger-long-running-operation"}}))
        .await?;
    let a = assistant(
        &ws,
        json!({"name": "a", "systemPrompt": "Hi.", "toolBindings": [{"toolId": tool["id"],
        "argumentBindings": {"duration": {"source": "model"}, "steps": {"source": "model"}}}]}),
    )
    .await?;
    let (sid, token) = open(&ws, json!({"assistantId": a})).await?;
    ws.post(
        &format!("/v1/sessions/{sid}/messages"),
        json!({"text": "run it"}),
    )
    .await?
    .assert_status(202);
    let events = events_until(&srv, &token, &sid, 0, turn_done).await?;
    let progress: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["type"] == "tool.progress")
        .collect();
    assert!(!progress.is_empty(), "{events:#?}");
    assert!(
        progress
            .iter()
            .all(|p| p["name"] == "slow_job" && p["total"] == 4.0),
        "{progress:?}"
    );
    let called = events.iter().find(|e| e["type"] == "tool.called").unwrap();
    assert!(progress.iter().all(|p| p["callId"] == called["callId"]));
    let completed = events
        .iter()
        .find(|e| e["type"] == "tool.completed")
        .unwrap();
    assert_eq!(completed["isError"], false, "{completed}");
    assert!(
        progress
            .iter()
            .all(|p| p["seq"].as_i64() < completed["seq"].as_i64())
    );
    Ok(())
}
