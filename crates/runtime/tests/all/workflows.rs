//! Workflow sessions in-process (design §3): the deterministic chain to
//! an end, the failure route to a human and its release, the `llm` edge
//! judge, the loop guard and the stage's own tools.

use rtc_protocol::{CreateSessionParams, Workflow};
use rtc_testkit::{MockLlm, MockReply, OrderService, StageScript};
use serde_json::{Value, json};

use crate::harness::{Harness, WS};

const EXAMPLE: &str = include_str!("../../../cli/tests/fixtures/workflows/order_support_v4.json");
const TOOL: &str = include_str!("../../../cli/tests/fixtures/workflows/tool_query_order.json");

/// The mock model and its script.
struct Model {
    script: StageScript,
}

impl Model {
    fn then(&self, reply: MockReply) {
        self.script.then(reply);
    }
}

async fn model() -> (MockLlm, Model) {
    let (mock, script) = StageScript::start("unused").await.unwrap();
    (mock, Model { script })
}

async fn target(answer: Result<&'static str, u16>) -> (String, OrderService) {
    let service = OrderService::start(answer, std::time::Duration::ZERO)
        .await
        .unwrap();
    (service.base_url.clone(), service)
}

/// A harness with the order tool at `base` and `workflow` stored as `wf`.
async fn setup(mock: MockLlm, base: &str, workflow: Value) -> Harness {
    let h = Harness::on(mock, |_| {}).await;
    let tool: rtc_protocol::Tool =
        serde_json::from_str(&TOOL.replace("{{base_url}}", base)).unwrap();
    h.store
        .insert(WS, Some("tool_query_order".into()), tool)
        .await
        .unwrap();
    let wf: Workflow = serde_json::from_value(workflow).unwrap();
    h.store.insert(WS, Some("wf".into()), wf).await.unwrap();
    h
}

async fn start(h: &Harness, vars: Value) -> String {
    let params = CreateSessionParams {
        workflow_id: Some("wf".into()),
        dynamic_variables: serde_json::from_value(vars).unwrap(),
        ..Default::default()
    };
    h.rt.create_session(WS, params).await.unwrap().id
}

fn example() -> Value {
    serde_json::from_str(EXAMPLE).unwrap()
}

#[tokio::test]
async fn a_deterministic_chain_runs_to_its_end() {
    let (mock, m) = model().await;
    let (base, t) = target(Ok("shipped")).await;
    let h = setup(mock, &base, example()).await;
    let s = start(&h, json!({"order_id": "A-1"})).await;
    let mut events = h.events(&s).await;
    events
        .until("message.completed", |e| {
            e["content"] == "Hi, Acme support. Your order number?"
        })
        .await;
    m.then(MockReply::text("hello"));
    h.rt.send_user_message(WS, &s, "hi").await.unwrap();
    for node in ["lookup_order", "assess", "wrap_up"] {
        events
            .until("workflow.node_entered", |e| e["nodeId"] == node)
            .await;
    }
    events
        .until("message.completed", |e| {
            e["content"] == "Order A-1 is shipped. Bye!"
        })
        .await;
    let ended = events.next_of("session.ended").await;
    assert_eq!(
        serde_json::to_value(&ended).unwrap()["reason"],
        "workflow_end"
    );
    assert_eq!(t.requests(), ["A-1?tenant=acme"]);
    let offered = h.offered_tools(0);
    assert_eq!(offered, ["endConversation", "updateState", "skipTurn"]);
    let record = h.rt.session(WS, &s).await.unwrap();
    let position = record.workflow.unwrap();
    assert_eq!(position.current_node_id, "wrap_up");
    assert_eq!(
        position.path,
        ["greet", "lookup_order", "assess", "wrap_up"]
    );
    assert_eq!(record.variables["order_status"], "shipped");
}

#[tokio::test]
async fn a_failed_action_hands_off_and_the_release_ends_the_session() {
    let (mock, m) = model().await;
    let (base, _t) = target(Err(500)).await;
    let h = setup(mock, &base, example()).await;
    let s = start(&h, json!({"order_id": "A-1"})).await;
    let mut events = h.events(&s).await;
    m.then(MockReply::text("hello"));
    h.rt.send_user_message(WS, &s, "hi").await.unwrap();
    let completed = events
        .until("tool.completed", |e| e["origin"] == "workflow")
        .await;
    assert_eq!(serde_json::to_value(&completed).unwrap()["isError"], true);
    events.next_of("handoff.requested").await;
    let record = h.rt.session(WS, &s).await.unwrap();
    assert_eq!(record.status, rtc_protocol::SessionStatus::Handoff);
    assert_eq!(record.variables["order_status"], "");
    h.rt.handoff_release(WS, &s).await.unwrap();
    let ended = events.next_of("session.ended").await;
    assert_eq!(
        serde_json::to_value(&ended).unwrap()["reason"],
        "handoff_completed"
    );
}

