//! Loops at the runtime's level (R-LP-3, R-LP-4).

use std::time::Duration;

use rtc_protocol::LoopStatus;
use rtc_testkit::{MockLlm, MockReply};
use serde_json::{Value, json};

use crate::harness::{Harness, WS};

/// The last message of a request.
fn last(req: &Value) -> &Value {
    req["messages"]
        .as_array()
        .and_then(|m| m.last())
        .unwrap_or(&Value::Null)
}

/// The id of the loop `createLoop` answered with earlier in the request.
fn created_loop(req: &Value) -> String {
    req["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "tool")
        .find_map(|m| {
            let result: Value = serde_json::from_str(m["content"].as_str()?).ok()?;
            result["loop_id"].as_str().map(str::to_owned)
        })
        .unwrap_or_default()
}

/// Pauses the loop on "pause it", calls `first` on other user messages, answers a tick with text, and
/// says "ok" after any tool result.
fn loop_model(first: MockReply) -> impl Fn(&Value) -> MockReply + Send + Sync + 'static {
    move |req| {
        let m = last(req);
        let content = m["content"].as_str().unwrap_or("");
        if m["role"] == "tool" {
            MockReply::text("ok")
        } else if content == "pause it" {
            MockReply::call("pauseLoop", json!({"loop_id": created_loop(req)}))
        } else if content.starts_with("[Loop") {
            MockReply::text("tick done")
        } else {
            first.clone()
        }
    }
}

/// A loop ticking while a client is connected (a host on the WebSocket)
/// runs its two ticks and is exhausted: each tick waits for its own turn
/// to end, not for a counter the turn bumps while it still runs.
#[tokio::test]
async fn loop_ticks_finish_with_a_client_connected() {
    let create = MockReply::call(
        "createLoop",
        json!({"prompt": "check", "interval_seconds": 1, "max_turns": 2}),
    );
    let mock = MockLlm::with_recorded_responder(loop_model(create))
        .await
        .unwrap();
    let h = Harness::on(mock, |_| {}).await;
    let a = h
        .assistant("a", json!({"name": "a", "systemPrompt": "Hi."}))
        .await;
    let s = h.session(&a).await;
    let _client = h.rt.connect_client(WS, &s).await.unwrap();
    let mut events = h.events(&s).await;
    h.rt.send_user_message(WS, &s, "start a loop")
        .await
        .unwrap();
    let done = events
        .until("loop.updated", |v| v["loop"]["status"] == "exhausted")
        .await;
    let rtc_protocol::EventBody::LoopUpdated(done) = done.body else {
        unreachable!()
    };
    assert_eq!(done.loop_.turns_done, 2);
    assert_eq!(done.loop_.reason.as_deref(), Some("max_turns (2) reached"));
    let loops = h.rt.loops(WS, &s).await.unwrap();
    assert_eq!(loops[0].status, LoopStatus::Exhausted);
    let ticks = h
        .mock
        .requests()
        .iter()
        .filter(|r| {
            last(r)["content"]
                .as_str()
                .is_some_and(|c| c.starts_with("[Loop"))
        })
        .count();
    assert_eq!(ticks, 2, "two tick turns reached the model");
}

/// A paused loop, and an active one between distant ticks, expire at
/// their deadline (R-LP-4).
#[tokio::test]
async fn paused_and_waiting_loops_expire() {
    for pause in [true, false] {
        let create = MockReply::call(
            "createLoop",
            json!({"prompt": "check", "interval_seconds": 3600}),
        );
        let mock = MockLlm::with_recorded_responder(loop_model(create))
            .await
            .unwrap();
        let h = Harness::on(mock, |c| {
            c.loops.max_lifetime = Duration::from_millis(1500);
        })
        .await;
        let a = h
            .assistant("a", json!({"name": "a", "systemPrompt": "Hi."}))
            .await;
        let s = h.session(&a).await;
        let mut events = h.events(&s).await;
        h.rt.send_user_message(WS, &s, "start").await.unwrap();
        let created = events
            .until("loop.updated", |v| v["loop"]["status"] == "active")
            .await;
        let id = serde_json::to_value(&created).unwrap()["loop"]["id"]
            .as_str()
            .unwrap()
            .to_owned();
        if pause {
            events.next_of("turn.completed").await;
            h.rt.send_user_message(WS, &s, "pause it").await.unwrap();
            events
                .until("loop.updated", |v| v["loop"]["status"] == "paused")
                .await;
        }
        let expired = events
            .until("loop.updated", |v| v["loop"]["status"] == "exhausted")
            .await;
        let v = serde_json::to_value(&expired).unwrap();
        assert_eq!(v["loop"]["id"], id.as_str());
        assert_eq!(v["loop"]["reason"], "the loop expired");
        assert_eq!(v["loop"]["turnsDone"], 0, "no tick ran");
    }
}

