//! Several `rtc-agent serve` processes on one PostgreSQL behave as one
//! (R-ST-2): any request of a session may reach any instance. Client
//! tools are routed to the instance holding the host's socket; a turn has
//! one owner, which another instance's start never touches, which a user
//! message or an end elsewhere cancels, and whose work is adopted once
//! when it is killed.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use futures::{SinkExt, StreamExt};
use rtc_store::{MasterKey, SecretBox, Store};
use rtc_testkit::{MockLlm, MockReply, ServerProcess};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message as WsMessage;

use crate::conversation::{assistant, open, read_events};
use crate::harness::{Api, binary};
use crate::instances::{Pair, two_instances};

const LEASE_SECS: u64 = 2;
/// How long the slow answers take: long enough to act during them.
const SLOW: Duration = Duration::from_secs(3);
const OWNER_STOPPED: &str = "the server running the turn stopped during it";

const PHOTO_SCHEMA: &str = r#"{"type": "object", "properties": {"visible": {"type": "boolean"}}, "required": ["visible"]}"#;

/// The model: what it does depends on the last user input.
fn model(req: &Value) -> MockReply {
    let msgs = req["messages"].as_array().cloned().unwrap_or_default();
    let last = msgs.last().cloned().unwrap_or_default();
    if last["role"] == "tool" {
        let content = last["content"].as_str().unwrap_or("");
        return MockReply::text(&format!("after the tool: {content}"));
    }
    let input = msgs
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or("")
        .to_owned();
    if input.starts_with("[Task from your parent agent") {
        return MockReply::Delayed(SLOW, Box::new(MockReply::text("the sub-agent's findings")));
    }
    match input.as_str() {
        "slow" => MockReply::Delayed(SLOW, Box::new(MockReply::text("slow answer"))),
        "photo" => MockReply::call("set_photo_button_visible", json!({"visible": true})),
        "where" => MockReply::call("get_location", json!({})),
        "ask" => MockReply::call(
            "askUser",
            json!({"questions": [{"question": "Which airline?", "header": "Airline",
                "options": [{"label": "Lufthansa", "description": "Via Frankfurt"},
                            {"label": "TAP", "description": "Direct"}]}]}),
        ),
        "human please" => {
            MockReply::call("requestHumanHandoff", json!({"reason": "wants a human"}))
        }
        "delegate" => MockReply::call(
            "subAgent",
            json!({"title": "Deep", "instruction": "Work slowly.", "mode": "async"}),
        ),
        other => MockReply::text(&format!("echo: {other}")),
    }
}

/// Two instances on one PostgreSQL with the model above, a short lease,
/// the client tools and an assistant using them; `None` without
/// PostgreSQL.
async fn pair(mock: &MockLlm) -> anyhow::Result<Option<(Pair, String)>> {
    let Some(pair) = two_instances(
        env(mock),
        &[("RTC_INSTANCE_ID", "inst_a")],
        &[("RTC_INSTANCE_ID", "inst_b")],
    )
    .await?
    else {
        return Ok(None);
    };
    let ws = &pair.ws_a;
    let schema: Value = serde_json::from_str(PHOTO_SCHEMA)?;
    ws.create("/v1/tools", json!({"id": "photo", "name": "set_photo_button_visible", "type": "client",
        "parameters": schema,
        "client": {"functionName": "setPhotoButtonVisible", "waitForResponse": true, "timeoutMs": 30000}})).await?;
    ws.create(
        "/v1/tools",
        json!({"id": "loc", "name": "get_location", "type": "client",
        "client": {"functionName": "getLocation", "waitForResponse": true, "timeoutMs": 30000}}),
    )
    .await?;
    let id = assistant(ws, json!({"name": "Everywhere", "systemPrompt": "Help.",
        "features": {"askUser": true, "subAgents": true},
        "builtInTools": {"requestHumanHandoff": {"description": "When the user asks for a human"}},
        "toolBindings": [{"toolId": "photo", "argumentBindings": {"visible": {"source": "model"}}}, {"toolId": "loc"}]})).await?;
    Ok(Some((pair, id)))
}

