//! Test mode and conversation tests end to end (R-BX-10): the real binary,
//! a local HTTP tool endpoint that must see no request, the API and
//! `rtc-agent test` with its exit codes.

use std::process::Output;
use std::time::Duration;

use rtc_testkit::{Engine, MockLlm, MockReply, OrderService};
use serde_json::{Value, json};

use crate::conversation::{events_until, server};
use crate::harness::{Api, Server, binary, both};

/// The model: the judge passes unless the criterion mentions a refund;
/// the assistant looks order A1 up, then answers from the result.
pub(crate) async fn model() -> anyhow::Result<MockLlm> {
    MockLlm::with_recorded_responder(|req| {
        let messages = req["messages"].as_array().cloned().unwrap_or_default();
        let system = messages[0]["content"].as_str().unwrap_or_default();
        if system.starts_with("You judge") {
            let pass = !messages[1]["content"]
                .as_str()
                .unwrap_or_default()
                .contains("refund");
            return MockReply::text(&json!({"pass": pass, "reason": "as scripted"}).to_string());
        }
        match messages.last() {
            Some(m) if m["role"] == "tool" => {
                let status = m["content"].as_str().unwrap_or_default().to_owned();
                MockReply::text(&format!("Order A1: {status}"))
            }
            _ => MockReply::call("lookup_order", json!({"order_id": "A1"})),
        }
    })
    .await
}

fn order_is(id: &str) -> Value {
    json!({"type": "eq", "left": {"type": "variable", "name": "order_id"}, "right": {"type": "constant", "value": id}})
}

/// The tool (at the local order service) and an assistant bound to it.
pub(crate) async fn setup(ws: &Api, orders: &OrderService) -> anyhow::Result<String> {
    let mut tool = json!({"name": "lookup_order", "type": "http",
        "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]},
        "http": {"method": "GET", "url": format!("{}/orders/{{{{order_id}}}}", orders.base_url)},
        "mockResponse": [{"when": {"type": "variable", "name": "nope"}, "response": 1}]});
    ws.post("/v1/tools", tool.clone()).await?.assert_error(
        422,
        "unknown_variable",
        Some("mockResponse[0].when.name"),
    );
    tool["mockResponse"] = json!([{"when": order_is("A1"), "response": {"status": "shipped"}}, {"response": {"status": "unknown"}}]);
    let tool = ws.create("/v1/tools", tool).await?;
    let assistant = ws
        .create("/v1/assistants", json!({"name": "Orders", "systemPrompt": "Help with orders.",
            "dynamicVariables": [{"name": "status", "type": "string", "default": ""}],
            "toolBindings": [{"toolId": tool["id"], "argumentBindings": {"order_id": {"source": "model"}}, "resultAssignments": {"status": "status"}}]}))
        .await?;
    Ok(assistant["id"].as_str().unwrap_or_default().to_owned())
}

/// `rtc-agent test` with `args` against the server.
async fn cli(srv: &Server, ws: &Api, args: &[&str]) -> anyhow::Result<Output> {
    let child = tokio::process::Command::new(binary())
        .arg("test")
        .args(args)
        .args(["--url", &srv.process.base_url])
        .env("RTC_API_KEY", ws.token.clone().unwrap_or_default())
        .kill_on_drop(true)
        .output();
    Ok(tokio::time::timeout(Duration::from_secs(60), child).await??)
}

