//! Platform built-ins, startup actions, MCP calls, interruptions and
//! restarts in real conversations (R-BI-2..5, R-TB-3, R-RN-2, R-RN-4).

use std::time::Duration;

use rtc_testkit::{Engine, MockLlm, MockReply, ServerProcess, everything_stdio_command};
use serde_json::json;

use crate::conversation::{assistant, events_until, kinds, open, server, turn_done};
use crate::harness::binary;

async fn builtins(engine: Engine) -> anyhow::Result<()> {
    let mock = MockLlm::start(vec![
        // Turn 1: updateState (the llm leaf asks the small model), then text.
        MockReply::call("updateState", json!({})),
        MockReply::text("{\"value\": \"Ann\"}"),
        MockReply::text("Noted."),
        // Turn 2: skipTurn.
        MockReply::call("skipTurn", json!({})),
        // Turn 3: handoff.
        MockReply::call("requestHumanHandoff", json!({"reason": "wants a human"})),
        // Turn 4 (after release): endConversation without a reason is refused, then with one.
        MockReply::call("endConversation", json!({})),
        MockReply::call("endConversation", json!({"reason": "user said bye"})),
    ])
    .await?;
    let Some(srv) = server(engine, &mock).await? else {
        return Ok(());
    };
    let (_, ws) = srv.workspace("A").await?;
    let id = assistant(&ws, json!({"name": "B", "systemPrompt": "Be brief.",
        "dynamicVariables": [{"name": "name", "type": "string"}, {"name": "visits", "type": "number", "default": 1}],
        "builtInTools": {
            "updateState": {"description": "Record the user's name", "rules": [
                {"variable": "visits", "expression": {"type": "add", "left": {"type": "variable", "name": "visits"}, "right": {"type": "constant", "value": 1}}},
                {"variable": "name", "expression": {"type": "llm", "prompt": "The user's name?", "outputType": "string"}}]},
            "skipTurn": {},
            "requestHumanHandoff": {},
            "endConversation": {"messageType": "custom", "customMessage": "Goodbye!", "captureReason": true}}})).await?;
    let (sid, token) = open(&ws, json!({"assistantId": id})).await?;
    let msgs = format!("/v1/sessions/{sid}/messages");

    ws.post(&msgs, json!({"text": "I'm Ann"}))
        .await?
        .assert_status(202);
    let ev = events_until(&srv, &token, &sid, 0, turn_done).await?;
    let update = ev
        .iter()
        .find(|e| e["type"] == "state.updated" && e["source"] == "updateState")
        .expect("updateState event");
    assert_eq!(update["changes"], json!({"visits": 2, "name": "Ann"}));
    let leaf_request = &mock.requests()[1];
    assert_eq!(
        leaf_request["response_format"],
        json!({"type": "json_object"})
    );
    assert!(
        leaf_request["messages"][1]["content"]
            .as_str()
            .unwrap()
            .contains("I'm Ann")
    );
    let mut last = ev.last().unwrap()["seq"].as_i64().unwrap();

    ws.post(&msgs, json!({"text": "hold on"}))
        .await?
        .assert_status(202);
    let ev = events_until(&srv, &token, &sid, last, turn_done).await?;
    assert!(kinds(&ev).contains(&"turn.skipped"));
    assert!(
        !ev.iter()
            .any(|e| e["type"] == "message.completed" && e["role"] == "assistant"),
        "silent turn"
    );
    last = ev.last().unwrap()["seq"].as_i64().unwrap();

    ws.post(&msgs, json!({"text": "a human please"}))
        .await?
        .assert_status(202);
    let ev = events_until(&srv, &token, &sid, last, turn_done).await?;
    assert_eq!(
        ev.iter()
            .find(|e| e["type"] == "handoff.requested")
            .unwrap()["reason"],
        "wants a human"
    );
    assert_eq!(
        ws.get(&format!("/v1/sessions/{sid}")).await?.body["status"],
        "handoff"
    );
    let before = mock.calls();
    ws.post(&msgs, json!({"text": "hello?"}))
        .await?
        .assert_status(202);
    ws.post(
        &format!("/v1/sessions/{sid}/handoff/messages"),
        json!({"text": "Hi, I'm Bob from support."}),
    )
    .await?
    .assert_status(201);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(mock.calls(), before, "no model turn during a handoff");
    ws.post(&format!("/v1/sessions/{sid}/handoff/release"), json!({}))
        .await?
        .assert_status(204);
    ws.post(&format!("/v1/sessions/{sid}/handoff/release"), json!({}))
        .await?
        .assert_error(409, "not_in_handoff", None);
    assert_eq!(
        ws.get(&format!("/v1/sessions/{sid}")).await?.body["status"],
        "active"
    );

    ws.post(&msgs, json!({"text": "bye"}))
        .await?
        .assert_status(202);
    let ev = events_until(&srv, &token, &sid, last, |e| e["type"] == "session.ended").await?;
    let refused = ev
        .iter()
        .find(|e| {
            e["type"] == "tool.completed" && e["name"] == "endConversation" && e["isError"] == true
        })
        .expect("reason required");
    assert!(
        refused["result"]["error"]
            .as_str()
            .unwrap()
            .contains("reason")
    );
    assert!(
        ev.iter()
            .any(|e| e["type"] == "message.completed" && e["content"] == "Goodbye!")
    );
    let ended = ev.last().unwrap();
    assert_eq!(
        (ended["reason"].as_str(), ended["endedBy"].as_str()),
        (Some("user said bye"), Some("model"))
    );
    let session = ws.get(&format!("/v1/sessions/{sid}")).await?.body;
    assert_eq!(
        (
            session["status"].as_str(),
            session["endReason"].as_str(),
            session["endedBy"].as_str()
        ),
        (Some("ended"), Some("user said bye"), Some("model"))
    );
    ws.post(&msgs, json!({"text": "one more"}))
        .await?
        .assert_error(409, "session_ended", None);
    let roles: Vec<String> = ws.get(&msgs).await?.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap().to_owned())
        .collect();
    assert!(roles.contains(&"human_agent".to_owned()));
    Ok(())
}

