//! Sessions on workflows through the binary (design §8, scenarios 3–9):
//! the deterministic chain, the failure route and release, the `llm`
//! edge judge, a stage's scoping, the loop guard, state across stages
//! and a crash during an action — each on SQLite and PostgreSQL, with
//! the scripted model and a local HTTP target.

use std::collections::HashMap;
use std::time::Duration;

use rtc_testkit::{
    Engine, MockLlm, MockReply, OrderService, StageScript, judge_requests, stage_requests,
};
use serde_json::{Value, json};

use crate::conversation::{events_until, open};
use crate::harness::{Api, Server, start};

const EXAMPLE: &str = include_str!("fixtures/workflows/order_support_v4.json");
const TOOL: &str = include_str!("fixtures/workflows/tool_query_order.json");

use crate::harness::both;

/// The mock model and its script.
struct Model {
    mock: MockLlm,
    script: StageScript,
}

impl Model {
    async fn start(leaf: &'static str) -> anyhow::Result<Self> {
        let (mock, script) = StageScript::start(leaf).await?;
        Ok(Self { mock, script })
    }

    fn then(&self, reply: MockReply) {
        self.script.then(reply);
    }

    fn stage_requests(&self) -> Vec<Value> {
        stage_requests(&self.mock)
    }

    fn judge_requests(&self) -> Vec<Value> {
        judge_requests(&self.mock)
    }
}

async fn target(answer: Result<&'static str, u16>, delay: Duration) -> (String, OrderService) {
    let service = OrderService::start(answer, delay).await.unwrap();
    (service.base_url.clone(), service)
}

fn env(model: &Model, extra: &[(&str, &str)]) -> HashMap<String, String> {
    let mut env = HashMap::from([
        ("RTC_LLM_BASE_URL".to_owned(), model.mock.base_url.clone()),
        ("RTC_LLM_MODEL".to_owned(), "mock-model".to_owned()),
        ("RTC_ALLOW_PRIVATE_NETWORK".to_owned(), "1".to_owned()),
    ]);
    for (k, v) in extra {
        env.insert((*k).to_owned(), (*v).to_owned());
    }
    env
}

fn example() -> Value {
    serde_json::from_str(EXAMPLE).unwrap()
}

/// A workspace with the order tool at `base` and `workflow`; its id.
async fn setup(srv: &Server, base: &str, workflow: Value) -> anyhow::Result<(Api, String)> {
    let (_, ws) = srv.workspace("W").await?;
    let tool: Value = serde_json::from_str(&TOOL.replace("{{base_url}}", base))?;
    ws.create("/v1/tools", tool).await?;
    let wf = ws.create("/v1/workflows", workflow).await?;
    Ok((ws, wf["id"].as_str().unwrap().to_owned()))
}

fn ended(ev: &Value) -> bool {
    ev["type"] == "session.ended"
}

fn of<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

fn entered(events: &[Value]) -> Vec<&str> {
    of(events, "workflow.node_entered")
        .iter()
        .filter_map(|e| e["nodeId"].as_str())
        .collect()
}

