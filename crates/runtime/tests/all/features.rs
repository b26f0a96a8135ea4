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

/// Sessions on one configuration share its prepared function list only
/// where they are offered the same functions: a session without an end
/// user never gets the memory tools of one with, in either order, turn
/// after turn; a session of the same user gets the very same list.
#[tokio::test]
async fn sessions_on_one_snapshot_get_their_own_functions() {
    let h = Harness::start((0..5).map(|_| MockReply::text("a")).collect()).await;
    let a = h
        .assistant("a", json!({"name": "a", "systemPrompt": "Hi."}))
        .await;
    let of_user = |user: &str| rtc_protocol::CreateSessionParams {
        assistant_id: Some(a.clone()),
        user_id: Some(user.into()),
        ..Default::default()
    };
    let with_user = h.rt.create_session(WS, of_user("u1")).await.unwrap().id;
    let without = h.session(&a).await;
    let other_user = h.rt.create_session(WS, of_user("u2")).await.unwrap().id;
    for s in [&with_user, &without, &with_user, &without, &other_user] {
        h.rt.send_user_message(WS, s, "hello").await.unwrap();
        h.rt.idle(WS, s).await.unwrap();
    }
    for n in 0..5 {
        let offered = h.offered_tools(n);
        let memory = offered.iter().any(|t| t == "saveMemory");
        assert_eq!(memory, n % 2 == 0, "request {n}: {offered:?}");
        assert!(offered.iter().any(|t| t == "askUser"), "{offered:?}");
    }
    let requests = h.mock.requests();
    assert_eq!(requests[0]["tools"], requests[2]["tools"]);
    assert_eq!(requests[0]["tools"], requests[4]["tools"]);
    assert_eq!(requests[1]["tools"], requests[3]["tools"]);
}
