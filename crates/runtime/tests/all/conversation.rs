//! The turn loop through a bound HTTP tool, interruption by a new user
//! message, and recovery of a turn cut off by a crash (R-RN-1..4).

use std::time::Duration;

use rtc_runtime::Runtime;
use rtc_testkit::MockReply;
use serde_json::{Value, json};

use crate::harness::{Harness, WS, config};

/// A local HTTP endpoint answering `/fast` at once and `/slow` after 10 s.
async fn tool_server() -> String {
    let app = axum::Router::new()
        .route(
            "/fast",
            axum::routing::post(|body: axum::Json<Value>| async move {
                axum::Json(json!({"status": "shipped", "echo": body.0}))
            }),
        )
        .route(
            "/slow",
            axum::routing::post(|| async {
                tokio::time::sleep(Duration::from_secs(10)).await;
                axum::Json(json!({"late": true}))
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

async fn with_tool(h: &Harness, path: &str) {
    let base = tool_server().await;
    let tool: rtc_protocol::Tool = serde_json::from_value(json!({"name": "lookup_order",
        "type": "http", "description": "Look up an order.",
        "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]},
        "http": {"method": "POST", "url": format!("{base}{path}"), "body": {"id": "{{order_id}}"}}}))
    .unwrap();
    h.store.insert(WS, Some("t1".into()), tool).await.unwrap();
    h.assistant(
        "a",
        json!({"name": "a", "systemPrompt": "Help.",
            "dynamicVariables": [{"name": "status", "type": "string", "default": ""}],
            "toolBindings": [{"toolId": "t1", "argumentBindings": {"order_id": {"source": "model"}}, "resultAssignments": {"status": "status"}}]}),
    )
    .await;
}

#[tokio::test]
async fn a_turn_runs_a_bound_tool_and_feeds_its_result_back() {
    let h = Harness::start(vec![
        MockReply::call("lookup_order", json!({"order_id": "A7"})),
        MockReply::text("Your order has shipped."),
    ])
    .await;
    with_tool(&h, "/fast").await;
    let s = h.session("a").await;
    let mut events = h.events(&s).await;
    h.rt.send_user_message(WS, &s, "where is A7?")
        .await
        .unwrap();
    let done = events
        .until("tool.completed", |v| v["name"] == "lookup_order")
        .await;
    let done = serde_json::to_value(done).unwrap();
    assert_eq!(done["isError"], false, "{done}");
    assert_eq!(done["result"]["echo"]["id"], "A7");
    events.next_of("turn.completed").await;
    assert_eq!(h.rt.state(WS, &s).await.unwrap()["status"], "shipped");
    let second = &h.mock.requests()[1];
    let tool_message = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap();
    assert!(
        tool_message["content"]
            .as_str()
            .unwrap()
            .contains("shipped")
    );
    assert_eq!(h.offered_tools(0)[0], "lookup_order");
}

#[tokio::test]
async fn a_user_message_interrupts_a_running_tool_call() {
    let h = Harness::start(vec![
        MockReply::call("lookup_order", json!({"order_id": "A7"})),
        MockReply::text("Sure, never mind the order."),
    ])
    .await;
    with_tool(&h, "/slow").await;
    let s = h.session("a").await;
    let mut events = h.events(&s).await;
    h.rt.send_user_message(WS, &s, "where is A7?")
        .await
        .unwrap();
    events.next_of("tool.called").await;
    h.rt.send_user_message(WS, &s, "forget it").await.unwrap();
    let cancelled = events
        .until("tool.completed", |v| v["name"] == "lookup_order")
        .await;
    assert_eq!(serde_json::to_value(cancelled).unwrap()["cancelled"], true);
    let interrupted = events.next_of("turn.completed").await;
    assert_eq!(
        serde_json::to_value(interrupted).unwrap()["interrupted"],
        true
    );
    events
        .until("message.completed", |v| {
            v["content"] == "Sure, never mind the order."
        })
        .await;
    let second = &h.mock.requests()[1];
    let roles: Vec<&str> = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["role"].as_str())
        .collect();
    assert_eq!(
        roles,
        ["system", "user", "assistant", "tool", "user"],
        "every call has a result"
    );
}

#[tokio::test]
async fn recovery_closes_a_turn_cut_off_by_a_crash() {
    let h = Harness::start(vec![MockReply::text("Back again.")]).await;
    h.assistant("a", json!({"name": "a", "systemPrompt": "Hi."}))
        .await;
    let s = h.session("a").await;
    // What a crash mid-turn leaves: the turn marked running in the store.
    h.store.set_turn_running(&s, true).await.unwrap();
    let restarted = Runtime::new(h.store.clone(), config(&h.mock));
    assert_eq!(restarted.recover().await.unwrap(), 1);
    let stored = h.store.events_after(&s, 0, 100).await.unwrap();
    let last = serde_json::to_value(stored.last().unwrap()).unwrap();
    assert_eq!(last["type"], "turn.completed");
    assert_eq!(last["interrupted"], true);
    restarted.send_user_message(WS, &s, "hello?").await.unwrap();
    restarted.idle(WS, &s).await.unwrap();
    let history = restarted.messages(WS, &s).await.unwrap();
    assert_eq!(history.last().unwrap().content, "Back again.", "usable");
}

/// A user message whose caller stops waiting (a client that went away) is
/// stored and answered all the same, not left stored and unanswered.
#[tokio::test]
async fn a_message_whose_sender_goes_away_is_still_answered() {
    let h = Harness::start(vec![MockReply::text("Hello.")]).await;
    let a = h.assistant("a", json!({"name": "A"})).await;
    let s = h.session(&a).await;
    let mut send = Box::pin(h.rt.send_user_message(WS, &s, "Hi"));
    assert!(
        futures::poll!(&mut send).is_pending(),
        "it is under way when its caller leaves"
    );
    drop(send);
    let mut roles = Vec::new();
    for _ in 0..250 {
        roles =
            h.rt.messages(WS, &s)
                .await
                .unwrap()
                .iter()
                .map(|m| (m.role, m.content.clone()))
                .collect::<Vec<_>>();
        if roles.len() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    use rtc_protocol::MessageRole::{Assistant, User};
    assert_eq!(
        roles,
        [(User, "Hi".to_owned()), (Assistant, "Hello.".to_owned())]
    );
}