fn env(mock: &MockLlm) -> HashMap<String, String> {
    HashMap::from([
        ("RTC_LLM_BASE_URL".to_owned(), mock.base_url.clone()),
        ("RTC_ALLOW_PRIVATE_NETWORK".to_owned(), "1".to_owned()),
        ("RTC_LOOP_LEASE_SECS".to_owned(), LEASE_SECS.to_string()),
    ])
}

/// Events of a session read from the instance at `base`, after `after`,
/// until `done`.
async fn events_on(
    base: &str,
    token: &str,
    sid: &str,
    after: i64,
    done: impl Fn(&Value) -> bool,
) -> anyhow::Result<Vec<Value>> {
    let url = format!("{base}/v1/sessions/{sid}/events?after={after}&token={token}");
    read_events(
        reqwest::Client::new().get(url),
        Duration::from_secs(30),
        done,
    )
    .await
}

/// Every stored event of the session.
async fn all_events(store: &Store, sid: &str) -> anyhow::Result<Vec<Value>> {
    let events = store.events_after(sid, 0, 10_000).await?;
    Ok(events
        .iter()
        .map(serde_json::to_value)
        .collect::<Result<_, _>>()?)
}

/// Turns never overlap: each `turn.started` is followed by its
/// `turn.completed` before the next one starts.
fn assert_turns_in_sequence(events: &[Value]) {
    let mut open = false;
    for e in events {
        if e["type"] == "turn.started" {
            assert!(!open, "a turn started while another ran: {events:#?}");
            open = true;
        }
        if e["type"] == "turn.completed" {
            open = false;
        }
    }
}

/// Post a user message through `api` (202).
async fn say(api: &Api, sid: &str, text: &str) -> anyhow::Result<()> {
    api.post(
        &format!("/v1/sessions/{sid}/messages"),
        json!({"text": text}),
    )
    .await?
    .assert_status(202);
    Ok(())
}

async fn messages(api: &Api, sid: &str) -> anyhow::Result<Vec<Value>> {
    let history = api.get(&format!("/v1/sessions/{sid}/messages")).await?;
    Ok(history.assert_status(200)["data"]
        .as_array()
        .cloned()
        .unwrap_or_default())
}

/// Wait until the session's history has an assistant message whose text
/// `fits`; returns the history.
async fn await_assistant(
    api: &Api,
    sid: &str,
    what: &str,
    fits: impl Fn(&str) -> bool,
) -> anyhow::Result<Vec<Value>> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let history = messages(api, sid).await?;
        if history
            .iter()
            .any(|m| m["role"] == "assistant" && m["content"].as_str().is_some_and(&fits))
        {
            return Ok(history);
        }
        anyhow::ensure!(Instant::now() < deadline, "no answer {what}: {history:#?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Wait until the session's history has an assistant message `text`.
async fn await_answer(api: &Api, sid: &str, text: &str) -> anyhow::Result<Vec<Value>> {
    await_assistant(api, sid, text, |c| c == text).await
}

async fn send(sock: &mut Socket, frame: Value) -> anyhow::Result<()> {
    sock.send(WsMessage::Text(frame.to_string().into())).await?;
    Ok(())
}

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// The host's socket on the instance at `base`, with the photo function
/// declared.
async fn host_socket(base: &str, sid: &str, token: &str) -> anyhow::Result<Socket> {
    let url = format!(
        "{}/v1/sessions/{sid}/ws?token={token}",
        base.replace("http://", "ws://")
    );
    let (mut sock, _) = tokio_tungstenite::connect_async(url).await?;
    let schema: Value = serde_json::from_str(PHOTO_SCHEMA)?;
    send(
        &mut sock,
        json!({"type": "client.hello", "clientTools": [
        {"name": "setPhotoButtonVisible", "schemaHash": rtc_runtime::schema_hash(&schema)}]}),
    )
    .await?;
    Ok(sock)
}

/// The next event of type `kind` on the socket.
async fn next_of(sock: &mut Socket, kind: &str) -> anyhow::Result<Value> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let msg = tokio::time::timeout_at(deadline, sock.next())
            .await
            .map_err(|_| anyhow::anyhow!("no `{kind}` arrived"))?
            .ok_or_else(|| anyhow::anyhow!("the socket closed"))??;
        if let WsMessage::Text(text) = msg {
            let ev: Value = serde_json::from_str(&text)?;
            if ev["type"] == kind {
                return Ok(ev);
            }
        }
    }
}

