//! Sub-agents end to end (R-SA-1..7, R-BX-3/4): async reports that start a
//! parent turn, a sync call answered by the child's report, a child's
//! askUser answered by the root's user, messages to an idle child, the
//! permission rules, the depth limit, a cascade stop leaves first, the tree
//! endpoint, and a child's run that survives a restart of the server.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use rtc_testkit::{Engine, MockLlm, MockReply, ServerProcess};
use serde_json::{Value, json};

use crate::conversation::{assistant, events_until, open};
use crate::harness::{Server, binary, start};

/// The system prompt names the session, so the scripted model knows it.
const PROMPT: &str = "You are session {{system__session_id}} of tree {{system__root_session_id}}.";

/// Who a request is from ("root" or a sub-agent's title), how many answers
/// the model gave in that conversation so far, and its messages.
fn conversation(req: &Value) -> (String, usize, Vec<Value>) {
    let msgs = req["messages"].as_array().cloned().unwrap_or_default();
    let first = msgs
        .get(1)
        .and_then(|m| m["content"].as_str())
        .unwrap_or("");
    let who = first
        .strip_prefix("[Task from your parent agent: \"")
        .and_then(|rest| rest.split('"').next())
        .unwrap_or("root")
        .to_owned();
    let answers = msgs.iter().filter(|m| m["role"] == "assistant").count();
    (who, answers, msgs)
}

/// This session's id, from the rendered system prompt.
fn own_id(msgs: &[Value]) -> String {
    let prompt = msgs[0]["content"].as_str().unwrap_or("");
    prompt.split_whitespace().nth(3).unwrap_or("").to_owned()
}

/// The root of the tree, from the rendered system prompt.
fn root_id(msgs: &[Value]) -> String {
    let prompt = msgs[0]["content"].as_str().unwrap_or("");
    prompt
        .trim_end_matches('.')
        .rsplit(' ')
        .next()
        .unwrap_or("")
        .to_owned()
}

/// The sub-session id a subAgent result named `title` carries.
fn child_id(msgs: &[Value], title: &str) -> String {
    msgs.iter()
        .filter(|m| m["role"] == "tool")
        .filter_map(|m| serde_json::from_str::<Value>(m["content"].as_str()?).ok())
        .find(|v| v["title"] == title)
        .and_then(|v| v["sub_session_id"].as_str().map(str::to_owned))
        .unwrap_or_else(|| format!("no sub-agent titled {title}"))
}

