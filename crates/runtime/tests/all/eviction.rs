//! Idle session contexts leave memory (R-PF-2) and come back intact: the
//! history the model sees, the variables and the event sequence continue.

use std::time::Duration;

use futures::StreamExt;
use rtc_testkit::MockReply;
use serde_json::json;

use crate::harness::{Harness, WS};

async fn harness(script: Vec<MockReply>, ttl: Duration) -> (Harness, String) {
    let h = Harness::with(script, |c| c.kernel.idle_session_ttl = ttl).await;
    let a = h
        .assistant("asst", json!({"name": "a", "systemPrompt": "Hi."}))
        .await;
    (h, a)
}

#[tokio::test]
async fn an_evicted_session_comes_back_with_its_history_and_sequence() {
    let (h, a) = harness(
        vec![
            MockReply::text("First answer."),
            MockReply::text("Second answer."),
        ],
        Duration::ZERO,
    )
    .await;
    let (rt, mock) = (&h.rt, &h.mock);
    let id = h.session(&a).await;
    rt.send_user_message(WS, &id, "one").await.unwrap();
    rt.idle(WS, &id).await.unwrap();
    assert_eq!(rt.live_sessions(), 1);
    assert_eq!(rt.evict_idle_sessions(), 1);
    assert_eq!(rt.live_sessions(), 0);

    rt.send_user_message(WS, &id, "two").await.unwrap();
    rt.idle(WS, &id).await.unwrap();
    let second = &mock.requests()[1];
    let contents: Vec<&str> = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert_eq!(contents[1..], ["one", "First answer.", "two"]);
    let state = rt.state(WS, &id).await.unwrap();
    assert_eq!(
        state["system__turn_count"], 2,
        "variables reloaded from the store"
    );

    let events: Vec<_> = rt
        .subscribe(WS, &id, 0)
        .await
        .unwrap()
        .take_until(tokio::time::sleep(Duration::from_millis(300)))
        .collect()
        .await;
    let seqs: Vec<i64> = events.iter().map(|e| e.seq).collect();
    let expected: Vec<i64> = (1..=seqs.len() as i64).collect();
    assert_eq!(seqs, expected, "one gap-free sequence across the reload");
    assert_eq!(
        events
            .iter()
            .filter(|e| e.kind() == "turn.completed")
            .count(),
        2
    );
}

#[tokio::test]
async fn sessions_in_use_stay_in_memory() {
    let (h, a) = harness(vec![], Duration::ZERO).await;
    let rt = &h.rt;
    let watched = h.session(&a).await;
    let connected = h.session(&a).await;
    let idle = h.session(&a).await;
    let _events = rt.subscribe(WS, &watched, 0).await.unwrap();
    let _client = rt.connect_client(WS, &connected).await.unwrap();
    assert_eq!(rt.live_sessions(), 3);
    assert_eq!(rt.evict_idle_sessions(), 1, "only the unused one goes");
    rt.state(WS, &idle).await.unwrap();
    assert_eq!(rt.live_sessions(), 3, "and comes back when used");

    let (long, a) = harness(vec![], Duration::from_secs(3600)).await;
    long.session(&a).await;
    assert_eq!(long.rt.evict_idle_sessions(), 0, "not before the TTL");
}