#[tokio::test]
async fn builtins_sqlite() -> anyhow::Result<()> {
    builtins(Engine::Sqlite).await
}

#[tokio::test]
async fn builtins_postgres() -> anyhow::Result<()> {
    builtins(Engine::Postgres).await
}

async fn startup_actions_and_mcp(engine: Engine) -> anyhow::Result<()> {
    let mock = MockLlm::start(vec![
        MockReply::call("echo", json!({"message": "ping from the model"})),
        MockReply::text("It echoed."),
    ])
    .await?;
    let Some(srv) = server(engine, &mock).await? else {
        return Ok(());
    };
    let (ws_id, ws) = srv.workspace("A").await?;
    let (command, args) = everything_stdio_command()?;
    let mcp = srv.admin_in(&ws_id).create("/v1/mcp-servers", json!({"name": "everything", "transport": {"type": "stdio", "command": command, "args": args}})).await?;
    let mcp_id = mcp["id"].as_str().unwrap();
    ws.create("/v1/tools", json!({"id": "echo", "name": "echo", "type": "mcp", "mcp": {"serverId": mcp_id, "remoteToolName": "echo"}})).await?;
    let id = assistant(&ws, json!({"name": "M", "firstMessage": "Started.",
        "dynamicVariables": [{"name": "tenant", "type": "string", "default": "acme"}],
        "toolBindings": [{"toolId": "echo", "argumentBindings": {"message": {"source": "model"}}}],
        "startupActions": [{"toolId": "echo", "argumentBindings": {"message": {"source": "template", "template": "hello {{tenant}}"}}}]})).await?;
    let (sid, token) = open(&ws, json!({"assistantId": id})).await?;
    let msgs = format!("/v1/sessions/{sid}/messages");
    ws.post(&msgs, json!({"text": "echo something"}))
        .await?
        .assert_status(202);
    let ev = events_until(&srv, &token, &sid, 0, turn_done).await?;
    let startup = ev
        .iter()
        .find(|e| e["type"] == "tool.completed" && e["startup"] == true)
        .expect("startup action ran");
    assert_eq!(startup["isError"], false, "{startup}");
    assert!(
        startup["result"].to_string().contains("hello acme"),
        "{startup}"
    );
    let first = ev
        .iter()
        .position(|e| e["type"] == "message.completed" && e["content"] == "Started.")
        .unwrap();
    let startup_pos = ev
        .iter()
        .position(|e| e["type"] == "tool.completed" && e["startup"] == true)
        .unwrap();
    assert!(
        startup_pos < first,
        "startup actions run before the first message"
    );
    let call = ev
        .iter()
        .find(|e| e["type"] == "tool.completed" && e["name"] == "echo" && e["startup"].is_null())
        .expect("model's echo call");
    assert_eq!(call["isError"], false, "{call}");
    assert!(
        call["result"].to_string().contains("ping from the model"),
        "{call}"
    );
    Ok(())
}