/// Who owns the session's turns, from the store.
async fn owner(store: &Store, sid: &str) -> anyhow::Result<Option<String>> {
    Ok(store.turn_owner(sid).await?)
}

#[tokio::test]
async fn client_tools_are_routed_to_the_instance_holding_the_socket() -> anyhow::Result<()> {
    let mock = MockLlm::with_responder(model).await?;
    let Some((Pair { a, b, ws_a, ws_b }, id)) = pair(&mock).await? else {
        return Ok(());
    };
    let store = Store::connect(&a.db.url, SecretBox::new(&MasterKey::generate())).await?;
    let (sid, token) = open(&ws_a, json!({"assistantId": id})).await?;
    // The host's socket is on A; the message reaches B, whose turn calls
    // the function; the host answers on A.
    let mut sock = host_socket(&a.process.base_url, &sid, &token).await?;
    next_of(&mut sock, "session.started").await.ok();
    tokio::time::sleep(Duration::from_millis(300)).await;
    say(&ws_b, &sid, "photo").await?;
    let call = next_of(&mut sock, "client_tool.call").await?;
    assert_eq!(call["functionName"], "setPhotoButtonVisible");
    assert_eq!(call["arguments"], json!({"visible": true}));
    send(
        &mut sock,
        json!({"type": "client_tool.result", "callId": call["callId"], "result": {"shown": true}}),
    )
    .await?;
    await_answer(&ws_a, &sid, "after the tool: {\"shown\":true}").await?;
    assert_eq!(
        owner(&store, &sid).await?.as_deref(),
        Some("inst_b"),
        "B ran the turn"
    );

    // A reply to an unknown call is refused where it arrives.
    send(
        &mut sock,
        json!({"type": "client_tool.result", "callId": "call_nobody", "result": {}}),
    )
    .await?;
    let refused = next_of(&mut sock, "error").await?;
    assert_eq!(refused["code"], "unknown_call", "{refused}");

    // No client anywhere declared getLocation: an immediate error, not
    // the 30 s timeout.
    let asked = Instant::now();
    say(&ws_b, &sid, "where").await?;
    let history = await_assistant(&ws_b, &sid, "no connected client", |c| {
        c.contains("no connected client")
    })
    .await?;
    assert!(asked.elapsed() < Duration::from_secs(20), "{history:#?}");

    // The host's socket closes while B waits for its answer: the call
    // fails at once with the disconnection.
    say(&ws_b, &sid, "photo").await?;
    next_of(&mut sock, "client_tool.call").await?;
    drop(sock);
    await_assistant(&ws_b, &sid, "about the disconnection", |c| {
        c.contains("disconnected before answering")
    })
    .await?;
    let events = all_events(&store, &sid).await?;
    assert_turns_in_sequence(&events);
    b.kill().await;
    Ok(())
}

