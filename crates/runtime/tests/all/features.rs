//! The LLM built-ins a session offers (R-API-4): every family is on unless
//! the assistant switches it off; web tools only where configured.

use rtc_testkit::MockReply;
use serde_json::json;

use crate::harness::{Harness, WS};

const FAMILIES: &[&str] = &[
    "subAgent",
    "listSubAgent",
    "getSubAgentMessage",
    "stopSubAgent",
    "sendMessageToSubAgent",
    "askUser",
    "todoWrite",
    "createGoal",
    "completeGoal",
    "cancelGoal",
    "createLoop",
    "cancelLoop",
    "completeLoop",
    "listLoops",
    "pauseLoop",
    "resumeLoop",
    "saveMemory",
    "updateMemory",
    "deleteMemory",
    "listMemories",
    "searchMemory",
];

#[tokio::test]
async fn every_family_is_on_by_default_and_each_can_be_switched_off() {
    let h = Harness::start(vec![MockReply::text("a"), MockReply::text("b")]).await;
    let plain = h
        .assistant("plain", json!({"name": "plain", "systemPrompt": "Hi."}))
        .await;
    let quiet = h
        .assistant(
            "quiet",
            json!({"name": "quiet", "systemPrompt": "Hi.", "features": {"askUser": false, "loops": false}}),
        )
        .await;
    for a in [&plain, &quiet] {
        // Memory belongs to an end user: these sessions have one.
        let params = rtc_protocol::CreateSessionParams {
            assistant_id: Some(a.clone()),
            user_id: Some("user-1".into()),
            ..Default::default()
        };
        let s = h.rt.create_session(WS, params).await.unwrap().id;
        h.rt.send_user_message(WS, &s, "hello").await.unwrap();
        h.rt.idle(WS, &s).await.unwrap();
    }
    let offered = h.offered_tools(0);
    for name in FAMILIES {
        assert!(offered.iter().any(|t| t == name), "{name} is offered");
    }
    assert!(
        !offered.iter().any(|t| t == "webSearch" || t == "webFetch"),
        "web tools need the operator's configuration"
    );
    let reduced = h.offered_tools(1);
    assert!(
        !reduced
            .iter()
            .any(|t| t == "askUser" || t.ends_with("Loop") || t == "listLoops")
    );
    assert!(reduced.iter().any(|t| t == "todoWrite"));
}

/// Memory tools are offered only to sessions with a `userId`, where their
/// calls can work.
#[tokio::test]
async fn memory_needs_an_end_user() {
    let h = Harness::start(vec![MockReply::text("a")]).await;
    let a = h
        .assistant("a", json!({"name": "a", "systemPrompt": "Hi."}))
        .await;
    let s = h.session(&a).await;
    h.rt.send_user_message(WS, &s, "hello").await.unwrap();
    h.rt.idle(WS, &s).await.unwrap();
    let offered = h.offered_tools(0);
    assert!(offered.iter().any(|t| t == "askUser"), "{offered:?}");
    assert!(!offered.iter().any(|t| t.contains("Memor")), "{offered:?}");
}
