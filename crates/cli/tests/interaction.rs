//! askUser and todoWrite in real conversations (R-AU-1..4, R-TD, R-BX-5):
//! a rule broken by the model comes back to it by name, the session waits
//! durably (across a restart) for answers given by label, number or free
//! text over REST and the WebSocket, and the model reads exactly the
//! seed's sentence.

use std::collections::HashMap;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use rtc_testkit::{Engine, MockLlm, MockReply, ServerProcess};
use serde_json::{Value, json};

use crate::conversation::{assistant, events_until, open, turn_done};
use crate::harness::{Server, binary, start};

fn question(q: &str, multi: bool) -> Value {
    json!({"question": q, "header": "Pick", "multiSelect": multi, "options": [
        {"label": "date-fns", "description": "Light, tree-shakable"},
        {"label": "dayjs", "description": "Moment-compatible, 2 KB"}]})
}

/// The tool message the model received for `call_id` in its last request.
fn tool_result(mock: &MockLlm, call_id: &str) -> String {
    let last = mock.requests().last().cloned().unwrap();
    last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == call_id)
        .and_then(|m| m["content"].as_str())
        .unwrap_or_else(|| panic!("no result for {call_id} in {last}"))
        .to_owned()
}

fn call_id_of(events: &[Value], kind: &str) -> String {
    events
        .iter()
        .rev()
        .find(|e| e["type"] == kind)
        .and_then(|e| e["callId"].as_str())
        .unwrap_or_else(|| panic!("no {kind}"))
        .to_owned()
}

