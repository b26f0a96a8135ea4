//! R-SEC-7: what a tenant's configuration or a model can multiply stays
//! bounded: variable values (the `concat` bomb through a workflow node and
//! through the model's `updateState`), rules and `llm` leaves per update,
//! a workflow walk (always-true cycles, failing conditions reported once),
//! and the stored workflow position.

use rtc_protocol::{CreateSessionParams, Workflow};
use rtc_runtime::RuntimeError;
use rtc_testkit::MockReply;
use serde_json::{Value, json};

use crate::harness::{Harness, WS};

/// `s = concat(s, s, …)` with `copies` arguments.
fn doubling(copies: usize) -> Value {
    json!({"variable": "s", "expression": {"type": "concat",
        "args": vec![json!({"type": "variable", "name": "s"}); copies]}})
}

fn constant_true() -> Value {
    json!({"type": "expression", "expression": {"type": "constant", "value": true}})
}

/// Two updateState nodes `a` and `b` in a cycle of always-true expression
/// edges (not refused at save: only `always` cycles are) under the
/// workflow's largest limits, with an `always` way out that is never
/// taken first.
fn update_cycle(variables: Value, a_rules: Value, b_rules: Value) -> Value {
    json!({"specVersion": 4, "name": "cycle", "startNodeId": "a",
        "limits": {"maxVisitsPerNode": 1000, "maxHopsPerTurn": 1000},
        "dynamicVariables": variables,
        "nodes": [
            {"id": "a", "type": "updateState", "rules": a_rules},
            {"id": "b", "type": "updateState", "rules": b_rules},
            {"id": "out", "type": "end", "reason": "never"}],
        "edges": [
            {"id": "ab", "from": "a", "to": "b", "condition": constant_true()},
            {"id": "a_out", "from": "a", "to": "out", "condition": {"type": "always"}},
            {"id": "ba", "from": "b", "to": "a", "condition": constant_true()},
            {"id": "b_out", "from": "b", "to": "out", "condition": {"type": "always"}}]})
}

async fn store_workflow(h: &Harness, workflow: Value) {
    let wf: Workflow = serde_json::from_value(workflow).unwrap();
    h.store.insert(WS, Some("wf".into()), wf).await.unwrap();
}

async fn start_workflow(h: &Harness) -> Result<String, RuntimeError> {
    let params = CreateSessionParams {
        workflow_id: Some("wf".into()),
        ..Default::default()
    };
    Ok(h.rt.create_session(WS, params).await?.id)
}

/// Every event of `session` stored so far, as JSON.
async fn stored_events(h: &Harness, session: &str) -> Vec<Value> {
    h.rt.idle(WS, session).await.unwrap();
    h.store
        .events_after(session, 0, 100_000)
        .await
        .unwrap()
        .iter()
        .map(|e| serde_json::to_value(e).unwrap())
        .collect()
}

fn of_kind<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

/// The variable bomb of the security review through a workflow's
/// updateState node: four rules doubling `s` 500 times each. The value
/// stops at its bound, the failure is reported, the session goes on.
#[tokio::test]
async fn a_doubling_update_node_stops_at_the_value_bound() {
    let h = Harness::with(vec![], |c| c.kernel.limits.update.max_value_bytes = 4_096).await;
    store_workflow(
        &h,
        json!({"specVersion": 4, "name": "bomb", "startNodeId": "grow",
            "dynamicVariables": [{"name": "s", "type": "string", "default": "ab"}],
            "nodes": [
                {"id": "grow", "type": "updateState", "rules": vec![doubling(500); 4]},
                {"id": "wait", "type": "agent", "prompt": "Talk.", "entryBehavior": "wait"}],
            "edges": [{"id": "on", "from": "grow", "to": "wait", "condition": {"type": "always"}}]}),
    )
    .await;
    let s = start_workflow(&h).await.unwrap();
    let events = stored_events(&h, &s).await;
    let failed = of_kind(&events, "error");
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(failed[0]["code"], "update_state_failed");
    assert!(
        failed[0]["message"]
            .as_str()
            .unwrap()
            .contains("value_too_large"),
        "{}",
        failed[0]
    );
    let record = h.rt.session(WS, &s).await.unwrap();
    let value = record.variables["s"].as_str().unwrap();
    // The first rule made 1,000 bytes; the next ones were refused.
    assert_eq!(value.len(), 1_000);
    assert_eq!(record.status, rtc_protocol::SessionStatus::Active);
}