#[tokio::test]
async fn a_message_or_an_end_on_one_instance_cancels_the_turn_on_another() -> anyhow::Result<()> {
    let mock = MockLlm::with_responder(model).await?;
    let Some((Pair { a, b, ws_a, ws_b }, id)) = pair(&mock).await? else {
        return Ok(());
    };
    let store = Store::connect(&a.db.url, SecretBox::new(&MasterKey::generate())).await?;
    let (sid, token) = open(&ws_a, json!({"assistantId": id})).await?;
    say(&ws_a, &sid, "slow").await?;
    events_on(&a.process.base_url, &token, &sid, 0, |e| {
        e["type"] == "turn.started"
    })
    .await?;
    // B takes the message: A's slow turn is cancelled, B answers.
    say(&ws_b, &sid, "quick").await?;
    let history = await_answer(&ws_a, &sid, "echo: quick").await?;
    tokio::time::sleep(SLOW).await;
    let history_later = messages(&ws_a, &sid).await?;
    assert!(
        !history_later.iter().any(|m| m["content"] == "slow answer"),
        "the cancelled turn never answered: {history_later:#?}"
    );
    assert_eq!(
        history.len(),
        history_later.len(),
        "nothing came after: {history_later:#?}"
    );
    let events = all_events(&store, &sid).await?;
    assert_turns_in_sequence(&events);
    let completed: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "turn.completed")
        .collect();
    assert_eq!(completed.len(), 2, "{completed:#?}");
    assert_eq!(completed[0]["interrupted"], true, "{completed:#?}");
    assert_eq!(completed[1]["interrupted"], false, "{completed:#?}");

    // A slow turn on A, ended through B: the turn stops there.
    say(&ws_a, &sid, "slow").await?;
    let after = events.last().unwrap()["seq"].as_i64().unwrap();
    events_on(&a.process.base_url, &token, &sid, after, |e| {
        e["type"] == "turn.started"
    })
    .await?;
    ws_b.post(
        &format!("/v1/sessions/{sid}/end"),
        json!({"reason": "done"}),
    )
    .await?
    .assert_status(204);
    let tail = events_on(&a.process.base_url, &token, &sid, after, |e| {
        e["type"] == "turn.completed"
    })
    .await?;
    assert_eq!(tail.last().unwrap()["interrupted"], true, "{tail:#?}");
    tokio::time::sleep(SLOW).await;
    let history = messages(&ws_a, &sid).await?;
    assert!(
        !history.iter().any(|m| m["content"] == "slow answer"),
        "{history:#?}"
    );
    let state = ws_a.get(&format!("/v1/sessions/{sid}")).await?;
    assert_eq!(state.assert_status(200)["status"], "ended");
    b.kill().await;
    Ok(())
}

#[tokio::test]
async fn a_question_asked_on_one_instance_is_answered_on_another() -> anyhow::Result<()> {
    let mock = MockLlm::with_responder(model).await?;
    let Some((Pair { a, b, ws_a, ws_b }, id)) = pair(&mock).await? else {
        return Ok(());
    };
    let (sid, token) = open(&ws_a, json!({"assistantId": id})).await?;
    // B has the session in memory from before the question.
    ws_b.get(&format!("/v1/sessions/{sid}/question"))
        .await?
        .assert_status(200);
    say(&ws_a, &sid, "ask").await?;
    let asked = events_on(&a.process.base_url, &token, &sid, 0, |e| {
        e["type"] == "ask_user.question"
    })
    .await?;
    let call = asked.last().unwrap()["callId"].as_str().unwrap().to_owned();
    let reply = ws_b
        .post(
            &format!("/v1/sessions/{sid}/answers"),
            json!({"callId": call, "answers": ["TAP"]}),
        )
        .await?;
    assert_eq!(reply.assert_status(202)["answers"], json!(["TAP"]));
    let history = await_assistant(&ws_a, &sid, "after the answer", |c| {
        c.starts_with("after the tool:")
    })
    .await?;
    let answer = history
        .iter()
        .rev()
        .find(|m| m["role"] == "assistant")
        .and_then(|m| m["content"].as_str())
        .unwrap_or("");
    assert!(answer.contains("TAP"), "{history:#?}");
    // Answered once: the question is gone on both.
    for api in [&ws_a, &ws_b] {
        let q = api.get(&format!("/v1/sessions/{sid}/question")).await?;
        assert!(q.assert_status(200)["pending"].is_null());
    }
    b.kill().await;
    Ok(())
}