/// After a crash, a loop tick never starts before recovery has closed the
/// turn the crash cut off in its session, even when the embedder calls
/// `recover` late (here 300 ms after the runtime started): otherwise the
/// tick's turn runs beside a turn the store still shows as running, and
/// recovery then records that turn's end in the middle of the tick's (or
/// finds nothing left to close).
#[tokio::test]
async fn loop_ticks_wait_for_recovery() {
    let mock = MockLlm::with_recorded_responder(|_| MockReply::text("tick done"))
        .await
        .unwrap();
    let h = Harness::on(mock, |_| {}).await;
    let a = h
        .assistant("a", json!({"name": "a", "systemPrompt": "Hi."}))
        .await;
    let s = h.session(&a).await;
    // The first process dies (nothing of it runs any more), leaving a turn
    // marked running and a loop of the session that is due.
    h.rt.shutdown(Duration::ZERO).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    h.store.set_turn_running(&s, true).await.unwrap();
    let now = rtc_store::now_millis();
    let loop_id = rtc_store::new_id("loop");
    h.store
        .insert_loop(&rtc_store::LoopRecord {
            id: loop_id.clone(),
            session_id: s.clone(),
            prompt: "tick".into(),
            interval_ms: 60_000,
            max_turns: 10,
            turns_done: 0,
            skipped_ticks: 0,
            status: LoopStatus::Active,
            reason: None,
            expires_at: now + 3_600_000,
            next_tick_at: now,
            created_at: now,
            updated_at: now,
        })
        .await
        .unwrap();
    let restarted = rtc_runtime::Runtime::new(h.store.clone(), crate::harness::config(&h.mock));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        restarted.recover().await.unwrap(),
        1,
        "the cut-off turn is closed"
    );
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !h
        .store
        .loop_ticks(&loop_id)
        .await
        .unwrap()
        .iter()
        .any(|t| t.outcome.as_deref() == Some("ran"))
    {
        assert!(tokio::time::Instant::now() < deadline, "the tick never ran");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    restarted.idle(WS, &s).await.unwrap();
    let kinds: Vec<String> = h
        .store
        .events_after(&s, 0, 100)
        .await
        .unwrap()
        .iter()
        .map(|e| {
            let v = serde_json::to_value(e).unwrap();
            match v["reason"].as_str() {
                Some(r) => format!("{} ({r})", v["type"].as_str().unwrap()),
                None => v["type"].as_str().unwrap().to_owned(),
            }
        })
        .filter(|k| k.starts_with("turn."))
        .collect();
    assert_eq!(
        kinds,
        [
            "turn.completed (the server restarted during the turn)",
            "turn.started",
            "turn.completed"
        ],
        "the crashed turn is closed before the tick's turn starts"
    );
}

/// The source documents' pattern, "a goal in a loop so the AI checks a
/// condition periodically" (R-GL-4): the goal created in the first tick
/// is judged after each later tick, starts no turns of its own, and each
/// judged turn counts toward its `max_turns`; the ticks all run.
#[tokio::test]
async fn a_goal_created_in_a_tick_is_checked_at_the_ticks() {
    let judged = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let counter = judged.clone();
    let mock = MockLlm::with_recorded_responder(move |req| {
        let system = req["messages"][0]["content"].as_str().unwrap_or("");
        if system.starts_with("You judge whether a goal's condition holds") {
            // Holds at the third judgement.
            let n = counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
            return MockReply::text(&format!(
                "{{\"satisfied\": {}, \"reason\": \"judgement {n}\"}}",
                n >= 3
            ));
        }
        let m = last(req);
        let content = m["content"].as_str().unwrap_or("");
        if m["role"] == "tool" {
            MockReply::text("ok")
        } else if content.contains("turn 1 of") {
            MockReply::call(
                "createGoal",
                json!({"condition": "the build is green", "max_turns": 10}),
            )
        } else if content.starts_with("[Loop") {
            MockReply::text("still red")
        } else {
            MockReply::call(
                "createLoop",
                json!({"prompt": "check the build", "interval_seconds": 1, "max_turns": 5}),
            )
        }
    })
    .await
    .unwrap();
    let h = Harness::on(mock, |_| {}).await;
    let a = h
        .assistant(
            "a",
            json!({"name": "a", "systemPrompt": "Watch the build.", "features": {"goals": true}}),
        )
        .await;
    let s = h.session(&a).await;
    let mut events = h.events(&s).await;
    h.rt.send_user_message(WS, &s, "watch the build")
        .await
        .unwrap();
    let done = events
        .until("goal.updated", |v| v["goal"]["status"] == "completed")
        .await;
    let rtc_protocol::EventBody::GoalUpdated(done) = done.body else {
        unreachable!()
    };
    // Judged after ticks 2, 3 and 4: three turns, none of its own.
    assert_eq!(done.goal.completed_turns, 3);
    assert!(done.goal.loop_id.is_some());
    let requests = h.mock.requests();
    let continuations = requests.iter().filter(|r| {
        last(r)["content"]
            .as_str()
            .is_some_and(|c| c.starts_with("[Goal"))
    });
    assert_eq!(continuations.count(), 0, "no continuation turns");
    // The fourth tick is recorded once its turn (and the judging) is over.
    let ticked = events
        .until("loop.updated", |v| v["loop"]["turnsDone"] == 4)
        .await;
    let rtc_protocol::EventBody::LoopUpdated(ticked) = ticked.body else {
        unreachable!()
    };
    assert_eq!(ticked.loop_.skipped_ticks, 0, "no tick skipped");
}