async fn test_mode_end_to_end(engine: Engine) -> anyhow::Result<()> {
    let mock = model().await?;
    let Some(srv) = server(engine, &mock).await? else {
        return Ok(());
    };
    let orders = OrderService::start(Ok("real"), Duration::ZERO).await?;
    let (_, ws) = srv.workspace("A").await?;
    let id = setup(&ws, &orders).await?;

    // A test-mode session: the mock answers, events say so.
    let s = ws
        .create("/v1/sessions", json!({"assistantId": id, "testMode": true}))
        .await?;
    let sid = s["id"].as_str().unwrap();
    assert_eq!(
        ws.get(&format!("/v1/sessions/{sid}"))
            .await?
            .assert_status(200)["testMode"],
        true
    );
    ws.post(
        &format!("/v1/sessions/{sid}/messages"),
        json!({"text": "Where is A1?"}),
    )
    .await?
    .assert_status(202);
    let token = s["clientToken"].as_str().unwrap();
    let events = events_until(&srv, token, sid, 0, |e| e["type"] == "turn.completed").await?;
    assert!(events.iter().all(|e| e["testMode"] == true), "{events:#?}");
    let done = events
        .iter()
        .find(|e| e["type"] == "tool.completed")
        .unwrap();
    assert_eq!(done["result"], json!({"status": "shipped"}));
    let state = ws.get(&format!("/v1/sessions/{sid}/state")).await?;
    assert_eq!(
        state.assert_status(200)["variables"]["status"],
        "shipped",
        "result assignments ran"
    );

    // Conversation tests: bad ones name their field, good ones run.
    let tests = format!("/v1/assistants/{id}/tests");
    ws.post(&tests, json!({"name": "x", "turns": []}))
        .await?
        .assert_error(422, "invalid_turns", Some("turns"));
    ws.post(
        &tests,
        json!({"name": "x", "turns": ["hi"], "expect": {"variables": {"other": 1}}}),
    )
    .await?
    .assert_error(422, "unknown_variable", Some("expect.variables.other"));
    ws.post(&tests, json!({"name": "x", "turns": ["hi"], "bogus": 1}))
        .await?
        .assert_status(422);
    let shipped = ws
        .create(&tests, json!({"name": "shipped order", "turns": ["Where is A1?"],
            "expect": {"toolCalls": [{"name": "lookup_order", "arguments": {"order_id": "A1"}}],
                "variables": {"status": "shipped"}, "successCriterion": "The user learns the order shipped."}}))
        .await?;
    let test_id = shipped["id"].as_str().unwrap();
    let started = ws
        .post(&format!("{tests}/{test_id}/run"), json!({}))
        .await?;
    let started = started.assert_status(202);
    assert_eq!(
        (started["status"].as_str(), started["total"].as_u64()),
        (Some("running"), Some(1)),
        "{started:#}"
    );
    let suite = until_finished(&ws, &tests, started).await?;
    assert_eq!(suite["passed"], 1, "{suite:#}");
    let run = &suite["runs"][0];
    assert_eq!(run["status"], "passed", "{run:#}");
    assert_eq!(run["expectations"].as_array().unwrap().len(), 3);
    assert!(
        run["transcript"].to_string().contains("Order A1"),
        "{run:#}"
    );
    let runs = ws.get(&format!("{tests}/{test_id}/runs")).await?;
    assert_eq!(runs.assert_status(200)["data"][0]["id"], run["id"]);
    let one = ws
        .get(&format!(
            "{tests}/{test_id}/runs/{}",
            run["id"].as_str().unwrap()
        ))
        .await?;
    assert_eq!(one.assert_status(200), run);
    let listed = ws.get(&format!("{tests}/runs")).await?;
    assert_eq!(listed.assert_status(200)["data"][0]["id"], suite["id"]);
    ws.get(&format!("{tests}/runs/tsrun_nope"))
        .await?
        .assert_error(404, "not_found", None);

    // The CLI: one line per test, exit 0 when all pass …
    let out = cli(&srv, &ws, &["--assistant", &id]).await?;
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains(&format!("PASSED assistants/{id}  shipped order")),
        "{text}"
    );
    assert!(text.contains("1 passed, 0 failed, 0 errors"), "{text}");

    // A user's mistake is one clear line, no backtrace, even when
    // backtraces are asked for.
    let child = tokio::process::Command::new(binary())
        .args([
            "test",
            "--assistant",
            "nope",
            "--url",
            &srv.process.base_url,
        ])
        .env("RTC_API_KEY", ws.token.clone().unwrap_or_default())
        .env("RUST_BACKTRACE", "1")
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(60), child).await??;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("nope"), "{err}");
    assert!(
        !err.contains("backtrace") && !err.contains("  0: "),
        "{err}"
    );

    // … and 1 when one fails, in JSON too; the suite endpoint agrees.
    ws.create(
        &tests,
        json!({"name": "refund", "turns": ["Where is A1?"],
        "toolResponses": {"lookup_order": [{"response": {"status": "lost"}}]},
        "expect": {"variables": {"status": "lost"}, "successCriterion": "A refund is offered."}}),
    )
    .await?;
    let out = cli(&srv, &ws, &["--json"]).await?;
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout)?;
    assert_eq!(
        (doc["passed"].as_u64(), doc["failed"].as_u64()),
        (Some(1), Some(1)),
        "{doc:#}"
    );
    let started = ws.post(&format!("{tests}/run"), json!({})).await?;
    let suite = until_finished(&ws, &tests, started.assert_status(202)).await?;
    assert_eq!(suite["status"], "finished", "{suite:#}");
    assert_eq!(suite["total"], 2, "{suite:#}");
    assert_eq!(
        (suite["passed"].as_u64(), suite["failed"].as_u64()),
        (Some(1), Some(1))
    );
    let failed = &suite["runs"][1];
    assert_eq!(
        failed["variables"]["status"], "lost",
        "the scripted result was used"
    );
    assert_eq!(failed["expectations"][1]["passed"], false);

    // Nothing reached the tool endpoint; tests go with their assistant.
    assert!(orders.requests().is_empty(), "{:?}", orders.requests());
    ws.delete(&format!("/v1/assistants/{id}"))
        .await?
        .assert_status(204);
    ws.get(&tests).await?.assert_error(404, "not_found", None);
    Ok(())
}

both!(test_mode_end_to_end);

/// Read a started run of tests (`tests` is the target's tests path) until
/// it is no longer running; at most a minute.
pub(crate) async fn until_finished(
    ws: &crate::harness::Api,
    tests: &str,
    started: &Value,
) -> anyhow::Result<Value> {
    let path = format!(
        "{tests}/runs/{}",
        started["id"].as_str().unwrap_or_default()
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let read = ws.get(&path).await?;
        let run = read.assert_status(200).clone();
        if run["status"] != "running" {
            return Ok(run);
        }
        anyhow::ensure!(
            std::time::Instant::now() < deadline,
            "the run ended within a minute: {run:#}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