#[tokio::test]
async fn a_starting_instance_leaves_a_live_turn_alone() -> anyhow::Result<()> {
    let mock = MockLlm::with_responder(model).await?;
    let Some((Pair { a, b, ws_a, .. }, id)) = pair(&mock).await? else {
        return Ok(());
    };
    let store = Store::connect(&a.db.url, SecretBox::new(&MasterKey::generate())).await?;
    let (sid, token) = open(&ws_a, json!({"assistantId": id})).await?;
    say(&ws_a, &sid, "slow").await?;
    events_on(&a.process.base_url, &token, &sid, 0, |e| {
        e["type"] == "turn.started"
    })
    .await?;
    // A third instance starts (and B restarts) while A's turn runs.
    let c = ServerProcess::start(
        &binary(),
        &a.db.url,
        a.data_dir.path(),
        &with_id(&env(&mock), "inst_c"),
    )
    .await?;
    b.kill().await;
    let b = ServerProcess::start(
        &binary(),
        &a.db.url,
        a.data_dir.path(),
        &with_id(&env(&mock), "inst_b"),
    )
    .await?;
    let done = events_on(&a.process.base_url, &token, &sid, 0, |e| {
        e["type"] == "turn.completed"
    })
    .await?;
    let completed = done.last().unwrap();
    assert_eq!(completed["interrupted"], false, "{done:#?}");
    await_answer(&ws_a, &sid, "slow answer").await?;
    let events = all_events(&store, &sid).await?;
    let ends = events
        .iter()
        .filter(|e| e["type"] == "turn.completed")
        .count();
    assert_eq!(ends, 1, "{events:#?}");
    c.kill().await;
    b.kill().await;
    Ok(())
}

fn with_id(env: &HashMap<String, String>, id: &str) -> HashMap<String, String> {
    let mut env = env.clone();
    env.insert("RTC_INSTANCE_ID".to_owned(), id.to_owned());
    env
}

