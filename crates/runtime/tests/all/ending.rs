//! `endConversation` and its goodbye (R-BI-2).

use std::time::Duration;

use rtc_protocol::SessionStatus;
use rtc_testkit::MockReply;
use serde_json::json;

use crate::harness::{Harness, WS};

fn assistant(allow_interruption: bool) -> serde_json::Value {
    json!({"name": "a", "systemPrompt": "Hi.", "builtInTools": {"endConversation": {
        "messageType": "generated", "allowEndInterruption": allow_interruption}}})
}

/// The model says goodbye slowly: the first model call ends the
/// conversation, the second (the goodbye) takes a while.
fn slow_goodbye() -> Vec<MockReply> {
    vec![
        MockReply::call("endConversation", json!({})),
        MockReply::Delayed(
            Duration::from_millis(1500),
            Box::new(MockReply::text("Goodbye!")),
        ),
    ]
}

/// With `allowEndInterruption: true`, the user speaking during the goodbye
/// calls the end off and gets an answer.
#[tokio::test]
async fn speaking_during_an_interruptible_goodbye_keeps_the_session() {
    let mut script = slow_goodbye();
    script.push(MockReply::text("Of course, what else?"));
    let h = Harness::start(script).await;
    let a = h.assistant("a", assistant(true)).await;
    let s = h.session(&a).await;
    let mut events = h.events(&s).await;
    h.rt.send_user_message(WS, &s, "bye").await.unwrap();
    events
        .until("tool.completed", |v| v["name"] == "endConversation")
        .await;
    h.rt.send_user_message(WS, &s, "wait, one more thing")
        .await
        .unwrap();
    events
        .until("message.completed", |v| {
            v["content"] == "Of course, what else?"
        })
        .await;
    h.rt.idle(WS, &s).await.unwrap();
    let session = h.rt.session(WS, &s).await.unwrap();
    assert_eq!(
        session.status,
        SessionStatus::Active,
        "the end was called off"
    );
    let seen: Vec<_> = events.collect_for(Duration::from_millis(200)).await;
    assert!(seen.iter().all(|e| e.kind() != "session.ended"));
}

/// With `allowEndInterruption: false`, the goodbye finishes and the
/// session ends; the message is kept in the history.
#[tokio::test]
async fn an_uninterruptible_goodbye_ends_the_session() {
    let h = Harness::start(slow_goodbye()).await;
    let a = h.assistant("a", assistant(false)).await;
    let s = h.session(&a).await;
    let mut events = h.events(&s).await;
    h.rt.send_user_message(WS, &s, "bye").await.unwrap();
    events
        .until("tool.completed", |v| v["name"] == "endConversation")
        .await;
    h.rt.send_user_message(WS, &s, "wait").await.unwrap();
    events.next_of("session.ended").await;
    let session = h.rt.session(WS, &s).await.unwrap();
    assert_eq!(session.status, SessionStatus::Ended);
    let history = h.rt.messages(WS, &s).await.unwrap();
    assert!(history.iter().any(|m| m.content == "wait"));
    assert!(history.iter().any(|m| m.content == "Goodbye!"));
}