/// The same bomb through the model's `updateState`: the call answers the
/// errors; nothing grows past the bound.
#[tokio::test]
async fn the_models_update_state_cannot_grow_a_value_past_its_bound() {
    let h = Harness::with(
        vec![
            MockReply::call("updateState", json!({})),
            MockReply::text("Done."),
        ],
        |c| c.kernel.limits.update.max_value_bytes = 2_000,
    )
    .await;
    h.assistant(
        "a",
        json!({"name": "a", "systemPrompt": "Help.",
            "dynamicVariables": [{"name": "s", "type": "string", "default": "xyz"}],
            "builtInTools": {"updateState": {"description": "Grow.", "rules": vec![doubling(500); 3]}}}),
    )
    .await;
    let s = h.session("a").await;
    let mut events = h.events(&s).await;
    h.rt.send_user_message(WS, &s, "grow").await.unwrap();
    let done = events
        .until("tool.completed", |v| v["name"] == "updateState")
        .await;
    let done = serde_json::to_value(done).unwrap();
    let errors = done["result"]["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 2, "{done}");
    assert!(errors[0].as_str().unwrap().contains("value_too_large"));
    events.next_of("turn.completed").await;
    let record = h.rt.session(WS, &s).await.unwrap();
    assert_eq!(record.variables["s"].as_str().unwrap().len(), 1_500);
}

/// All of a session's variables together are bounded too: a change that
/// would pass the total is refused, the others apply.
#[tokio::test]
async fn the_total_of_a_sessions_variables_is_bounded() {
    let h = Harness::with(
        vec![
            MockReply::call("updateState", json!({})),
            MockReply::text("Done."),
        ],
        |c| {
            c.kernel.limits.update.max_value_bytes = 1_000;
            c.kernel.limits.update.max_variables_bytes = 2_500;
        },
    )
    .await;
    let fill = |v: &str| json!({"variable": v, "expression": {"type": "constant", "value": "x".repeat(900)}});
    h.assistant(
        "a",
        json!({"name": "a", "systemPrompt": "Help.",
            "dynamicVariables": [
                {"name": "a", "type": "string"}, {"name": "b", "type": "string"},
                {"name": "c", "type": "string"}],
            "builtInTools": {"updateState": {"description": "Fill.", "rules": [fill("a"), fill("b"), fill("c")]}}}),
    )
    .await;
    let s = h.session("a").await;
    let mut events = h.events(&s).await;
    h.rt.send_user_message(WS, &s, "fill").await.unwrap();
    let done = events
        .until("tool.completed", |v| v["name"] == "updateState")
        .await;
    let done = serde_json::to_value(done).unwrap();
    assert_eq!(
        done["result"]["updated"].as_object().unwrap().len(),
        2,
        "{done}"
    );
    assert!(
        done["result"]["errors"][0]
            .as_str()
            .unwrap()
            .contains("variables_too_large"),
        "{done}"
    );
    // Values given at start are held to the same bounds.
    let params = CreateSessionParams {
        assistant_id: Some("a".into()),
        dynamic_variables: serde_json::from_value(json!({"a": "x".repeat(2_000)})).unwrap(),
        ..Default::default()
    };
    match h.rt.create_session(WS, params).await {
        Err(RuntimeError::Invalid(e)) => {
            assert_eq!(
                (e.code, e.field.as_str()),
                ("value_too_large", "dynamicVariables.a")
            )
        }
        other => panic!("expected value_too_large, got {other:?}"),
    }
}

/// Rules and `llm` leaves per update are bounded at save (and at session
/// start, for a configuration stored before the bound).
#[tokio::test]
async fn rules_and_llm_leaves_per_update_are_refused_past_their_bounds() {
    let h = Harness::with(vec![], |c| {
        c.kernel.limits.update.max_rules = 5;
        c.kernel.limits.update.max_llm_leaves = 2;
    })
    .await;
    let leaf = json!({"type": "llm", "prompt": "Name?", "outputType": "string"});
    let leafy =
        json!({"variable": "s", "expression": {"type": "concat", "args": [leaf, leaf, leaf]}});
    for (rules, code) in [
        (vec![doubling(2); 6], "too_many_rules"),
        (vec![leafy], "too_many_llm_leaves"),
    ] {
        let assistant: rtc_protocol::Assistant = serde_json::from_value(json!({
            "name": "a", "systemPrompt": "Help.",
            "dynamicVariables": [{"name": "s", "type": "string"}],
            "builtInTools": {"updateState": {"description": "u", "rules": rules}}}))
        .unwrap();
        match h.rt.validate_assistant(WS, &assistant, None).await {
            Err(RuntimeError::Invalid(e)) => {
                assert_eq!(e.code, code);
                assert_eq!(e.field, "builtInTools.updateState.rules");
            }
            other => panic!("expected {code}, got {other:?}"),
        }
    }
    store_workflow(
        &h,
        json!({"specVersion": 4, "name": "many", "startNodeId": "u",
            "dynamicVariables": [{"name": "s", "type": "string", "default": "a"}],
            "nodes": [{"id": "u", "type": "updateState", "rules": vec![doubling(2); 6]},
                {"id": "done", "type": "end", "reason": "done"}],
            "edges": [{"id": "e", "from": "u", "to": "done", "condition": {"type": "always"}}]}),
    )
    .await;
    match start_workflow(&h).await {
        Err(RuntimeError::Invalid(e)) => assert_eq!(e.code, "too_many_rules"),
        other => panic!("expected too_many_rules, got {other:?}"),
    }
}

/// A cycle of updateState nodes over always-true expression edges (not
/// refused at save: only `always` cycles are) under the workflow's largest
/// limits is cut by the server's walk bound, with one event trail of
/// bounded length; the position keeps the last entries and their count.
#[tokio::test]
async fn an_always_true_cycle_is_cut_by_the_walk_bound() {
    let h = Harness::with(vec![], |c| c.feature_limits.max_walk_hops = 60).await;
    store_workflow(
        &h,
        update_cycle(
            json!([{"name": "n", "type": "number", "default": 0}]),
            json!([{"variable": "n", "expression":
                {"type": "add", "left": {"type": "variable", "name": "n"}, "right": {"type": "constant", "value": 1}}}]),
            json!([]),
        ),
    )
    .await;
    let s = start_workflow(&h).await.unwrap();
    let events = stored_events(&h, &s).await;
    let errors = of_kind(&events, "error");
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0]["code"], "workflow_walk_limit");
    assert_eq!(of_kind(&events, "workflow.node_entered").len(), 60);
    assert!(events.len() < 300, "{} events", events.len());
    let record = h.rt.session(WS, &s).await.unwrap();
    assert_eq!(record.status, rtc_protocol::SessionStatus::Ended);
    assert_eq!(record.end_reason.as_deref(), Some("workflow_walk_limit"));
    let position = record.workflow.unwrap();
    assert_eq!(position.path.len(), rtc_protocol::PATH_KEPT);
    assert_eq!(position.path_length, 60);
    assert_eq!(position.path.last().map(String::as_str), Some("b"));
}

