//! Every LLM built-in and platform built-in, called by the scripted model
//! in a session on SQLite: the result the model gets, the events, and the
//! state the host reads back.

use rtc_protocol::{
    AnswerParams, AnswerValue, Answers, CreateSessionParams, GoalStatus, SessionStatus,
};
use rtc_testkit::{MockLlm, MockReply};
use serde_json::{Value, json};

use crate::harness::{Events, Harness, WS};

/// The `tool.completed` of `name`, as JSON.
async fn completed(events: &mut Events, name: &str) -> Value {
    let ev = events.until("tool.completed", |v| v["name"] == name).await;
    serde_json::to_value(ev).unwrap()
}

/// A harness whose model answers `replies` in order, and a session of a
/// plain assistant (with `extra` merged into it) for user `u1`.
async fn session(replies: Vec<MockReply>, extra: Value) -> (Harness, String, Events) {
    let h = Harness::start(replies).await;
    let mut body = json!({"name": "a", "systemPrompt": "Hi."});
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    h.assistant("a", body).await;
    let params = CreateSessionParams {
        assistant_id: Some("a".into()),
        user_id: Some("u1".into()),
        ..Default::default()
    };
    let s = h.rt.create_session(WS, params).await.unwrap().id;
    let events = h.events(&s).await;
    (h, s, events)
}

fn calls(list: &[(&str, Value)]) -> Vec<MockReply> {
    let mut out: Vec<MockReply> = list
        .iter()
        .map(|(n, a)| MockReply::call(n, a.clone()))
        .collect();
    out.push(MockReply::text("done"));
    out
}

#[tokio::test]
async fn todo_write_replaces_the_list_and_announces_it() {
    let todos = json!({"todos": [{"content": "Book the ferry", "status": "in_progress", "active_form": "Booking"},
        {"content": "Pack", "status": "pending"}]});
    let (h, s, mut events) = session(calls(&[("todoWrite", todos)]), json!({})).await;
    h.rt.send_user_message(WS, &s, "plan").await.unwrap();
    let updated = events.next_of("todo.updated").await;
    assert_eq!(
        serde_json::to_value(updated).unwrap()["todos"][1]["content"],
        "Pack"
    );
    assert_eq!(completed(&mut events, "todoWrite").await["isError"], false);
    assert_eq!(h.rt.todos(WS, &s).await.unwrap().len(), 2);
}

#[tokio::test]
async fn ask_user_waits_for_answers_and_gives_the_exact_text() {
    let question = json!({"questions": [{"question": "Which deck?", "header": "Deck",
        "options": [{"label": "Upper", "description": "views"}, {"label": "Lower", "description": "calm"}]}]});
    let (h, s, mut events) = session(calls(&[("askUser", question)]), json!({})).await;
    h.rt.send_user_message(WS, &s, "book").await.unwrap();
    events.next_of("ask_user.question").await;
    events.next_of("turn.completed").await;
    let answers = AnswerParams {
        call_id: None,
        answers: Answers::InOrder(vec![AnswerValue::One("Upper".into())]),
    };
    h.rt.answer(WS, &s, answers).await.unwrap();
    let done = completed(&mut events, "askUser").await;
    assert_eq!(
        done["result"],
        "User has answered your questions: \"Which deck?\"=\"Upper\". You can now continue with the user's answers in mind."
    );
    events
        .until("message.completed", |v| v["content"] == "done")
        .await;
}