async fn deterministic_chain(engine: Engine) -> anyhow::Result<()> {
    let model = Model::start("unused").await?;
    let (base, t) = target(Ok("shipped"), Duration::ZERO).await;
    let Some(srv) = start(engine, env(&model, &[])).await? else {
        return Ok(());
    };
    let (ws, wf) = setup(&srv, &base, example()).await?;
    let (s, token) = open(
        &ws,
        json!({"workflowId": wf, "dynamicVariables": {"order_id": "A-1"}}),
    )
    .await?;
    model.then(MockReply::text("hello"));
    ws.post(
        &format!("/v1/sessions/{s}/messages"),
        json!({"text": "hello"}),
    )
    .await?
    .assert_status(202);
    let events = events_until(&srv, &token, &s, 0, ended).await?;
    assert_eq!(
        entered(&events),
        ["greet", "lookup_order", "assess", "wrap_up"]
    );
    let state = of(&events, "state.updated")
        .into_iter()
        .find(|e| e["changes"]["order_status"] == "shipped");
    assert!(state.is_some(), "order_status=shipped is recorded");
    let said: Vec<&str> = of(&events, "message.completed")
        .iter()
        .filter_map(|e| e["content"].as_str())
        .collect();
    assert_eq!(said.last(), Some(&"Order A-1 is shipped. Bye!"));
    assert_eq!(events.last().unwrap()["reason"], "workflow_end");
    let called = of(&events, "tool.called");
    assert_eq!(called.len(), 1);
    assert_eq!(called[0]["origin"], "workflow");
    let arguments: Value = serde_json::from_str(called[0]["arguments"].as_str().unwrap())?;
    assert_eq!(arguments, json!({"order_id": "A-1", "tenant": "acme"}));
    assert_eq!(t.requests(), ["A-1?tenant=acme"]);
    for request in model.stage_requests() {
        let names: Vec<&str> = request["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["function"]["name"].as_str())
            .collect();
        assert!(!names.contains(&"query_order"), "{names:?}");
    }
    let session = ws.get(&format!("/v1/sessions/{s}")).await?;
    let session = session.assert_status(200);
    assert_eq!(session["status"], "ended");
    assert_eq!(session["workflowId"], wf.as_str());
    assert_eq!(session["workflow"]["currentNodeId"], "wrap_up");
    Ok(())
}
both!(deterministic_chain);

async fn failure_route(engine: Engine) -> anyhow::Result<()> {
    let model = Model::start("unused").await?;
    let (base, _t) = target(Err(500), Duration::ZERO).await;
    let Some(srv) = start(engine, env(&model, &[])).await? else {
        return Ok(());
    };
    let (ws, wf) = setup(&srv, &base, example()).await?;
    let (s, token) = open(
        &ws,
        json!({"workflowId": wf, "dynamicVariables": {"order_id": "A-1"}}),
    )
    .await?;
    ws.post(&format!("/v1/sessions/{s}/messages"), json!({"text": "hi"}))
        .await?
        .assert_status(202);
    let events = events_until(&srv, &token, &s, 0, |e| e["type"] == "handoff.requested").await?;
    assert_eq!(entered(&events), ["greet", "lookup_order", "to_human"]);
    let session = ws.get(&format!("/v1/sessions/{s}")).await?;
    let session = session.assert_status(200);
    assert_eq!(session["status"], "handoff");
    assert_eq!(session["variables"]["order_status"], "");
    let after = events.last().unwrap()["seq"].as_i64().unwrap();
    ws.post(&format!("/v1/sessions/{s}/handoff/release"), json!({}))
        .await?
        .assert_status(204);
    let rest = events_until(&srv, &token, &s, after, ended).await?;
    assert_eq!(rest.last().unwrap()["reason"], "handoff_completed");
    Ok(())
}
both!(failure_route);

async fn llm_edge(engine: Engine) -> anyhow::Result<()> {
    let model = Model::start("unused").await?;
    let (base, _t) = target(Ok("shipped"), Duration::ZERO).await;
    let Some(srv) = start(engine, env(&model, &[("RTC_SMALL_MODEL", "judge-x")])).await? else {
        return Ok(());
    };
    let (ws, wf) = setup(&srv, &base, example()).await?;
    let (s, token) = open(&ws, json!({"workflowId": wf})).await?;
    ws.post(&format!("/v1/sessions/{s}/messages"), json!({"text": "hi"}))
        .await?
        .assert_status(202);
    let events = events_until(&srv, &token, &s, 0, |e| e["type"] == "workflow.evaluated").await?;
    let evaluated = events.last().unwrap();
    assert_eq!(evaluated["taken"], Value::Null);
    assert_eq!(evaluated["llm"], json!({"wants_human": false}));
    let judged = model.judge_requests();
    assert_eq!(judged.len(), 1);
    assert_eq!(judged[0]["model"], "judge-x");
    assert!(judged[0].get("tools").is_none());
    let schema = &judged[0]["response_format"]["json_schema"]["schema"];
    assert!(
        schema["properties"].get("wants_human").is_some(),
        "{schema}"
    );
    let session = ws.get(&format!("/v1/sessions/{s}")).await?;
    assert_eq!(
        session.assert_status(200)["workflow"]["currentNodeId"],
        "greet"
    );

    model.script.set_truth(true);
    let after = evaluated["seq"].as_i64().unwrap();
    ws.post(
        &format!("/v1/sessions/{s}/messages"),
        json!({"text": "a human please"}),
    )
    .await?
    .assert_status(202);
    let rest = events_until(&srv, &token, &s, after, |e| {
        e["type"] == "handoff.requested"
    })
    .await?;
    assert_eq!(entered(&rest), ["to_human"]);
    for request in model.stage_requests() {
        for tool in request["tools"].as_array().into_iter().flatten() {
            let name = tool["function"]["name"].as_str().unwrap_or_default();
            assert!(!name.to_lowercase().contains("transfer"), "{name}");
        }
    }
    Ok(())
}
both!(llm_edge);

async fn scoping(engine: Engine) -> anyhow::Result<()> {
    let model = Model::start("unused").await?;
    let (base, _t) = target(Ok("shipped"), Duration::ZERO).await;
    let Some(srv) = start(engine, env(&model, &[])).await? else {
        return Ok(());
    };
    let mut wf = example();
    wf["nodes"][0]["entryBehavior"] = json!("respond");
    wf["nodes"][0]
        .as_object_mut()
        .unwrap()
        .remove("firstMessage");
    let (ws, greet_wf) = setup(&srv, &base, wf.clone()).await?;
    let (s, token) = open(&ws, json!({"workflowId": greet_wf})).await?;
    events_until(&srv, &token, &s, 0, |e| e["type"] == "turn.completed").await?;
    let first = &model.stage_requests()[0];
    let names: Vec<&str> = first["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert_eq!(names, ["endConversation", "updateState", "skipTurn"]);

    wf["name"] = json!("Solo");
    wf["startNodeId"] = json!("solo");
    wf["nodes"].as_array_mut().unwrap().push(json!({
        "id": "solo", "type": "agent", "prompt": "Look orders up.", "independent": true,
        "llm": {"model": "stage-y"},
        "toolBindings": [{"toolId": "tool_query_order", "argumentBindings": {
            "order_id": {"source": "model"}, "tenant": {"source": "variable", "variableName": "tenant_id"}}}]}));
    wf["edges"].as_array_mut().unwrap().push(json!({
        "id": "solo_done", "from": "solo", "to": "greet", "condition": {"type": "always"}}));
    let solo = ws.create("/v1/workflows", wf).await?;
    let before = model.stage_requests().len();
    let (s, token) = open(&ws, json!({"workflowId": solo["id"]})).await?;
    events_until(&srv, &token, &s, 0, |e| e["type"] == "turn.completed").await?;
    let request = &model.stage_requests()[before];
    assert_eq!(request["model"], "stage-y");
    let tools = request["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 1, "{tools:?}");
    assert_eq!(tools[0]["function"]["name"], "query_order");
    let props = &tools[0]["function"]["parameters"]["properties"];
    assert!(props.get("order_id").is_some() && props.get("tenant").is_none());
    let system = request["messages"][0]["content"].as_str().unwrap();
    assert_eq!(system, "Look orders up.");
    Ok(())
}
both!(scoping);

async fn loop_guard(engine: Engine) -> anyhow::Result<()> {
    let model = Model::start("unused").await?;
    let Some(srv) = start(engine, env(&model, &[])).await? else {
        return Ok(());
    };
    let (_, ws) = srv.workspace("W").await?;
    let wf = ws
        .create(
            "/v1/workflows",
            json!({"specVersion": 4, "name": "loop", "startNodeId": "a",
                "dynamicVariables": [{"name": "n", "type": "number", "default": 0}],
                "limits": {"maxVisitsPerNode": 3},
                "nodes": [
                    {"id": "a", "type": "agent", "prompt": "Talk.", "entryBehavior": "respond"},
                    {"id": "count", "type": "updateState", "rules": [{"variable": "n", "expression":
                        {"type": "add", "left": {"type": "variable", "name": "n"}, "right": {"type": "constant", "value": 1}}}]}],
                "edges": [
                    {"id": "on", "from": "a", "to": "count", "condition": {"type": "expression",
                        "expression": {"type": "ge", "left": {"type": "variable", "name": "n"}, "right": {"type": "constant", "value": 0}}}},
                    {"id": "back", "from": "count", "to": "a", "condition": {"type": "always"}}]}),
        )
        .await?;
    let (s, token) = open(&ws, json!({"workflowId": wf["id"]})).await?;
    let events = events_until(&srv, &token, &s, 0, ended).await?;
    assert!(
        of(&events, "error")
            .iter()
            .any(|e| e["code"] == "workflow_loop_limit")
    );
    assert_eq!(events.last().unwrap()["reason"], "workflow_loop_limit");
    let session = ws.get(&format!("/v1/sessions/{s}")).await?;
    assert_eq!(session.assert_status(200)["variables"]["n"], json!(3));
    assert!(model.stage_requests().len() <= 3);
    Ok(())
}
both!(loop_guard);

async fn state_across_stages(engine: Engine) -> anyhow::Result<()> {
    let model = Model::start("B-7").await?;
    let (base, t) = target(Ok("shipped"), Duration::ZERO).await;
    let Some(srv) = start(engine, env(&model, &[])).await? else {
        return Ok(());
    };
    let (ws, wf) = setup(&srv, &base, example()).await?;
    let (s, token) = open(&ws, json!({"workflowId": wf})).await?;
    model.then(MockReply::call("updateState", json!({})));
    model.then(MockReply::text("Thanks, looking it up."));
    ws.post(
        &format!("/v1/sessions/{s}/messages"),
        json!({"text": "It is B-7"}),
    )
    .await?
    .assert_status(202);
    let events = events_until(&srv, &token, &s, 0, ended).await?;
    assert!(
        of(&events, "state.updated")
            .iter()
            .any(|e| e["changes"]["order_id"] == "B-7")
    );
    assert_eq!(t.requests(), ["B-7?tenant=acme"]);
    let said: Vec<&str> = of(&events, "message.completed")
        .iter()
        .filter_map(|e| e["content"].as_str())
        .collect();
    assert_eq!(said.last(), Some(&"Order B-7 is shipped. Bye!"));
    let session = ws.get(&format!("/v1/sessions/{s}")).await?;
    let position = &session.assert_status(200)["workflow"];
    assert_eq!(position["currentNodeId"], "wrap_up");
    assert_eq!(
        position["path"],
        json!(["greet", "lookup_order", "assess", "wrap_up"])
    );
    assert_eq!(position["visits"]["greet"], 1);
    Ok(())
}
both!(state_across_stages);

async fn crash_during_action(engine: Engine) -> anyhow::Result<()> {
    let model = Model::start("unused").await?;
    let (base, t) = target(Ok("shipped"), Duration::from_secs(5)).await;
    let Some(mut srv) = start(engine, env(&model, &[])).await? else {
        return Ok(());
    };
    let (ws, wf) = setup(&srv, &base, example()).await?;
    let (s, token) = open(
        &ws,
        json!({"workflowId": wf, "dynamicVariables": {"order_id": "A-1"}}),
    )
    .await?;
    ws.post(&format!("/v1/sessions/{s}/messages"), json!({"text": "hi"}))
        .await?
        .assert_status(202);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while t.requests().is_empty() {
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "the action never ran"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let before = events_until(&srv, &token, &s, 0, |e| {
        e["type"] == "tool.called" && e["origin"] == "workflow"
    })
    .await?;
    let last_seq = before.last().unwrap()["seq"].as_i64().unwrap();
    srv = srv.kill_and_restart(&env(&model, &[])).await?;
    let ws = Api {
        base: srv.process.base_url.clone(),
        ..ws
    };
    let after = events_until(&srv, &token, &s, last_seq, |e| {
        e["type"] == "handoff.requested"
    })
    .await?;
    assert_eq!(
        after[0]["seq"].as_i64().unwrap(),
        last_seq + 1,
        "seq continues"
    );
    let completed = of(&after, "tool.completed");
    assert_eq!(completed.len(), 1);
    assert_eq!(completed[0]["isError"], true);
    assert_eq!(entered(&after), ["to_human"]);
    tokio::time::sleep(Duration::from_secs(6)).await;
    assert_eq!(t.requests().len(), 1, "the action is not run again");
    let session = ws.get(&format!("/v1/sessions/{s}")).await?;
    assert_eq!(session.assert_status(200)["status"], "handoff");
    Ok(())
}
both!(crash_during_action);

/// A user message on the WebSocket while a workflow action waits for the
/// same client's tool result: the socket still reads the result (the
/// message is taken after the action), nothing waits for the tool's
/// timeout.
async fn client_action_with_a_message_meanwhile(engine: Engine) -> anyhow::Result<()> {
    use futures::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message as Frame;

    let model = Model::start("unused").await?;
    let Some(srv) = start(engine, env(&model, &[])).await? else {
        return Ok(());
    };
    let (_, ws) = srv.workspace("W").await?;
    ws.create(
        "/v1/tools",
        json!({"id": "ask_app", "name": "ask_app", "type": "client",
        "client": {"functionName": "askApp", "waitForResponse": true, "timeoutMs": 30000}}),
    )
    .await?;
    let wf = ws
        .create(
            "/v1/workflows",
            json!({"specVersion": 4, "name": "app", "startNodeId": "greet",
                "nodes": [
                    {"id": "greet", "type": "agent", "prompt": "Greet.", "entryBehavior": "wait"},
                    {"id": "ask", "type": "action", "binding": {"toolId": "ask_app"}},
                    {"id": "talk", "type": "agent", "prompt": "Talk.", "entryBehavior": "wait"},
                    {"id": "bad", "type": "end", "reason": "app_failed"}],
                "edges": [
                    {"id": "go", "from": "greet", "to": "ask", "condition": {"type": "always"}},
                    {"id": "ok", "from": "ask", "to": "talk", "condition": {"type": "result", "success": true}},
                    {"id": "failed", "from": "ask", "to": "bad", "condition": {"type": "result", "success": false}}]}),
        )
        .await?;
    let (s, token) = open(&ws, json!({"workflowId": wf["id"]})).await?;
    let url = format!(
        "{}/v1/sessions/{s}/ws?token={token}",
        srv.process.base_url.replace("http://", "ws://")
    );
    let (mut sock, _) = tokio_tungstenite::connect_async(url).await?;
    let send = |v: Value| Frame::Text(v.to_string().into());
    sock.send(send(
        json!({"type": "client.hello", "clientTools": ["askApp"]}),
    ))
    .await?;
    sock.send(send(json!({"type": "user.message", "text": "hi"})))
        .await?;
    // Well inside the tool's 30 s timeout.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let mut second_stored = false;
    let mut action_ok = None;
    loop {
        let frame = tokio::time::timeout_at(deadline, sock.next())
            .await
            .map_err(|_| anyhow::anyhow!("the socket stalled"))?
            .ok_or_else(|| anyhow::anyhow!("the socket closed"))??;
        let Frame::Text(text) = frame else { continue };
        let ev: Value = serde_json::from_str(&text)?;
        if ev["type"] == "client_tool.call" {
            sock.send(send(
                json!({"type": "user.message", "text": "still there?"}),
            ))
            .await?;
            sock.send(send(json!({"type": "client_tool.result", "callId": ev["callId"], "result": {"ok": true}})))
                .await?;
        }
        if ev["type"] == "tool.completed" && ev["origin"] == "workflow" {
            action_ok = Some(ev["isError"] == false);
        }
        if ev["type"] == "message.completed"
            && ev["role"] == "user"
            && ev["content"] == "still there?"
        {
            // Stored at once; its turn comes after the action.
            second_stored = true;
        }
        if ev["type"] == "turn.completed" && second_stored && action_ok.is_some() {
            break;
        }
    }
    assert_eq!(
        action_ok,
        Some(true),
        "the client's result reached the action"
    );
    let session = ws.get(&format!("/v1/sessions/{s}")).await?;
    assert_eq!(
        session.assert_status(200)["workflow"]["currentNodeId"],
        "talk"
    );
    Ok(())
}
both!(client_action_with_a_message_meanwhile);