async fn ask_and_answer(engine: Engine) -> anyhow::Result<()> {
    let mut long_header = question("Which library?", false);
    long_header["header"] = json!("Library choice");
    let mock = MockLlm::start(vec![
        MockReply::call("todoWrite", json!({"todos": [
            {"content": "Pick a date library", "status": "in_progress", "active_form": "Picking a library"},
            {"content": "Write the code", "status": "pending"}]})),
        MockReply::call("askUser", json!({"questions": [long_header]})),
        MockReply::call("askUser", json!({"questions": [question("Which library?", false), question("Which formats?", true)]})),
        // After the answers (given after a restart):
        MockReply::text("dayjs it is."),
        // Second question, answered over the WebSocket with free text:
        MockReply::call("askUser", json!({"questions": [question("Which style?", false)]})),
        MockReply::text("Noted."),
        // Third question, not answered: the user writes instead.
        MockReply::call("askUser", json!({"questions": [question("Tabs or spaces?", false)]})),
        MockReply::text("Fine, moving on."),
    ])
    .await?;
    let env = HashMap::from([
        ("RTC_LLM_BASE_URL".to_owned(), mock.base_url.clone()),
        ("RTC_ALLOW_PRIVATE_NETWORK".to_owned(), "1".to_owned()),
    ]);
    let Some(srv) = start(engine, env.clone()).await? else {
        return Ok(());
    };
    let (_, ws) = srv.workspace("A").await?;
    let id = assistant(
        &ws,
        json!({"name": "Helper", "systemPrompt": "Help.",
        "features": {"askUser": true, "todo": true}}),
    )
    .await?;
    let (sid, token) = open(&ws, json!({"assistantId": id})).await?;
    ws.post(
        &format!("/v1/sessions/{sid}/messages"),
        json!({"text": "set up dates"}),
    )
    .await?
    .assert_status(202);
    let ev = events_until(&srv, &token, &sid, 0, turn_done).await?;
    let todo = ev
        .iter()
        .find(|e| e["type"] == "todo.updated")
        .expect("todo.updated");
    assert_eq!(todo["todos"][0]["active_form"], "Picking a library");
    assert_eq!(todo["todos"].as_array().unwrap().len(), 2);
    let refused = ev
        .iter()
        .find(|e| e["type"] == "tool.completed" && e["isError"] == true)
        .expect("the broken rule");
    assert!(
        refused["result"]["error"]
            .as_str()
            .unwrap()
            .contains("rule header_length"),
        "{refused}"
    );
    let asked = ev
        .iter()
        .find(|e| e["type"] == "ask_user.question")
        .expect("question event");
    let call = asked["callId"].as_str().unwrap().to_owned();
    assert_eq!(asked["questions"][1]["multiSelect"], true);
    let todos = ws.get(&format!("/v1/sessions/{sid}/todos")).await?;
    assert_eq!(
        todos.assert_status(200)["todos"][1]["content"],
        "Write the code"
    );

    let answers = format!("/v1/sessions/{sid}/answers");
    ws.post(&answers, json!({"answers": ["2"]}))
        .await?
        .assert_error(422, "invalid_answer", Some("answers"));
    ws.post(&answers, json!({"answers": [" ", "1"]}))
        .await?
        .assert_error(422, "invalid_answer", Some("answers[0]"));
    ws.post(
        &answers,
        json!({"callId": "call_other", "answers": ["2", "1"]}),
    )
    .await?
    .assert_error(409, "stale_question", None);

    // The question survives a restart.
    let last = ev.last().unwrap()["seq"].as_i64().unwrap();
    let (db_url, data) = (srv.db.url.clone(), srv.data_dir.path().to_owned());
    srv.process.kill().await;
    let srv = Server {
        process: ServerProcess::start(&binary(), &db_url, &data, &env).await?,
        db: srv.db,
        data_dir: srv.data_dir,
        client: srv.client,
    };
    let mut ws = ws.clone();
    ws.base = srv.process.base_url.clone();
    let pending = ws.get(&format!("/v1/sessions/{sid}/question")).await?;
    assert_eq!(
        pending.assert_status(200)["pending"]["callId"],
        call.as_str()
    );
    let reply = ws
        .post(
            &answers,
            json!({"callId": call, "answers": ["DAYJS", "1, 2"]}),
        )
        .await?;
    assert_eq!(
        reply.assert_status(202)["answers"],
        json!(["dayjs", "date-fns, dayjs"])
    );
    let ev = events_until(&srv, &token, &sid, last, turn_done).await?;
    assert!(ev.iter().any(|e| e["type"] == "ask_user.answered"));
    assert_eq!(
        tool_result(&mock, &call),
        "User has answered your questions: \"Which library?\"=\"dayjs\", \"Which formats?\"=\"date-fns, dayjs\". You can now continue with the user's answers in mind."
    );
    ws.post(&answers, json!({"answers": ["1"]}))
        .await?
        .assert_error(409, "no_pending_question", None);

    // Over the WebSocket, with free text ("Other").
    let last = ev.last().unwrap()["seq"].as_i64().unwrap();
    let url = format!(
        "{}/v1/sessions/{sid}/ws?token={token}&after={last}",
        srv.process.base_url.replace("http://", "ws://")
    );
    let (mut sock, _) = tokio_tungstenite::connect_async(url).await?;
    let send = |v: Value| tokio_tungstenite::tungstenite::Message::Text(v.to_string().into());
    sock.send(send(
        json!({"type": "user.message", "text": "and the style?"}),
    ))
    .await?;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let mut ws_call = None;
    let mut completed = 0;
    let mut last = last;
    while completed < 2 {
        let msg = tokio::time::timeout_at(deadline, sock.next())
            .await?
            .expect("open")?;
        let tokio_tungstenite::tungstenite::Message::Text(text) = msg else {
            continue;
        };
        let ev: Value = serde_json::from_str(&text)?;
        last = last.max(ev["seq"].as_i64().unwrap_or(0));
        if ev["type"] == "ask_user.question" {
            ws_call = ev["callId"].as_str().map(str::to_owned);
            sock.send(send(json!({"type": "ask_user.answer", "callId": ws_call, "answers": ["Whatever is shortest"]}))).await?;
        }
        if ev["type"] == "turn.completed" {
            completed += 1;
        }
    }
    let ws_call = ws_call.expect("a question over the socket");
    assert!(tool_result(&mock, &ws_call).contains("\"Which style?\"=\"Whatever is shortest\""));

    // A message instead of answers dismisses the question, before the message.
    let msgs = format!("/v1/sessions/{sid}/messages");
    ws.post(&msgs, json!({"text": "one more"}))
        .await?
        .assert_status(202);
    let ev = events_until(&srv, &token, &sid, last, turn_done).await?;
    let dismissed = call_id_of(&ev, "ask_user.question");
    ws.post(&msgs, json!({"text": "never mind, just use spaces"}))
        .await?
        .assert_status(202);
    let after = ev.last().unwrap()["seq"].as_i64().unwrap();
    let ev = events_until(&srv, &token, &sid, after, turn_done).await?;
    assert!(
        ev.iter()
            .any(|e| e["type"] == "ask_user.answered" && e["dismissed"] == true)
    );
    assert!(tool_result(&mock, &dismissed).contains("did not answer"));
    let last_request = mock.requests().last().cloned().unwrap();
    let roles: Vec<&str> = last_request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .take(2)
        .filter_map(|m| m["role"].as_str())
        .collect();
    assert_eq!(
        roles,
        ["user", "tool"],
        "the dismissal precedes the new message"
    );
    Ok(())
}

#[tokio::test]
async fn ask_and_answer_sqlite() -> anyhow::Result<()> {
    ask_and_answer(Engine::Sqlite).await
}

#[tokio::test]
async fn ask_and_answer_postgres() -> anyhow::Result<()> {
    ask_and_answer(Engine::Postgres).await
}