#[tokio::test]
async fn a_killed_owners_turn_and_sub_agent_are_taken_over_once() -> anyhow::Result<()> {
    let mock = MockLlm::with_responder(model).await?;
    let Some((Pair { a, b, ws_a, ws_b }, id)) = pair(&mock).await? else {
        return Ok(());
    };
    let c = ServerProcess::start(
        &binary(),
        &a.db.url,
        a.data_dir.path(),
        &with_id(&env(&mock), "inst_c"),
    )
    .await?;
    let store = Store::connect(&a.db.url, SecretBox::new(&MasterKey::generate())).await?;
    // A runs a slow root turn in one session and a slow sub-agent in another.
    let (slow, slow_token) = open(&ws_a, json!({"assistantId": id})).await?;
    let (parent, parent_token) = open(&ws_a, json!({"assistantId": id})).await?;
    say(&ws_a, &parent, "delegate").await?;
    let spawned = events_on(&a.process.base_url, &parent_token, &parent, 0, |e| {
        e["type"] == "tool.completed" && e["name"] == "subAgent"
    })
    .await?;
    let child = spawned.last().unwrap()["result"]["sub_session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    say(&ws_a, &slow, "slow").await?;
    events_on(&a.process.base_url, &slow_token, &slow, 0, |e| {
        e["type"] == "turn.started"
    })
    .await?;
    // Both turns run on A (the child's model call is slow): kill -9 A.
    let deadline = Instant::now() + Duration::from_secs(20);
    while !store
        .session_by_id(&child)
        .await?
        .is_some_and(|s| s.turn_running)
    {
        anyhow::ensure!(Instant::now() < deadline, "the sub-agent never ran");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(owner(&store, &child).await?.as_deref(), Some("inst_a"));
    let crate::harness::Server {
        process,
        db: _db,
        data_dir: _dir,
        ..
    } = a;
    process.kill().await;
    let killed = Instant::now();

    // After the lease one survivor closes the cut-off turn, once.
    let ended = events_on(&b.base_url, &slow_token, &slow, 0, |e| {
        e["type"] == "turn.completed"
    })
    .await?;
    let closed = ended.last().unwrap();
    assert_eq!(closed["interrupted"], true, "{closed}");
    assert_eq!(closed["reason"], OWNER_STOPPED, "{closed}");
    assert!(
        killed.elapsed() >= Duration::from_secs(LEASE_SECS) - Duration::from_millis(500),
        "taken over only after the lease"
    );
    // The sub-agent runs again on a survivor and reports once.
    let deadline = Instant::now() + Duration::from_secs(40);
    let reports = loop {
        let history = messages(&ws_b, &parent).await?;
        let reports: Vec<Value> = history
            .into_iter()
            .filter(|m| {
                m["content"]
                    .as_str()
                    .is_some_and(|c| c.starts_with("[Sub-agent report]"))
            })
            .collect();
        if !reports.is_empty() {
            break reports;
        }
        anyhow::ensure!(Instant::now() < deadline, "the sub-agent never reported");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    tokio::time::sleep(Duration::from_secs(LEASE_SECS * 2)).await;
    let history = messages(&ws_b, &parent).await?;
    let count = history
        .iter()
        .filter(|m| {
            m["content"]
                .as_str()
                .is_some_and(|c| c.starts_with("[Sub-agent report]"))
        })
        .count();
    assert_eq!(count, 1, "one report: {reports:#?} then {history:#?}");
    assert!(
        reports[0]["content"]
            .as_str()
            .unwrap()
            .contains("the sub-agent's findings"),
        "{reports:#?}"
    );
    let adopter = owner(&store, &child).await?;
    assert!(
        matches!(adopter.as_deref(), Some("inst_b" | "inst_c")),
        "{adopter:?}"
    );
    for sid in [&slow, &child] {
        let events = all_events(&store, sid).await?;
        let cut = events
            .iter()
            .filter(|e| e["reason"] == OWNER_STOPPED)
            .count();
        assert_eq!(cut, 1, "closed by exactly one survivor: {events:#?}");
        assert_turns_in_sequence(&events);
    }
    // The session goes on normally on either survivor.
    let c_api = Api {
        base: c.base_url.clone(),
        ..ws_b.clone()
    };
    say(&c_api, &slow, "hello again").await?;
    await_answer(&ws_b, &slow, "echo: hello again").await?;
    b.kill().await;
    c.kill().await;
    Ok(())
}

#[tokio::test]
async fn a_handoff_requested_on_one_instance_is_served_and_released_on_another()
-> anyhow::Result<()> {
    let mock = MockLlm::with_responder(model).await?;
    let Some((Pair { a, b, ws_a, ws_b }, id)) = pair(&mock).await? else {
        return Ok(());
    };
    let (sid, token) = open(&ws_a, json!({"assistantId": id})).await?;
    // B holds the session in memory from before the handoff.
    ws_b.get(&format!("/v1/sessions/{sid}"))
        .await?
        .assert_status(200);
    say(&ws_a, &sid, "human please").await?;
    events_on(&a.process.base_url, &token, &sid, 0, |e| {
        e["type"] == "handoff.requested"
    })
    .await?;
    let state = ws_b.get(&format!("/v1/sessions/{sid}")).await?;
    assert_eq!(
        state.assert_status(200)["status"],
        "handoff",
        "B sees the handoff"
    );
    ws_b.post(
        &format!("/v1/sessions/{sid}/handoff/messages"),
        json!({"text": "Hi, I am Ana."}),
    )
    .await?
    .assert_status(201);
    // A user message during the handoff reaches A: stored, not answered.
    say(&ws_a, &sid, "thanks Ana").await?;
    ws_b.post(&format!("/v1/sessions/{sid}/handoff/release"), json!({}))
        .await?
        .assert_status(204);
    say(&ws_a, &sid, "back to the bot").await?;
    let history = await_answer(&ws_b, &sid, "echo: back to the bot").await?;
    assert!(
        history
            .iter()
            .any(|m| m["role"] == "human_agent" && m["content"] == "Hi, I am Ana."),
        "{history:#?}"
    );
    assert!(
        !history.iter().any(|m| m["content"] == "echo: thanks Ana"),
        "not answered during the handoff: {history:#?}"
    );
    b.kill().await;
    Ok(())
}