/// Creates a goal on the user's message; as the judge, says "not yet";
/// on the continuation input, completes the goal it names.
fn goal_model(req: &Value) -> MockReply {
    let messages = req["messages"].as_array().cloned().unwrap_or_default();
    if messages[0]["content"]
        .as_str()
        .is_some_and(|s| s.starts_with("You judge"))
    {
        return MockReply::text(r#"{"satisfied": false, "reason": "not yet"}"#);
    }
    let last = messages.last().cloned().unwrap_or(Value::Null);
    let content = last["content"].as_str().unwrap_or("");
    if last["role"] == "tool" {
        MockReply::text("On it.")
    } else if let Some(rest) = content.strip_prefix("[Goal ") {
        let id = rest.split(']').next().unwrap_or("");
        MockReply::call("completeGoal", json!({"goal_id": id}))
    } else {
        MockReply::call(
            "createGoal",
            json!({"condition": "the ferry is booked", "max_turns": 3}),
        )
    }
}

#[tokio::test]
async fn goals_are_created_and_completed_by_the_model() {
    let mock = MockLlm::with_recorded_responder(goal_model).await.unwrap();
    let h = Harness::on(mock, |_| {}).await;
    h.assistant("a", json!({"name": "a", "systemPrompt": "Hi."}))
        .await;
    let s = h.session("a").await;
    let mut events = h.events(&s).await;
    h.rt.send_user_message(WS, &s, "book").await.unwrap();
    let created = completed(&mut events, "createGoal").await;
    assert_eq!(created["result"]["status"], "active");
    // The judge says no, the runtime continues the goal by itself, and
    // the model completes it.
    events
        .until("goal.updated", |v| v["goal"]["status"] == "completed")
        .await;
    let goals = h.rt.goals(WS, &s).await.unwrap();
    assert_eq!(goals[0].status, GoalStatus::Completed);
    assert_eq!(
        goals[0].completed_turns, 1,
        "one turn judged before the continuation"
    );
}

#[tokio::test]
async fn loops_are_listed_paused_resumed_and_cancelled() {
    let (h, s, mut events) = session(
        calls(&[(
            "createLoop",
            json!({"prompt": "check", "interval_seconds": 3600}),
        )]),
        json!({}),
    )
    .await;
    h.rt.send_user_message(WS, &s, "watch").await.unwrap();
    let created = completed(&mut events, "createLoop").await;
    let id = created["result"]["loop_id"].as_str().unwrap().to_owned();
    events.next_of("turn.completed").await;
    h.mock.push(calls(&[
        ("listLoops", json!({})),
        ("pauseLoop", json!({"loop_id": id})),
        ("resumeLoop", json!({"loop_id": id})),
        ("completeLoop", json!({})),
        ("cancelLoop", json!({"loop_id": id})),
    ]));
    h.rt.send_user_message(WS, &s, "manage").await.unwrap();
    let listed = completed(&mut events, "listLoops").await;
    assert_eq!(listed["result"]["loops"][0]["loop_id"], id.as_str());
    assert_eq!(
        completed(&mut events, "pauseLoop").await["result"]["status"],
        "paused"
    );
    assert_eq!(
        completed(&mut events, "resumeLoop").await["result"]["status"],
        "active"
    );
    let outside = completed(&mut events, "completeLoop").await;
    assert_eq!(
        outside["isError"], true,
        "completeLoop only works in a loop's turn"
    );
    assert_eq!(
        completed(&mut events, "cancelLoop").await["result"]["status"],
        "cancelled"
    );
}

#[tokio::test]
async fn memories_are_saved_found_updated_and_deleted_per_user() {
    let (h, s, mut events) = session(
        calls(&[(
            "saveMemory",
            json!({"content": "Prefers the upper deck", "tags": ["ferry"]}),
        )]),
        json!({}),
    )
    .await;
    h.rt.send_user_message(WS, &s, "remember").await.unwrap();
    let saved = completed(&mut events, "saveMemory").await;
    let id = saved["result"]["memory_id"].as_str().unwrap().to_owned();
    events.next_of("turn.completed").await;
    h.mock.push(calls(&[
        ("searchMemory", json!({"query": "deck"})),
        (
            "updateMemory",
            json!({"memory_id": id, "content": "Prefers the lower deck"}),
        ),
        ("listMemories", json!({})),
        ("deleteMemory", json!({"memory_id": id})),
    ]));
    h.rt.send_user_message(WS, &s, "again").await.unwrap();
    let found = completed(&mut events, "searchMemory").await;
    assert_eq!(found["result"]["results"][0]["memory_id"], id.as_str());
    let updated = completed(&mut events, "updateMemory").await;
    assert_eq!(updated["result"]["content"], "Prefers the lower deck");
    assert_eq!(
        completed(&mut events, "listMemories").await["result"]["total"],
        1
    );
    assert_eq!(
        completed(&mut events, "deleteMemory").await["result"]["deleted"],
        true
    );
    let (left, _) = h.rt.memories(WS, "u1", 10, 0).await.unwrap();
    assert!(left.is_empty());
}

#[tokio::test]
async fn a_sub_agent_works_reports_and_is_followed_by_its_parent() {
    // The child answers its task; the parent starts it, then lists,
    // reads and messages it, and finally reads the report.
    let mock = MockLlm::with_recorded_responder(|req| {
        let messages = req["messages"].as_array().cloned().unwrap_or_default();
        let last = messages.last().cloned().unwrap_or(Value::Null);
        let first_user = messages
            .iter()
            .find(|m| m["role"] == "user")
            .and_then(|m| m["content"].as_str())
            .unwrap_or("");
        if first_user.starts_with("[Task from your parent agent") {
            return MockReply::text("The ferry leaves at 9.");
        }
        let content = last["content"].as_str().unwrap_or("");
        if last["role"] == "user" && content == "research" {
            MockReply::call(
                "subAgent",
                json!({"title": "Ferry times", "instruction": "Find the first ferry."}),
            )
        } else if content.starts_with("[Sub-agent report]") {
            MockReply::text("The first ferry is at 9.")
        } else {
            MockReply::text("Waiting for the report.")
        }
    })
    .await
    .unwrap();
    let h = Harness::on(mock, |_| {}).await;
    h.assistant("a", json!({"name": "a", "systemPrompt": "Hi."}))
        .await;
    let s = h.session("a").await;
    let mut events = h.events(&s).await;
    h.rt.send_user_message(WS, &s, "research").await.unwrap();
    let started = events.next_of("subagent.started").await;
    let child = serde_json::to_value(started).unwrap()["subSessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let report = events.next_of("subagent.completed").await;
    assert_eq!(
        serde_json::to_value(report).unwrap()["report"],
        "The ferry leaves at 9."
    );
    events
        .until("message.completed", |v| {
            v["content"] == "The first ferry is at 9."
        })
        .await;
    let tree = h.rt.tree(WS, &s).await.unwrap();
    assert_eq!(tree.children[0].session_id, child);
}

#[tokio::test]
async fn platform_built_ins_update_state_skip_and_hand_off() {
    let built_ins = json!({
        "dynamicVariables": [{"name": "mood", "type": "string", "default": "?"}],
        "builtInTools": {
            "updateState": {"rules": [{"variable": "mood", "expression": {"type": "constant", "value": "calm"}}]},
            "skipTurn": {},
            "requestHumanHandoff": {"message": "A colleague takes over."}
        }
    });
    let (h, s, mut events) = session(
        vec![
            MockReply::call("updateState", json!({})),
            MockReply::call("skipTurn", json!({})),
        ],
        built_ins,
    )
    .await;
    h.rt.send_user_message(WS, &s, "hm").await.unwrap();
    let updated = completed(&mut events, "updateState").await;
    assert_eq!(updated["result"]["updated"]["mood"], "calm");
    events.next_of("turn.skipped").await;
    assert_eq!(h.rt.state(WS, &s).await.unwrap()["mood"], "calm");
    h.mock.push([MockReply::call(
        "requestHumanHandoff",
        json!({"reason": "asks for a person"}),
    )]);
    h.rt.send_user_message(WS, &s, "a human please")
        .await
        .unwrap();
    events.next_of("handoff.requested").await;
    events
        .until("message.completed", |v| {
            v["content"] == "A colleague takes over."
        })
        .await;
    h.rt.idle(WS, &s).await.unwrap();
    assert_eq!(
        h.rt.session(WS, &s).await.unwrap().status,
        SessionStatus::Handoff
    );
}

/// A sub-agent that reported leaves the limits and `listSubAgent` (its
/// history stays): with a limit of 8 children, 8 report and a 9th starts;
/// the tree's lifetime bound still holds.
#[tokio::test]
async fn finished_sub_agents_free_their_place() {
    let mock = MockLlm::with_recorded_responder(|req| {
        let messages = req["messages"].as_array().cloned().unwrap_or_default();
        let first_user = messages
            .iter()
            .find(|m| m["role"] == "user")
            .and_then(|m| m["content"].as_str())
            .unwrap_or("");
        if first_user.starts_with("[Task from your parent agent") {
            return MockReply::text("done");
        }
        let last = messages.last().cloned().unwrap_or(Value::Null);
        match last["content"].as_str().unwrap_or("") {
            c if last["role"] == "user" && c.starts_with("start ") => {
                MockReply::call(
                    "subAgent",
                    json!({"title": c, "instruction": "Count the ferries leaving Lisbon today and report the number."}),
                )
            }
            "list" if last["role"] == "user" => MockReply::call("listSubAgent", json!({})),
            _ => MockReply::text("ok"),
        }
    })
    .await
    .unwrap();
    let h = Harness::on(mock, |c| c.sub_agents.max_tree_total = 10).await;
    h.assistant("a", json!({"name": "a", "systemPrompt": "Hi."}))
        .await;
    let s = h.session("a").await;
    let mut events = h.events(&s).await;
    for i in 0..9 {
        h.rt.send_user_message(WS, &s, &format!("start {i}"))
            .await
            .unwrap();
        let started = serde_json::to_value(events.next_of("subagent.started").await).unwrap();
        assert_eq!(started["title"], format!("start {i}"));
        events.next_of("subagent.completed").await;
        h.rt.idle(WS, &s).await.unwrap();
    }
    // Nothing is at work: listSubAgent lists none.
    h.rt.send_user_message(WS, &s, "list").await.unwrap();
    let listed = events
        .until("tool.completed", |v| v["name"] == "listSubAgent")
        .await;
    assert_eq!(serde_json::to_value(listed).unwrap()["result"], json!([]));
    h.rt.idle(WS, &s).await.unwrap();
    // The tree made 10 sessions (the root and 9): its lifetime bound.
    h.rt.send_user_message(WS, &s, "start 10").await.unwrap();
    let refused = events
        .until("tool.completed", |v| v["name"] == "subAgent")
        .await;
    let refused = serde_json::to_value(refused).unwrap();
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(
        refused["result"]["error"]
            .as_str()
            .unwrap()
            .contains("the most one tree may"),
        "{refused}"
    );
    assert_eq!(
        h.rt.tree(WS, &s).await.unwrap().children.len(),
        9,
        "histories stay"
    );
}
