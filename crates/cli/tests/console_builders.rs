//! The console's form builders in a real browser (issue 39, scenario
//! `console/builders.spec.mjs`): a tool's parameters and mock response
//! built through the forms, a conversation test's expectations built and
//! run, and a live and a test-mode session saved as tests from their
//! transcripts. What the forms saved is checked here through the API.

use std::time::Duration;

use rtc_testkit::{Engine, OrderService};
use serde_json::{Value, json};

use crate::console::run_scenario;
use crate::test_mode::{model, setup};

#[tokio::test]
async fn console_builders_in_a_real_browser() -> anyhow::Result<()> {
    let mock = model().await?;
    let Some(srv) = crate::conversation::server(Engine::Sqlite, &mock).await? else {
        return Ok(());
    };
    let orders = OrderService::start(Ok("real"), Duration::ZERO).await?;
    let (_, ws) = srv.workspace("Builders").await?;
    let id = setup(&ws, &orders).await?;
    run_scenario("builders.spec.mjs", &srv.process.base_url, &ws, &[]).await?;

    // The tool's schema and mock, as the forms built them.
    let tools = ws.get("/v1/tools").await?;
    let tool = tools.assert_status(200)["data"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "create_ticket").cloned())
        .expect("the tool was created");
    assert_eq!(
        tool["parameters"],
        json!({"type": "object", "properties": {
            "title": {"type": "string", "description": "Short summary"},
            "priority": {"type": "string", "enum": ["low", "normal", "high"]},
            "customer": {"type": "object", "properties": {
                "email": {"type": "string"}, "age": {"type": "integer"}}, "required": ["email"]},
            "tags": {"type": "array", "items": {"type": "string"}}},
            "required": ["title", "customer"]})
    );
    assert_eq!(
        tool["mockResponse"][0]["response"],
        json!({"queue": "urgent"})
    );
    assert_eq!(tool["mockResponse"][0]["when"]["type"], "eq");
    assert_eq!(
        tool["mockResponse"][1],
        json!({"response": {"queue": "normal"}})
    );

    // The three tests: built through the form, and saved from sessions.
    let tests = ws.get(&format!("/v1/assistants/{id}/tests")).await?;
    let tests = tests.assert_status(200)["data"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let test = |name: &str| -> Value {
        tests
            .iter()
            .find(|t| t["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no test {name}: {tests:#?}"))
    };
    let built = test("built with the form");
    assert_eq!(
        built["expect"],
        json!({"toolCalls": [
                {"name": "lookup_order", "arguments": {"order_id": "A1"}, "minCalls": 1, "maxCalls": 1},
                {"name": "requestHumanHandoff", "minCalls": 0, "maxCalls": 0}],
            "variables": {"status": {"$oneOf": ["shipped", "delivered"]}},
            "endReason": {"$exists": false},
            "successCriterion": "The user learns the order shipped."})
    );
    let live = test("replay of a live session");
    assert_eq!(
        live["turns"],
        json!(["Where is A1?\nIt was ordered Monday."])
    );
    assert_eq!(
        live["toolResponses"],
        json!({"lookup_order": [{"response": {"status": "real"}}]})
    );
    assert_eq!(
        live["expect"]["toolCalls"],
        json!([{"name": "lookup_order", "arguments": {"order_id": "A1"}, "minCalls": 1}])
    );
    let mocked = test("replay of a test-mode session");
    assert_eq!(mocked["turns"], json!(["Where is A1?"]));
    assert!(mocked.get("toolResponses").is_none(), "{mocked:#?}");
    // The live session reached the real tool once; nothing else did.
    assert_eq!(orders.requests().len(), 1, "{:?}", orders.requests());
    Ok(())
}
