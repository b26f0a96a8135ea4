//! R-SEC-6 bounds: active sessions per workspace, a human agent's message,
//! an end reason, and the tool result one `tool.completed` event records.

use rtc_protocol::{CreateSessionParams, SessionStatus};
use rtc_runtime::RuntimeError;
use rtc_testkit::MockReply;
use serde_json::json;

use crate::harness::{Harness, WS};

/// A local HTTP endpoint whose answer is 5,000 bytes of `x` and more.
async fn big_tool_server() -> String {
    let app = axum::Router::new().route(
        "/big",
        axum::routing::post(|| async {
            axum::Json(json!({"data": "x".repeat(5_000), "end": "é"}))
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

#[tokio::test]
async fn a_long_tool_result_is_cut_in_its_event_but_not_for_the_model() {
    let h = Harness::with(
        vec![
            MockReply::call("fetch_big", json!({})),
            MockReply::text("Done."),
            MockReply::text("Still here."),
        ],
        |c| {
            c.kernel.limits.max_event_result_bytes = 1_000;
            c.kernel.limits.max_replayed_result_bytes = 2_000;
        },
    )
    .await;
    let base = big_tool_server().await;
    let tool: rtc_protocol::Tool = serde_json::from_value(json!({"name": "fetch_big",
        "type": "http", "description": "Fetch.",
        "http": {"method": "POST", "url": format!("{base}/big")}}))
    .unwrap();
    h.store.insert(WS, Some("t1".into()), tool).await.unwrap();
    h.assistant(
        "a",
        json!({"name": "a", "systemPrompt": "Help.", "toolBindings": [{"toolId": "t1"}]}),
    )
    .await;
    let s = h.session("a").await;
    let mut events = h.events(&s).await;
    h.rt.send_user_message(WS, &s, "go").await.unwrap();
    let done = events
        .until("tool.completed", |v| v["name"] == "fetch_big")
        .await;
    let done = serde_json::to_value(done).unwrap();
    assert_eq!(done["truncated"], true, "{done}");
    let cut = done["result"].as_str().unwrap();
    assert!(
        cut.len() <= 1_000 && cut.starts_with("{\"data\":\"xxx"),
        "{cut}"
    );
    events.next_of("turn.completed").await;
    let second = &h.mock.requests()[1];
    let tool_message = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap();
    let content = tool_message["content"].as_str().unwrap();
    assert!(
        content.contains(&"x".repeat(5_000)),
        "the model reads it all"
    );
    // A short result is recorded whole, without the marker.
    let short =
        rtc_protocol::ToolCompleted::new("c", "n", false, json!({"ok": true})).capped(1_000);
    let short = serde_json::to_value(short).unwrap();
    assert_eq!(short["result"], json!({"ok": true}));
    assert!(short.get("truncated").is_none(), "{short}");
    // A later turn's request carries it cut, with a marker.
    h.rt.send_user_message(WS, &s, "and now?").await.unwrap();
    events.next_of("turn.completed").await;
    let third = &h.mock.requests()[2];
    let replayed = third["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(replayed.len() < 2_200, "{}", replayed.len());
    assert!(
        replayed.contains("more bytes not shown again"),
        "{replayed}"
    );
}

#[tokio::test]
async fn a_workspace_has_at_most_its_active_sessions() {
    let h = Harness::with(vec![], |c| c.kernel.limits.max_active_sessions = 2).await;
    h.assistant("a", json!({"name": "a", "systemPrompt": "Help."}))
        .await;
    let first = h.session("a").await;
    h.session("a").await;
    let params = || CreateSessionParams {
        assistant_id: Some("a".into()),
        ..Default::default()
    };
    match h.rt.create_session(WS, params()).await {
        Err(RuntimeError::TooMany { code, message }) => {
            assert_eq!(code, "too_many_sessions");
            assert!(message.contains('2'), "{message}");
        }
        other => panic!("expected too_many_sessions, got {other:?}"),
    }
    h.rt.end(WS, &first, None).await.unwrap();
    h.rt.create_session(WS, params()).await.unwrap();
}

#[tokio::test]
async fn end_reasons_and_human_messages_are_bounded() {
    let h = Harness::with(vec![], |c| {
        c.kernel.limits.max_message_bytes = 1_000;
        c.kernel.limits.max_end_reason_chars = 10;
    })
    .await;
    h.assistant("a", json!({"name": "a", "systemPrompt": "Help."}))
        .await;
    let s = h.session("a").await;
    let field = |e: RuntimeError| match e {
        RuntimeError::Invalid(v) => (v.code, v.field),
        other => panic!("expected a validation error, got {other:?}"),
    };
    let long_text = "a".repeat(1_001);
    assert_eq!(
        field(h.rt.handoff_message(WS, &s, &long_text).await.unwrap_err()),
        ("invalid_text", "text".to_owned())
    );
    assert_eq!(
        field(h.rt.handoff_message(WS, &s, " ").await.unwrap_err()),
        ("invalid_text", "text".to_owned())
    );
    let long_reason = "é".repeat(11);
    assert_eq!(
        field(h.rt.end(WS, &s, Some(long_reason)).await.unwrap_err()),
        ("invalid_reason", "reason".to_owned())
    );
    let session = h.rt.session(WS, &s).await.unwrap();
    assert_ne!(session.status, SessionStatus::Ended);
    h.rt.end(WS, &s, Some("é".repeat(10))).await.unwrap();
}

/// R-SEC-7: a session's history has a byte budget; past it new input is
/// refused (`history_full`, the message is not stored) and the session
/// stays readable.
#[tokio::test]
async fn a_full_history_takes_no_more_input() {
    let h = Harness::with((0..20).map(|_| MockReply::text("ok")).collect(), |c| {
        c.kernel.limits.max_history_bytes = 6_300;
        c.kernel.limits.history_memory_bytes = 1_000;
    })
    .await;
    h.assistant("a", json!({"name": "a", "systemPrompt": "Help."}))
        .await;
    let s = h.session("a").await;
    let text = "x".repeat(1_000);
    let mut sent = 0;
    let refused = loop {
        match h.rt.send_user_message(WS, &s, &text).await {
            Ok(_) => {
                sent += 1;
                h.rt.idle(WS, &s).await.unwrap();
            }
            Err(e) => break e,
        }
        assert!(sent < 20, "the history never filled up");
    };
    match refused {
        RuntimeError::Conflict { code, .. } => assert_eq!(code, "history_full"),
        other => panic!("expected history_full, got {other:?}"),
    }
    assert_eq!(sent, 5, "five messages of 1,000 bytes fit, not six");
    let messages = h.rt.messages(WS, &s).await.unwrap();
    let users = messages
        .iter()
        .filter(|m| m.role == rtc_protocol::MessageRole::User)
        .count();
    assert_eq!(users, 5, "the refused message was not stored");
    assert!(matches!(
        h.rt.send_user_message(WS, &s, "again").await,
        Err(RuntimeError::Conflict {
            code: "history_full",
            ..
        })
    ));
}