#[tokio::test]
async fn llm_edges_are_decided_by_one_judge_call() {
    let (mock, m) = model().await;
    let (base, _t) = target(Ok("shipped")).await;
    let h = setup(mock, &base, example()).await;
    let s = start(&h, json!({})).await;
    let mut events = h.events(&s).await;
    m.then(MockReply::text("hello"));
    h.rt.send_user_message(WS, &s, "hi").await.unwrap();
    let evaluated = events.next_of("workflow.evaluated").await;
    let evaluated = serde_json::to_value(&evaluated).unwrap();
    assert_eq!(evaluated["taken"], Value::Null);
    assert_eq!(evaluated["llm"], json!({"wants_human": false}));
    let judged: Vec<Value> = h
        .mock
        .requests()
        .into_iter()
        .filter(|r| r.get("response_format").is_some())
        .collect();
    assert_eq!(judged.len(), 1, "one judge call per walk");
    assert_eq!(judged[0]["model"], "mock-small");
    assert!(judged[0].get("tools").is_none());
    assert_eq!(
        judged[0]["response_format"]["json_schema"]["schema"]["required"],
        json!(["wants_human"])
    );

    m.script.set_truth(true);
    m.then(MockReply::text("sure"));
    h.rt.send_user_message(WS, &s, "a human please")
        .await
        .unwrap();
    events
        .until("workflow.node_entered", |e| e["nodeId"] == "to_human")
        .await;
    events.next_of("handoff.requested").await;
    for request in h.mock.requests() {
        for tool in request["tools"].as_array().into_iter().flatten() {
            let name = tool["function"]["name"].as_str().unwrap_or_default();
            assert!(!name.contains("transfer"), "no transition tool: {name}");
        }
    }
}

#[tokio::test]
async fn the_loop_guard_ends_a_cycle() {
    let (mock, _m) = model().await;
    let h = setup(
        mock,
        "http://127.0.0.1:9",
        json!({"specVersion": 4, "name": "loop", "startNodeId": "a",
            "dynamicVariables": [{"name": "n", "type": "number", "default": 0}],
            "limits": {"maxVisitsPerNode": 3},
            "nodes": [
                {"id": "a", "type": "agent", "prompt": "Talk.", "entryBehavior": "respond"},
                {"id": "count", "type": "updateState", "rules": [{"variable": "n", "expression":
                    {"type": "add", "left": {"type": "variable", "name": "n"}, "right": {"type": "constant", "value": 1}}}]}],
            "edges": [
                {"id": "on", "from": "a", "to": "count", "condition": {"type": "always"}},
                {"id": "back", "from": "count", "to": "a", "condition": {"type": "always"}}]}),
    )
    .await;
    let s = start(&h, json!({})).await;
    let mut events = h.events(&s).await;
    let limit = events
        .until("error", |e| e["code"] == "workflow_loop_limit")
        .await;
    assert_eq!(
        serde_json::to_value(&limit).unwrap()["code"],
        "workflow_loop_limit"
    );
    let ended = events.next_of("session.ended").await;
    assert_eq!(
        serde_json::to_value(&ended).unwrap()["reason"],
        "workflow_loop_limit"
    );
    let record = h.rt.session(WS, &s).await.unwrap();
    assert_eq!(record.variables["n"], json!(3));
    assert!(h.mock.requests().len() <= 3, "{}", h.mock.requests().len());
}

#[tokio::test]
async fn a_transfer_gives_an_assistant_the_rest_of_the_session() {
    let (mock, m) = model().await;
    let h = setup(
        mock,
        "http://127.0.0.1:9",
        json!({"specVersion": 4, "name": "front desk", "startNodeId": "desk",
            "systemPrompt": "Front desk persona.",
            "nodes": [
                {"id": "desk", "type": "agent", "prompt": "Greet.", "entryBehavior": "wait"},
                {"id": "to_sales", "type": "transfer", "message": "Passing you to sales.",
                 "target": {"type": "assistant", "assistantId": "sales", "history": "none"}}],
            "edges": [{"id": "go", "from": "*", "to": "to_sales", "condition": {"type": "llm", "condition": "The user wants to buy"}}]}),
    )
    .await;
    h.assistant(
        "sales",
        json!({"name": "Sales", "systemPrompt": "Sales persona.", "firstMessage": "Sales here."}),
    )
    .await;
    let s = start(&h, json!({})).await;
    let mut events = h.events(&s).await;
    m.script.set_truth(true);
    m.then(MockReply::text("One moment."));
    h.rt.send_user_message(WS, &s, "I want to buy")
        .await
        .unwrap();
    events
        .until("message.completed", |e| e["content"] == "Sales here.")
        .await;
    h.rt.idle(WS, &s).await.unwrap();
    m.then(MockReply::text("Which plan?"));
    h.rt.send_user_message(WS, &s, "the big one").await.unwrap();
    events
        .until("message.completed", |e| e["content"] == "Which plan?")
        .await;
    let last = h.mock.requests().last().cloned().unwrap();
    let messages = last["messages"].as_array().unwrap();
    assert_eq!(messages[0]["content"], "Sales persona.");
    let contents: Vec<&str> = messages[1..]
        .iter()
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert_eq!(contents, ["Sales here.", "the big one"], "history: none");
    let record = h.rt.session(WS, &s).await.unwrap();
    assert_eq!(
        record.workflow.unwrap().transferred_to.as_deref(),
        Some("sales")
    );
}