#[tokio::test]
async fn startup_actions_and_mcp_sqlite() -> anyhow::Result<()> {
    startup_actions_and_mcp(Engine::Sqlite).await
}

#[tokio::test]
async fn startup_actions_and_mcp_postgres() -> anyhow::Result<()> {
    startup_actions_and_mcp(Engine::Postgres).await
}

async fn interruption_and_restart(engine: Engine) -> anyhow::Result<()> {
    let slow = |r: MockReply| MockReply::Delayed(Duration::from_millis(1500), Box::new(r));
    let mock = MockLlm::start(vec![
        // Turn 1 is interrupted by the second message while the model is slow.
        slow(MockReply::text("too late")),
        MockReply::text("Answer to the second message."),
        // Turn 3 is running when the server is killed.
        MockReply::Delayed(Duration::from_secs(30), Box::new(MockReply::text("never"))),
        MockReply::text("Back after the restart."),
    ])
    .await?;
    let Some(srv) = server(engine, &mock).await? else {
        return Ok(());
    };
    let (_, ws) = srv.workspace("A").await?;
    let id = assistant(&ws, json!({"name": "I"})).await?;
    let (sid, token) = open(&ws, json!({"assistantId": id})).await?;
    let msgs = format!("/v1/sessions/{sid}/messages");
    ws.post(&msgs, json!({"text": "first"}))
        .await?
        .assert_status(202);
    tokio::time::sleep(Duration::from_millis(300)).await;
    ws.post(&msgs, json!({"text": "second"}))
        .await?
        .assert_status(202);
    let ev = events_until(&srv, &token, &sid, 0, |e| {
        e["type"] == "turn.completed" && e["interrupted"] == false
    })
    .await?;
    let interrupted = ev
        .iter()
        .filter(|e| e["type"] == "turn.completed" && e["interrupted"] == true)
        .count();
    assert_eq!(interrupted, 1, "{:?}", kinds(&ev));
    let history = ws.get(&msgs).await?.body;
    let contents: Vec<&str> = history["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(
        contents,
        ["first", "second", "Answer to the second message."]
    );
    let last = ev.last().unwrap()["seq"].as_i64().unwrap();

    // Kill the server in the middle of a turn; a new process on the same database takes over.
    ws.post(&msgs, json!({"text": "third"}))
        .await?
        .assert_status(202);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let db_url = srv.db.url.clone();
    let data = srv.data_dir.path().to_owned();
    let env = std::collections::HashMap::from([
        ("RTC_LLM_BASE_URL".to_owned(), mock.base_url.clone()),
        ("RTC_ALLOW_PRIVATE_NETWORK".to_owned(), "1".to_owned()),
    ]);
    srv.process.kill().await;
    let again = ServerProcess::start(&binary(), &db_url, &data, &env).await?;
    let mut ws2 = ws.clone();
    ws2.base = again.base_url.clone();
    ws2.post(&msgs, json!({"text": "are you there?"}))
        .await?
        .assert_status(202);
    let restarted = crate::harness::Server {
        process: again,
        db: srv.db,
        data_dir: srv.data_dir,
        client: srv.client.clone(),
    };
    let ev = events_until(&restarted, &token, &sid, last, |e| {
        e["type"] == "message.completed" && e["content"] == "Back after the restart."
    })
    .await?;
    assert!(
        ev.iter()
            .any(|e| e["type"] == "turn.completed" && e["interrupted"] == true),
        "the killed turn is marked interrupted: {:?}",
        kinds(&ev)
    );
    let contents: Vec<String> = ws2.get(&msgs).await?.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        contents,
        [
            "first",
            "second",
            "Answer to the second message.",
            "third",
            "are you there?",
            "Back after the restart."
        ]
    );
    Ok(())
}

#[tokio::test]
async fn interruption_and_restart_sqlite() -> anyhow::Result<()> {
    interruption_and_restart(Engine::Sqlite).await
}

#[tokio::test]
async fn interruption_and_restart_postgres() -> anyhow::Result<()> {
    interruption_and_restart(Engine::Postgres).await
}
