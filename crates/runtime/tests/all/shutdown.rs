//! Graceful shutdown: running turns finish within the grace period, or
//! are checkpointed (cancelled, their state recorded) at its end.

use std::time::Duration;

use rtc_testkit::MockReply;
use serde_json::json;

use crate::harness::{Harness, WS};

async fn slow_turn(delay: Duration) -> (Harness, String) {
    let h = Harness::start(vec![MockReply::Delayed(
        delay,
        Box::new(MockReply::text("done")),
    )])
    .await;
    let a = h
        .assistant("a", json!({"name": "a", "systemPrompt": "Hi."}))
        .await;
    let s = h.session(&a).await;
    let mut events = h.events(&s).await;
    h.rt.send_user_message(WS, &s, "work").await.unwrap();
    events.next_of("turn.started").await;
    (h, s)
}

#[tokio::test]
async fn a_turn_that_ends_within_the_grace_period_finishes() {
    let (h, s) = slow_turn(Duration::from_millis(300)).await;
    let report = h.rt.shutdown(Duration::from_secs(10)).await;
    assert_eq!((report.finished, report.checkpointed), (1, 0));
    let history = h.store.messages(&s).await.unwrap();
    assert_eq!(history.last().unwrap().content, "done");
    assert!(h.rt.is_shutting_down());
}

#[tokio::test]
async fn a_turn_still_running_after_the_grace_period_is_checkpointed() {
    let (h, s) = slow_turn(Duration::from_secs(30)).await;
    let started = std::time::Instant::now();
    let report = h.rt.shutdown(Duration::from_millis(300)).await;
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!((report.finished, report.checkpointed), (0, 1));
    let stored = h.store.events_after(&s, 0, 100).await.unwrap();
    let last = serde_json::to_value(stored.last().unwrap()).unwrap();
    assert_eq!(last["type"], "turn.completed");
    assert_eq!(last["interrupted"], true);
    let record = h.store.session(WS, &s).await.unwrap().unwrap();
    assert!(!record.turn_running, "nothing left for recovery to mark");
}
