//! The console's Tests tab in a real browser (R-BX-10): the scenario in
//! `console/tests.spec.mjs` against the real binary, with the local tool
//! endpoint that test mode must never reach.

use std::time::Duration;

use rtc_testkit::{Engine, OrderService};

use crate::console::run_scenario;
use crate::test_mode::{model, setup};

#[tokio::test]
async fn console_tests_tab_in_a_real_browser() -> anyhow::Result<()> {
    let mock = model().await?;
    let Some(srv) = crate::conversation::server(Engine::Sqlite, &mock).await? else {
        return Ok(());
    };
    let orders = OrderService::start(Ok("real"), Duration::ZERO).await?;
    let (_, ws) = srv.workspace("Testing").await?;
    let id = setup(&ws, &orders).await?;
    run_scenario("tests.spec.mjs", &srv.process.base_url, &ws, &[]).await?;
    let tests = ws.get(&format!("/v1/assistants/{id}/tests")).await?;
    assert_eq!(
        tests.assert_status(200)["data"].as_array().map(Vec::len),
        Some(2)
    );
    let tools = ws.get("/v1/tools").await?;
    assert!(
        tools.assert_status(200)["data"][0]["mockResponse"].is_array(),
        "the mock survives the editor"
    );
    assert!(orders.requests().is_empty(), "{:?}", orders.requests());
    Ok(())
}
