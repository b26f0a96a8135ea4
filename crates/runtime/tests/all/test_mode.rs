//! Test mode (R-BX-10): tools answer their mocks and nothing but the model
//! is called; conversation tests run on it and are judged.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rtc_protocol::{
    ConversationTest, CreateSessionParams, TestRun, TestRunStatus, TestSuiteRun, TestSuiteStatus,
};
use rtc_runtime::RuntimeError;
use rtc_store::{ResourceKind, TestTarget};
use rtc_testkit::MockReply;
use serde_json::{Value, json};

use crate::harness::{Harness, WS};

/// A local HTTP endpoint that counts the requests it gets.
async fn counting_server() -> (String, Arc<AtomicUsize>) {
    let hits = Arc::new(AtomicUsize::new(0));
    let seen = hits.clone();
    let app = axum::Router::new().fallback(move || {
        let seen = seen.clone();
        async move {
            seen.fetch_add(1, Ordering::SeqCst);
            axum::Json(json!({"status": "real"}))
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}"), hits)
}

fn order_is(id: &str) -> Value {
    json!({"type": "eq", "left": {"type": "variable", "name": "order_id"}, "right": {"type": "constant", "value": id}})
}

/// An assistant bound to `lookup_order` (HTTP, with mock cases),
/// `no_mock` (HTTP without one) and `show_card` (a client tool).
async fn setup(h: &Harness) -> Arc<AtomicUsize> {
    let (base, hits) = counting_server().await;
    let tools = [
        (
            "t1",
            json!({"name": "lookup_order", "type": "http",
            "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]},
            "http": {"method": "GET", "url": format!("{base}/orders/{{{{order_id}}}}")},
            "mockResponse": [{"when": order_is("A1"), "response": {"status": "shipped"}}, {"response": {"status": "unknown"}}]}),
        ),
        (
            "t2",
            json!({"name": "no_mock", "type": "http",
            "parameters": {"type": "object", "properties": {}},
            "http": {"method": "POST", "url": format!("{base}/x")}}),
        ),
        (
            "t3",
            json!({"name": "show_card", "type": "client",
            "parameters": {"type": "object", "properties": {}},
            "client": {"functionName": "showCard"}, "mockResponse": {"shown": true}}),
        ),
    ];
    for (id, tool) in tools {
        let tool: rtc_protocol::Tool = serde_json::from_value(tool).unwrap();
        h.store.insert(WS, Some(id.into()), tool).await.unwrap();
    }
    h.assistant(
        "a",
        json!({"name": "a", "systemPrompt": "Help.",
            "dynamicVariables": [{"name": "status", "type": "string", "default": ""}],
            "toolBindings": [
                {"toolId": "t1", "argumentBindings": {"order_id": {"source": "model"}}, "resultAssignments": {"status": "status"}},
                {"toolId": "t2"}, {"toolId": "t3"}]}),
    )
    .await;
    hits
}

#[tokio::test]
async fn tools_answer_their_mocks_and_no_request_leaves() {
    let h = Harness::start(vec![
        MockReply::ToolCalls(vec![
            ("lookup_order".into(), json!({"order_id": "A1"})),
            ("no_mock".into(), json!({})),
            ("show_card".into(), json!({})),
        ]),
        MockReply::call("lookup_order", json!({"order_id": "B2"})),
        MockReply::text("Done."),
    ])
    .await;
    let hits = setup(&h).await;
    let params = CreateSessionParams {
        assistant_id: Some("a".into()),
        test_mode: true,
        ..Default::default()
    };
    let s = h.rt.create_session(WS, params).await.unwrap().id;
    let mut events = h.events(&s).await;
    h.rt.send_user_message(WS, &s, "where is A1?")
        .await
        .unwrap();
    let mut results = Vec::new();
    for _ in 0..4 {
        let done = events.next_of("tool.completed").await;
        assert!(done.test_mode, "every event is marked");
        results.push(serde_json::to_value(done).unwrap());
    }
    events.next_of("turn.completed").await;
    let by_name = |name: &str| {
        results
            .iter()
            .filter(|r| r["name"] == name)
            .cloned()
            .collect::<Vec<_>>()
    };
    let lookups = by_name("lookup_order");
    assert_eq!(
        lookups[0]["result"],
        json!({"status": "shipped"}),
        "{lookups:?}"
    );
    assert_eq!(
        lookups[1]["result"],
        json!({"status": "unknown"}),
        "the default case"
    );
    let no_mock = &by_name("no_mock")[0];
    assert_eq!(no_mock["isError"], true);
    assert!(
        no_mock["result"]
            .to_string()
            .contains("no mock response configured"),
        "{no_mock}"
    );
    assert_eq!(
        by_name("show_card")[0]["result"],
        json!({"shown": true}),
        "no client needed"
    );
    assert_eq!(
        h.rt.state(WS, &s).await.unwrap()["status"],
        "unknown",
        "assignments run"
    );
    assert_eq!(
        hits.load(Ordering::SeqCst),
        0,
        "the tool endpoint saw no request"
    );
    let stored = h.store.events_after(&s, 0, 1000).await.unwrap();
    assert!(
        stored.iter().all(|e| e.test_mode),
        "stored events keep the mark"
    );
    let session = h.rt.session(WS, &s).await.unwrap();
    let config: serde_json::Value = serde_json::from_str(&session.config).unwrap();
    assert_eq!(config["test"], json!({}));
}

fn case(v: Value) -> ConversationTest {
    serde_json::from_value(v).unwrap()
}

#[tokio::test]
async fn a_conversation_test_runs_scripted_and_is_judged() {
    let h = Harness::start(vec![
        MockReply::call("lookup_order", json!({"order_id": "A1"})),
        MockReply::text("Your order A1 is delayed."),
        MockReply::text(r#"{"pass": true, "reason": "it says delayed"}"#),
        // The second run: no tool call, the judge disagrees.
        MockReply::text("I cannot tell."),
        MockReply::text(r#"{"pass": false, "reason": "no status given"}"#),
    ])
    .await;
    let hits = setup(&h).await;
    let target = TestTarget {
        kind: ResourceKind::Assistant,
        id: "a",
    };
    let test = h
        .store
        .insert_test(WS, target, case(json!({
            "name": "delayed order",
            "turns": ["Where is my order A1?"],
            "toolResponses": {"lookup_order": [{"response": {"status": "delayed"}}]},
            "expect": {
                "toolCalls": [{"name": "lookup_order", "arguments": {"order_id": "A1"}}, {"name": "no_mock", "minCalls": 0, "maxCalls": 0}],
                "variables": {"status": "delayed"},
                "endReason": {"$exists": false},
                "successCriterion": "The assistant says the order is delayed."
            }
        })))
        .await
        .unwrap();
    let run = run_one(&h, WS, target, &test).await.unwrap();
    assert_eq!(run.status, TestRunStatus::Passed, "{run:#?}");
    assert_eq!(run.expectations.len(), 5);
    assert_eq!(
        run.tool_calls[0].result,
        Some(json!({"status": "delayed"})),
        "scripted, not the mock"
    );
    assert_eq!(run.variables["status"], "delayed");
    assert_eq!(run.turns_sent, 1);
    assert!(run.transcript.iter().any(|m| m.content.contains("delayed")));
    let session =
        h.rt.session(WS, run.session_id.as_deref().unwrap())
            .await
            .unwrap();
    assert_eq!(
        session.end_reason.as_deref(),
        Some("test run finished"),
        "closed after the run"
    );
    let judge = &h.mock.requests()[2];
    assert_eq!(judge["model"], "mock-small");
    assert_eq!(
        judge["response_format"]["type"], "json_schema",
        "a strict schema"
    );
    assert_eq!(judge["response_format"]["json_schema"]["strict"], true);
    assert!(
        judge
            .to_string()
            .contains("The assistant says the order is delayed.")
    );

    let again = run_one(&h, WS, target, &test).await.unwrap();
    assert_eq!(again.status, TestRunStatus::Failed);
    let failed: Vec<&str> = again
        .expectations
        .iter()
        .filter(|e| !e.passed)
        .map(|e| e.subject.as_str())
        .collect();
    assert_eq!(
        failed,
        [
            "lookup_order",
            "status",
            "The assistant says the order is delayed."
        ]
    );
    let runs = h
        .store
        .test_runs(WS, test.id.as_deref().unwrap(), 10)
        .await
        .unwrap();
    assert_eq!(
        runs.iter().map(|r| r.status).collect::<Vec<_>>(),
        [TestRunStatus::Failed, TestRunStatus::Passed]
    );
    assert_eq!(hits.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_run_that_cannot_finish_is_an_error_and_runs_are_bounded() {
    let h = Harness::with(
        vec![
            MockReply::Delayed(
                std::time::Duration::from_secs(5),
                Box::new(MockReply::text("late")),
            ),
            MockReply::Delayed(
                std::time::Duration::from_secs(5),
                Box::new(MockReply::text("late")),
            ),
        ],
        |c| c.tests.global = 1,
    )
    .await;
    setup(&h).await;
    let target = TestTarget {
        kind: ResourceKind::Assistant,
        id: "a",
    };
    let slow = case(json!({"name": "slow", "turns": ["hi"], "timeoutSeconds": 1}));
    let unknown = case(json!({"name": "bad var", "turns": ["hi"], "variables": {"nope": 1}}));
    let started = std::time::Instant::now();
    let suite = run_suite(&h, WS, target, vec![slow.clone(), unknown, slow])
        .await
        .unwrap();
    assert_eq!(
        (suite.passed, suite.failed, suite.errors),
        (0, 0, 3),
        "{suite:#?}"
    );
    assert!(
        suite.runs[0]
            .error
            .as_deref()
            .unwrap()
            .contains("timeoutSeconds")
    );
    assert!(
        suite.runs[1].session_id.is_none(),
        "{:?}",
        suite.runs[1].error
    );
    assert!(
        suite.runs[1].error.as_deref().unwrap().contains("nope"),
        "{:?}",
        suite.runs[1].error
    );
    // One at a time: the two slow runs do not overlap.
    assert!(
        started.elapsed() >= std::time::Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn tasks_of_a_test_session_call_no_tool_and_start_no_opencode() {
    use rtc_protocol::{EventBody, TaskBackend};
    let (base, hits) = counting_server().await;
    let mock = rtc_testkit::MockLlm::with_recorded_responder(|req| {
        let reasoner = req["messages"][0]["content"] == "You look things up.";
        let answered = req["messages"]
            .as_array()
            .map_or(0, |m| m.iter().filter(|m| m["role"] == "assistant").count());
        match (reasoner, answered) {
            (true, 0) => MockReply::call("query_order", json!({"order_id": "A-1"})),
            (true, _) => MockReply::text("A-1 has shipped (mock)."),
            (false, 0) => MockReply::call(
                "delegate_task",
                json!({"title": "Check A-1", "instruction": "Is A-1 shipped?"}),
            ),
            (false, _) => MockReply::text("ok"),
        }
    })
    .await
    .unwrap();
    let h = Harness::on(mock, |_| {}).await;
    let tool: rtc_protocol::Tool = serde_json::from_value(json!({"name": "query_order", "type": "http",
        "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]},
        "http": {"method": "GET", "url": format!("{base}/orders/{{{{order_id}}}}")},
        "mockResponse": {"status": "shipped"}}))
    .unwrap();
    h.store
        .insert(WS, Some("query_order".into()), tool)
        .await
        .unwrap();
    let backends = [
        (
            "tb_r",
            json!({"name": "Research", "type": "reasoner", "reasoner": {"systemPrompt": "You look things up.",
            "toolBindings": [{"toolId": "query_order", "argumentBindings": {"order_id": {"source": "model"}}}]}}),
        ),
        (
            "tb_o",
            json!({"name": "Code", "type": "opencode",
            "opencode": {"baseUrl": format!("{base}/opencode"), "model": {"providerID": "p", "modelID": "m"}}}),
        ),
    ];
    for (id, b) in backends {
        let b: TaskBackend = serde_json::from_value(b).unwrap();
        h.store.insert(WS, Some(id.into()), b).await.unwrap();
    }
    for (assistant, backend, result) in [
        ("r", "tb_r", "A-1 has shipped (mock)."),
        (
            "o",
            "tb_o",
            "[test mode] OpenCode was not started for \"Check A-1\"",
        ),
    ] {
        h.assistant(
            assistant,
            json!({"name": assistant, "taskBackendId": backend}),
        )
        .await;
        let params = CreateSessionParams {
            assistant_id: Some(assistant.into()),
            test_mode: true,
            ..Default::default()
        };
        let s = h.rt.create_session(WS, params).await.unwrap().id;
        let mut events = h.events(&s).await;
        h.rt.send_user_message(WS, &s, "Is A-1 shipped?")
            .await
            .unwrap();
        let done = events.next_of("task.completed").await;
        let EventBody::TaskCompleted(done) = done.body else {
            unreachable!()
        };
        assert!(
            done.result.as_deref().unwrap().starts_with(result),
            "{assistant}: {:?}",
            done.result
        );
    }
    assert_eq!(
        hits.load(Ordering::SeqCst),
        0,
        "neither the tool nor OpenCode was reached"
    );
}

/// R-SEC-7: one workspace's abandoned slow runs do not keep another
/// workspace's quick test waiting (each workspace has at most
/// `per_workspace` of the slots), and a workspace with too many runs
/// admitted is refused at once.
#[tokio::test]
async fn a_workspace_with_many_slow_runs_does_not_starve_another() {
    let mock = rtc_testkit::MockLlm::with_recorded_responder(|req| {
        if req["messages"][0]["content"] == "Slow." {
            MockReply::Delayed(
                std::time::Duration::from_secs(30),
                Box::new(MockReply::text("late")),
            )
        } else {
            MockReply::text("quick")
        }
    })
    .await
    .unwrap();
    let h = Harness::on(mock, |c| {
        c.tests = rtc_runtime::TestQueueLimits {
            global: 4,
            per_workspace: 2,
            max_queued: 13,
        }
    })
    .await;
    h.store.create_workspace("ws2", "w2", "key2").await.unwrap();
    for (ws, prompt) in [(WS, "Slow."), ("ws2", "Quick.")] {
        let assistant: rtc_protocol::Assistant =
            serde_json::from_value(json!({"name": "a", "systemPrompt": prompt})).unwrap();
        h.store
            .insert(ws, Some("a".into()), assistant)
            .await
            .unwrap();
    }
    let target = TestTarget {
        kind: ResourceKind::Assistant,
        id: "a",
    };
    let slow = case(json!({"name": "slow", "turns": ["hi"], "timeoutSeconds": 15}));
    // Twelve slow runs, started and left to run.
    for _ in 0..12 {
        h.rt.start_test_run(WS, target_of("a"), vec![slow.clone()])
            .await
            .unwrap();
    }
    // One place is left: a suite of two is admitted and runs them one
    // after the other on it; then the workspace has no room.
    let two =
        h.rt.start_test_run(WS, target, vec![slow.clone(), slow.clone()]);
    assert_eq!(two.await.unwrap().status, TestSuiteStatus::Running);
    let more = h.rt.start_test_run(WS, target, vec![slow]).await;
    match more {
        Err(RuntimeError::TooMany { code, .. }) => assert_eq!(code, "too_many_test_runs"),
        other => panic!("expected too_many_test_runs, got {other:?}"),
    }
    let quick = case(json!({"name": "quick", "turns": ["hi"]}));
    let started = std::time::Instant::now();
    let run = run_one(&h, "ws2", target, &quick).await.unwrap();
    assert_eq!(run.status, TestRunStatus::Passed, "{run:?}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "the other workspace waited {:?}",
        started.elapsed()
    );
}

/// A suite with more tests than the workspace may have admitted runs
/// them all, one after another on the places it got, instead of being
/// refused (R-SEC-7's bound holds: never more than `max_queued` at once).
#[tokio::test]
async fn a_suite_longer_than_the_bound_runs_through_its_places() {
    let mock = rtc_testkit::MockLlm::with_recorded_responder(|_| MockReply::text("hello"))
        .await
        .unwrap();
    let h = Harness::on(mock, |c| {
        c.tests = rtc_runtime::TestQueueLimits {
            global: 4,
            per_workspace: 2,
            max_queued: 3,
        }
    })
    .await;
    h.assistant("a", json!({"name": "a", "systemPrompt": "Help."}))
        .await;
    let tests: Vec<_> = (0..7)
        .map(|i| case(json!({"name": format!("t{i}"), "turns": ["hi"]})))
        .collect();
    let suite = run_suite(&h, WS, target_of("a"), tests).await.unwrap();
    assert_eq!(suite.status, TestSuiteStatus::Finished, "{suite:#?}");
    assert_eq!(
        (suite.total, suite.passed, suite.runs.len()),
        (7, 7, 7),
        "{suite:#?}"
    );
    // Every place was given back.
    let again = run_suite(
        &h,
        WS,
        target_of("a"),
        vec![case(json!({"name": "x", "turns": ["hi"]}))],
    )
    .await
    .unwrap();
    assert_eq!(again.passed, 1, "{again:#?}");
}

/// Start a run of `tests` and read it until it is no longer running.
async fn run_suite(
    h: &Harness,
    ws: &str,
    target: TestTarget<'_>,
    tests: Vec<ConversationTest>,
) -> Result<TestSuiteRun, RuntimeError> {
    let started = h.rt.start_test_run(ws, target, tests).await?;
    loop {
        let Some(run) = h.store.suite_run(ws, target, &started.id).await? else {
            return Err(RuntimeError::not_found("test run", &started.id));
        };
        if run.status != TestSuiteStatus::Running {
            return Ok(run);
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// Run one test to its end: its run.
async fn run_one(
    h: &Harness,
    ws: &str,
    target: TestTarget<'_>,
    test: &ConversationTest,
) -> Result<TestRun, RuntimeError> {
    let mut suite = run_suite(h, ws, target, vec![test.clone()]).await?;
    assert_eq!(suite.status, TestSuiteStatus::Finished, "{suite:#?}");
    Ok(suite.runs.remove(0))
}

fn target_of(id: &'static str) -> TestTarget<'static> {
    TestTarget {
        kind: ResourceKind::Assistant,
        id,
    }
}

/// A run whose model call failed is an error, never a pass, even when
/// nothing was expected of it.
#[tokio::test]
async fn a_run_whose_model_call_failed_is_an_error() {
    let h = Harness::start(vec![MockReply::Error(500, "the provider is down".into())]).await;
    h.assistant("a", json!({"name": "a", "systemPrompt": "Help."}))
        .await;
    let target = TestTarget {
        kind: ResourceKind::Assistant,
        id: "a",
    };
    let test = h
        .store
        .insert_test(
            WS,
            target,
            case(json!({"name": "hello", "turns": ["hi"], "expect": {}})),
        )
        .await
        .unwrap();
    let run = run_one(&h, WS, target, &test).await.unwrap();
    assert_eq!(run.status, TestRunStatus::Error, "{run:#?}");
    let error = run.error.unwrap_or_default();
    assert!(
        error.contains("a model call failed during the run: llm_failed"),
        "{error}"
    );
}