#[tokio::test]
async fn a_limit_routes_to_the_error_node() {
    let (mock, _m) = model().await;
    let h = setup(
        mock,
        "http://127.0.0.1:9",
        json!({"specVersion": 4, "name": "guarded", "startNodeId": "a", "onErrorNodeId": "sorry",
            "limits": {"maxHopsPerTurn": 4},
            "nodes": [
                {"id": "a", "type": "agent", "prompt": "Talk.", "entryBehavior": "respond"},
                {"id": "router", "type": "updateState", "rules": []},
                {"id": "sorry", "type": "end", "message": "Something went wrong.", "reason": "guarded"}],
            "edges": [
                {"id": "on", "from": "a", "to": "router", "condition": {"type": "always"}},
                {"id": "back", "from": "router", "to": "a", "condition": {"type": "always"}}]}),
    )
    .await;
    let s = start(&h, json!({})).await;
    let mut events = h.events(&s).await;
    events
        .until("error", |e| e["code"] == "workflow_loop_limit")
        .await;
    events
        .until("message.completed", |e| {
            e["content"] == "Something went wrong."
        })
        .await;
    let ended = events.next_of("session.ended").await;
    assert_eq!(serde_json::to_value(&ended).unwrap()["reason"], "guarded");
}

#[tokio::test]
async fn a_turn_whose_model_failed_is_not_walked() {
    let (mock, m) = model().await;
    let h = setup(
        mock,
        "http://127.0.0.1:9",
        json!({"specVersion": 4, "name": "onward", "startNodeId": "a",
            "nodes": [
                {"id": "a", "type": "agent", "prompt": "Talk.", "entryBehavior": "wait"},
                {"id": "done", "type": "end", "reason": "moved_on"}],
            "edges": [{"id": "on", "from": "a", "to": "done", "condition": {"type": "always"}}]}),
    )
    .await;
    let s = start(&h, json!({})).await;
    let mut events = h.events(&s).await;
    m.then(MockReply::Error(500, "down".into()));
    h.rt.send_user_message(WS, &s, "hi").await.unwrap();
    events.until("error", |e| e["code"] == "llm_failed").await;
    h.rt.idle(WS, &s).await.unwrap();
    let record = h.rt.session(WS, &s).await.unwrap();
    assert_eq!(record.status, rtc_protocol::SessionStatus::Active);
    assert_eq!(record.workflow.unwrap().current_node_id, "a");
    m.then(MockReply::text("hello"));
    h.rt.send_user_message(WS, &s, "again").await.unwrap();
    let ended = events.next_of("session.ended").await;
    assert_eq!(serde_json::to_value(&ended).unwrap()["reason"], "moved_on");
}

#[tokio::test]
async fn a_test_mode_workflow_runs_its_actions_on_the_mock() {
    let (mock, m) = model().await;
    let (base, t) = target(Ok("lost")).await;
    let h = setup(mock, &base, example()).await;
    let mut tool: rtc_protocol::Tool = h.store.get(WS, "tool_query_order").await.unwrap().unwrap();
    tool.mock_response = Some(json!({"status": "shipped"}));
    h.store.update(WS, "tool_query_order", tool).await.unwrap();
    let params = CreateSessionParams {
        workflow_id: Some("wf".into()),
        dynamic_variables: serde_json::from_value(json!({"order_id": "A-1"})).unwrap(),
        test_mode: true,
        ..Default::default()
    };
    let s = h.rt.create_session(WS, params).await.unwrap().id;
    let mut events = h.events(&s).await;
    m.then(MockReply::text("hello"));
    h.rt.send_user_message(WS, &s, "hi").await.unwrap();
    let done = events
        .until("tool.completed", |e| e["origin"] == "workflow")
        .await;
    assert!(done.test_mode);
    events
        .until("message.completed", |e| {
            e["content"] == "Order A-1 is shipped. Bye!"
        })
        .await;
    assert!(
        t.requests().is_empty(),
        "the action answered from the mock: {:?}",
        t.requests()
    );
    assert_eq!(
        h.rt.session(WS, &s).await.unwrap().variables["order_status"],
        "shipped"
    );
}