/// Tool results of one request, in order.
fn tool_results(req: &Value) -> Vec<String> {
    req["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or("").to_owned())
        .collect()
}

fn question() -> Value {
    json!({"questions": [{"question": "Which airline do you prefer?", "header": "Airline",
        "options": [{"label": "Lufthansa", "description": "Via Frankfurt"},
                    {"label": "TAP", "description": "Direct"}]}]})
}

fn spawn(title: &str, instruction: &str, mode: &str) -> MockReply {
    MockReply::call(
        "subAgent",
        json!({"title": title, "instruction": instruction, "mode": mode}),
    )
}

fn script(req: &Value) -> MockReply {
    let (who, n, msgs) = conversation(req);
    let call = |name: &str, args: Value| MockReply::call(name, args);
    match (who.as_str(), n) {
        ("root", 0) => spawn(
            "Hotel search",
            "Find three hotels in Lisbon under 150 EUR a night.",
            "async",
        ),
        ("root", 1) => MockReply::text("Started a sub-agent."),
        ("root", 2) => MockReply::text("Hotels found."),
        ("root", 3) => spawn(
            "Flight search",
            "Find a morning flight from Berlin to Lisbon.",
            "sync",
        ),
        ("root", 4) => MockReply::text("Flight found."),
        ("root", 5) => call(
            "sendMessageToSubAgent",
            json!({"sub_session_id": child_id(&msgs, "Hotel search"), "message": "Add one more hotel."}),
        ),
        ("root", 6) => MockReply::text("Asked."),
        ("root", 7) => MockReply::text("More hotels noted."),
        ("root", 8) => spawn(
            "Deep research",
            "Research the history of Lisbon trams in depth.",
            "async",
        ),
        ("root", 9) => MockReply::text("Started deep research."),
        ("root", 10) => call("listSubAgent", json!({})),
        ("root", 11) => call(
            "getSubAgentMessage",
            json!({"sub_session_id": own_id(&msgs)}),
        ),
        ("root", 12) => call(
            "getSubAgentMessage",
            json!({"sub_session_id": child_id(&msgs, "Hotel search")}),
        ),
        ("root", 13) => call(
            "stopSubAgent",
            json!({"sub_session_id": child_id(&msgs, "Deep research")}),
        ),
        ("root", _) => MockReply::text("Stopped."),
        ("Hotel search", 0) => MockReply::text("Hotel Alpha, Hotel Beta, Hotel Gamma."),
        ("Hotel search", _) => MockReply::text("Also Hotel Delta."),
        ("Flight search", 0) => call("askUser", question()),
        ("Flight search", _) => MockReply::text("Flight TP123 at 9:00."),
        ("Deep research", 0) => spawn(
            "Tram history",
            "Write the history of tram 28 in Lisbon.",
            "async",
        ),
        ("Deep research", 1) => call(
            "getSubAgentMessage",
            json!({"sub_session_id": root_id(&msgs)}),
        ),
        ("Deep research", _) => MockReply::text("Waiting for my sub-agent."),
        ("Tram history", 0) => spawn("Too deep", "Nest one level more than allowed.", "async"),
        ("Tram history", _) => {
            MockReply::Delayed(Duration::from_secs(60), Box::new(MockReply::text("never")))
        }
        _ => MockReply::text("unexpected"),
    }
}

fn message_is(text: &'static str) -> impl Fn(&Value) -> bool {
    move |e| e["type"] == "message.completed" && e["content"] == text
}

fn last_seq(events: &[Value]) -> i64 {
    events.last().and_then(|e| e["seq"].as_i64()).unwrap_or(0)
}

/// The newest request of conversation `who` with `answers` answers before it.
fn request_of(mock: &MockLlm, who: &str, answers: usize) -> Option<Value> {
    mock.requests().into_iter().rev().find(|r| {
        let (w, n, _) = conversation(r);
        w == who && n == answers
    })
}

async fn wait_for_request(mock: &MockLlm, who: &str, answers: usize) -> anyhow::Result<Value> {
    for _ in 0..200 {
        if let Some(r) = request_of(mock, who, answers) {
            return Ok(r);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    anyhow::bail!("{who} never made its request #{answers}")
}

/// A server on `engine` with `env`, an assistant with the test prompt and
/// `features`, and a session of it: `(server, workspace api, session, client token)`.
async fn planner(
    engine: Engine,
    env: &HashMap<String, String>,
    features: Value,
) -> anyhow::Result<Option<(Server, crate::harness::Api, String, String)>> {
    let Some(srv) = start(engine, env.clone()).await? else {
        return Ok(None);
    };
    let (_, ws) = srv.workspace("A").await?;
    let id = assistant(
        &ws,
        json!({"name": "Planner", "systemPrompt": PROMPT, "features": features}),
    )
    .await?;
    let (sid, token) = open(&ws, json!({"assistantId": id})).await?;
    Ok(Some((srv, ws, sid, token)))
}

async fn tree_of_sub_agents(engine: Engine) -> anyhow::Result<()> {
    let mock = MockLlm::with_recorded_responder(script).await?;
    let env = HashMap::from([
        ("RTC_LLM_BASE_URL".to_owned(), mock.base_url.clone()),
        ("RTC_SUBAGENT_MAX_DEPTH".to_owned(), "2".to_owned()),
    ]);
    let features = json!({"subAgents": true, "askUser": true});
    let Some((srv, ws, sid, token)) = planner(engine, &env, features).await? else {
        return Ok(());
    };
    let msgs = format!("/v1/sessions/{sid}/messages");

    // async: the report arrives later and starts a turn of the parent.
    ws.post(&msgs, json!({"text": "plan the trip"}))
        .await?
        .assert_status(202);
    let ev = events_until(&srv, &token, &sid, 0, message_is("Hotels found.")).await?;
    let started = ev.iter().find(|e| e["type"] == "subagent.started").unwrap();
    assert_eq!(
        (started["title"].as_str(), started["mode"].as_str()),
        (Some("Hotel search"), Some("async"))
    );
    let hotel = started["subSessionId"].as_str().unwrap().to_owned();
    let done = ev
        .iter()
        .find(|e| e["type"] == "subagent.completed")
        .unwrap();
    assert_eq!(done["status"], "completed");
    assert!(done["report"].as_str().unwrap().contains("Hotel Alpha"));
    let report = ev
        .iter()
        .find(|e| e["type"] == "message.completed" && e["fromSessionId"] == hotel.as_str())
        .expect("the report as a message");
    assert!(
        report["content"]
            .as_str()
            .unwrap()
            .starts_with("[Sub-agent report] \"Hotel search\"")
    );
    let first_tool = &tool_results(&request_of(&mock, "root", 1).unwrap())[0];
    assert!(first_tool.contains(&hotel), "the id at once: {first_tool}");
    // The child started blank: its first input is the briefing alone.
    let child_req = request_of(&mock, "Hotel search", 0).unwrap();
    let child_msgs = child_req["messages"].as_array().unwrap();
    assert_eq!(child_msgs.len(), 2);
    assert!(
        child_msgs[1]["content"]
            .as_str()
            .unwrap()
            .contains("under 150 EUR")
    );
    let child = ws.get(&format!("/v1/sessions/{hotel}")).await?;
    let child = child.assert_status(200);
    assert_eq!(
        (
            child["parentSessionId"].as_str(),
            child["rootSessionId"].as_str(),
            child["title"].as_str()
        ),
        (Some(sid.as_str()), Some(sid.as_str()), Some("Hotel search"))
    );

    // sync, and the child's askUser goes to the root's user.
    ws.post(&msgs, json!({"text": "flights please"}))
        .await?
        .assert_status(202);
    let ev = events_until(&srv, &token, &sid, last_seq(&ev), |e| {
        e["type"] == "ask_user.question"
    })
    .await?;
    let asked = ev.last().unwrap();
    assert_eq!(asked["subSessionTitle"], "Flight search");
    let pending = ws.get(&format!("/v1/sessions/{sid}/question")).await?;
    let pending = pending.assert_status(200);
    assert_eq!(
        pending["pending"]["subSessionTitle"], "Flight search",
        "{pending}"
    );
    ws.post(
        &format!("/v1/sessions/{sid}/answers"),
        json!({"answers": {"Which airline do you prefer?": "2"}}),
    )
    .await?
    .assert_status(202);
    let ev = events_until(
        &srv,
        &token,
        &sid,
        last_seq(&ev),
        message_is("Flight found."),
    )
    .await?;
    let after_answer = request_of(&mock, "Flight search", 1).unwrap();
    assert_eq!(
        tool_results(&after_answer).last().unwrap(),
        "User has answered your questions: \"Which airline do you prefer?\"=\"TAP\". You can now continue with the user's answers in mind."
    );
    let sync_result: Value = serde_json::from_str(
        tool_results(&request_of(&mock, "root", 4).unwrap())
            .last()
            .unwrap(),
    )?;
    assert_eq!(
        (
            sync_result["title"].as_str(),
            sync_result["status"].as_str()
        ),
        (Some("Flight search"), Some("completed"))
    );
    assert!(sync_result["report"].as_str().unwrap().contains("TP123"));

    // A message to an idle child: it works again and reports again.
    ws.post(&msgs, json!({"text": "one more hotel"}))
        .await?
        .assert_status(202);
    let ev = events_until(
        &srv,
        &token,
        &sid,
        last_seq(&ev),
        message_is("More hotels noted."),
    )
    .await?;
    assert!(
        ev.iter()
            .any(|e| e["type"] == "subagent.completed" && e["report"] == "Also Hotel Delta.")
    );

    // A deeper tree, the permission rules, the depth limit, a cascade stop.
    ws.post(&msgs, json!({"text": "deep research"}))
        .await?
        .assert_status(202);
    let deep_second = wait_for_request(&mock, "Deep research", 2).await?;
    assert!(
        tool_results(&deep_second)
            .last()
            .unwrap()
            .contains("not one of your sub-agents"),
        "a child may not query its parent"
    );
    let too_deep = wait_for_request(&mock, "Tram history", 1).await?;
    assert!(
        tool_results(&too_deep)
            .last()
            .unwrap()
            .contains("nest 2 levels"),
        "{too_deep}"
    );
    ws.post(&msgs, json!({"text": "stop the deep research"}))
        .await?
        .assert_status(202);
    let ev = events_until(&srv, &token, &sid, last_seq(&ev), message_is("Stopped.")).await?;
    let results = tool_results(&request_of(&mock, "root", 14).unwrap());
    let n = results.len();
    let listed: Vec<Value> = serde_json::from_str(&results[n - 4])?;
    let titles: Vec<&str> = listed
        .iter()
        .map(|e| e["title"].as_str().unwrap())
        .collect();
    // Only the sub-agents at work: the hotel and flight searches reported.
    assert_eq!(titles, ["Deep research", "Tram history"]);
    assert!(
        listed
            .iter()
            .all(|e| e["status"] == "active" && e["created_at"].as_str().unwrap().ends_with('Z'))
    );
    assert!(
        results[n - 3].contains("your own session"),
        "{}",
        results[n - 3]
    );
    let latest: Value = serde_json::from_str(&results[n - 2])?;
    assert_eq!(
        (
            latest["sub_session_title"].as_str(),
            latest["role"].as_str(),
            latest["content"].as_str()
        ),
        (
            Some("Hotel search"),
            Some("assistant"),
            Some("Also Hotel Delta.")
        )
    );
    let stopped: Value = serde_json::from_str(&results[n - 1])?;
    let order: Vec<&str> = stopped["stopped_sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["title"].as_str().unwrap())
        .collect();
    assert_eq!(order, ["Tram history", "Deep research"], "leaves first");
    assert_eq!(stopped["total_stopped"], 2);
    assert_eq!(
        ev.iter()
            .filter(|e| e["type"] == "subagent.completed" && e["status"] == "stopped")
            .count(),
        2
    );

    let tree = ws.get(&format!("/v1/sessions/{sid}/tree")).await?;
    let tree = tree.assert_status(200);
    let children = tree["children"].as_array().unwrap();
    let summary: Vec<(String, String, String)> = children
        .iter()
        .map(|c| {
            (
                c["title"].as_str().unwrap().to_owned(),
                c["status"].as_str().unwrap().to_owned(),
                c["mode"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("Hotel search".into(), "active".into(), "async".into()),
            ("Flight search".into(), "active".into(), "sync".into()),
            ("Deep research".into(), "ended".into(), "async".into()),
        ]
    );
    assert_eq!(children[2]["children"][0]["title"], "Tram history");
    assert_eq!(children[2]["children"][0]["status"], "ended");
    assert_eq!(children[2]["children"][0]["depth"], 2);
    assert_eq!(children[0]["running"], false);
    // Another workspace sees none of it.
    let (_, other) = srv.workspace("B").await?;
    other
        .get(&format!("/v1/sessions/{hotel}/tree"))
        .await?
        .assert_error(404, "not_found", None);
    Ok(())
}

#[tokio::test]
async fn tree_of_sub_agents_sqlite() -> anyhow::Result<()> {
    tree_of_sub_agents(Engine::Sqlite).await
}

#[tokio::test]
async fn tree_of_sub_agents_postgres() -> anyhow::Result<()> {
    tree_of_sub_agents(Engine::Postgres).await
}

/// A child's run cut off by a restart goes on, and its report reaches the
/// parent exactly once.
async fn report_survives_restart(engine: Engine) -> anyhow::Result<()> {
    let slow_calls = Arc::new(AtomicUsize::new(0));
    let counter = slow_calls.clone();
    let mock = MockLlm::with_recorded_responder(move |req| {
        let (who, n, _) = conversation(req);
        match (who.as_str(), n) {
            ("root", 0) => spawn(
                "Slow task",
                "Count the tiles of the Lisbon cathedral floor.",
                "async",
            ),
            ("root", 1) => MockReply::text("Started."),
            ("root", _) => MockReply::text("Got the slow result."),
            _ if counter.fetch_add(1, Ordering::SeqCst) == 0 => MockReply::Delayed(
                Duration::from_secs(60),
                Box::new(MockReply::text("too late")),
            ),
            _ => MockReply::text("4,812 tiles."),
        }
    })
    .await?;
    let env = HashMap::from([("RTC_LLM_BASE_URL".to_owned(), mock.base_url.clone())]);
    let features = json!({"subAgents": true});
    let Some((srv, ws, sid, token)) = planner(engine, &env, features).await? else {
        return Ok(());
    };
    ws.post(
        &format!("/v1/sessions/{sid}/messages"),
        json!({"text": "count them"}),
    )
    .await?
    .assert_status(202);
    let ev = events_until(&srv, &token, &sid, 0, message_is("Started.")).await?;
    wait_for_request(&mock, "Slow task", 0).await?;

    let (db_url, data) = (srv.db.url.clone(), srv.data_dir.path().to_owned());
    srv.process.kill().await;
    let srv = Server {
        process: ServerProcess::start(&binary(), &db_url, &data, &env).await?,
        db: srv.db,
        data_dir: srv.data_dir,
        client: srv.client,
    };
    events_until(
        &srv,
        &token,
        &sid,
        last_seq(&ev),
        message_is("Got the slow result."),
    )
    .await?;
    assert_eq!(
        slow_calls.load(Ordering::SeqCst),
        2,
        "the child's model call was made again"
    );
    let mut ws = ws.clone();
    ws.base = srv.process.base_url.clone();
    let history = ws.get(&format!("/v1/sessions/{sid}/messages")).await?;
    let reports = history.assert_status(200)["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| {
            m["content"]
                .as_str()
                .unwrap_or("")
                .starts_with("[Sub-agent report]")
        })
        .count();
    assert_eq!(reports, 1, "delivered exactly once");
    Ok(())
}

#[tokio::test]
async fn report_survives_restart_sqlite() -> anyhow::Result<()> {
    report_survives_restart(Engine::Sqlite).await
}

#[tokio::test]
async fn report_survives_restart_postgres() -> anyhow::Result<()> {
    report_survives_restart(Engine::Postgres).await
}

/// A message to a sub-agent in the middle of its turn waits for the turn
/// to end, is read in the next turn, and the sub-agent reports once, at the
/// end of all its work.
async fn message_waits_for_the_turn_boundary(engine: Engine) -> anyhow::Result<()> {
    let mock = MockLlm::with_recorded_responder(|req| {
        let (who, n, msgs) = conversation(req);
        match (who.as_str(), n) {
            ("root", 0) => spawn("Slow writer", "Write a short draft about Lisbon trams.", "async"),
            ("root", 1) => MockReply::call(
                "sendMessageToSubAgent",
                json!({"sub_session_id": child_id(&msgs, "Slow writer"), "message": "Also add a title."}),
            ),
            ("root", 2) => MockReply::text("Sent."),
            ("root", _) => MockReply::text("Got the draft."),
            (_, 0) => MockReply::Delayed(
                Duration::from_millis(800),
                Box::new(MockReply::text("Draft one.")),
            ),
            _ => MockReply::text("Draft with a title."),
        }
    })
    .await?;
    let env = HashMap::from([("RTC_LLM_BASE_URL".to_owned(), mock.base_url.clone())]);
    let features = json!({"subAgents": true});
    let Some((srv, ws, sid, token)) = planner(engine, &env, features).await? else {
        return Ok(());
    };
    ws.post(
        &format!("/v1/sessions/{sid}/messages"),
        json!({"text": "draft it"}),
    )
    .await?
    .assert_status(202);
    let ev = events_until(&srv, &token, &sid, 0, message_is("Got the draft.")).await?;
    let sent = tool_results(&request_of(&mock, "root", 2).unwrap());
    assert!(
        sent.last().unwrap().contains("next turn boundary"),
        "{sent:?}"
    );
    // The child read the message after its first answer, not in the middle.
    let second = request_of(&mock, "Slow writer", 1).unwrap();
    let roles: Vec<(&str, &str)> = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .skip(1)
        .map(|m| {
            (
                m["role"].as_str().unwrap(),
                m["content"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(roles.len(), 3, "{roles:?}");
    assert_eq!(roles[1], ("assistant", "Draft one."));
    assert!(
        roles[2]
            .1
            .starts_with("[Message from your parent agent]\nAlso add a title.")
    );
    let reports: Vec<&Value> = ev
        .iter()
        .filter(|e| e["type"] == "subagent.completed")
        .collect();
    assert_eq!(
        reports.len(),
        1,
        "one report, after all the work: {reports:?}"
    );
    assert_eq!(reports[0]["report"], "Draft with a title.");
    Ok(())
}

#[tokio::test]
async fn message_waits_for_the_turn_boundary_sqlite() -> anyhow::Result<()> {
    message_waits_for_the_turn_boundary(Engine::Sqlite).await
}

#[tokio::test]
async fn message_waits_for_the_turn_boundary_postgres() -> anyhow::Result<()> {
    message_waits_for_the_turn_boundary(Engine::Postgres).await
}