/// A cycle that flips a variable beside a large one records the whole
/// snapshot at each update (its `state.updated` and the session row): the
/// walk is cut by the bytes it recorded, well before its hop bound.
#[tokio::test]
async fn a_cycle_of_large_snapshots_is_cut_by_the_walk_state_bound() {
    let h = Harness::with(vec![], |c| {
        c.feature_limits.max_walk_state_bytes = 256 * 1024;
    })
    .await;
    let big = "x".repeat(12 * 1024);
    store_workflow(
        &h,
        update_cycle(
            json!([
                {"name": "big", "type": "string", "default": big},
                {"name": "f", "type": "boolean", "default": false}]),
            json!([{"variable": "f", "expression": {"type": "constant", "value": true}}]),
            json!([{"variable": "f", "expression": {"type": "constant", "value": false}}]),
        ),
    )
    .await;
    let s = start_workflow(&h).await.unwrap();
    let events = stored_events(&h, &s).await;
    let errors = of_kind(&events, "error");
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0]["code"], "workflow_walk_limit");
    assert!(
        errors[0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("RTC_MAX_WALK_STATE_BYTES")),
        "{errors:?}"
    );
    // 256 KiB of snapshots counted twice (event and row): about ten
    // updates of 12 KiB, never the 200 the hop bound would allow.
    let updates = of_kind(&events, "state.updated").len();
    assert!((8..=14).contains(&updates), "{updates} updates");
}

/// A failing edge condition on a cycle is reported once per walk, not
/// once per hop and edge.
#[tokio::test]
async fn a_failing_condition_is_reported_once_per_walk() {
    let h = Harness::with(vec![], |_| {}).await;
    let failing = json!({"type": "expression", "expression": {"type": "eq",
        "left": {"type": "div", "left": {"type": "constant", "value": 1}, "right": {"type": "constant", "value": 0}},
        "right": {"type": "constant", "value": 1}}});
    let mut edges: Vec<Value> = (0..20)
        .map(|i| json!({"id": format!("bad{i}"), "from": "a", "to": "b", "condition": failing}))
        .collect();
    edges.push(json!({"id": "ab", "from": "a", "to": "b", "condition": {"type": "always"}}));
    edges.push(json!({"id": "ba", "from": "b", "to": "a", "condition": constant_true()}));
    edges.push(json!({"id": "b_out", "from": "b", "to": "out", "condition": {"type": "always"}}));
    store_workflow(
        &h,
        json!({"specVersion": 4, "name": "failing", "startNodeId": "a",
            "limits": {"maxHopsPerTurn": 30},
            "nodes": [{"id": "a", "type": "updateState", "rules": []},
                {"id": "b", "type": "updateState", "rules": []},
                {"id": "out", "type": "end", "reason": "never"}],
            "edges": edges}),
    )
    .await;
    let s = start_workflow(&h).await.unwrap();
    let events = stored_events(&h, &s).await;
    let codes: Vec<&str> = of_kind(&events, "error")
        .iter()
        .map(|e| e["code"].as_str().unwrap())
        .collect();
    assert_eq!(codes, ["workflow_condition_failed", "workflow_loop_limit"]);
}
