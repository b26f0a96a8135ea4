//! The console in a real browser: the Tests tab (R-BX-10, scenario
//! `console/tests.spec.mjs`, with the local tool endpoint test mode must
//! never reach), the model providers (`console/providers.spec.mjs`) and
//! the admin view (`console/admin.spec.mjs`).

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

#[tokio::test]
async fn console_providers_in_a_real_browser() -> anyhow::Result<()> {
    let mock = rtc_testkit::MockLlm::start(vec![rtc_testkit::MockReply::text("ok")]).await?;
    let dir = tempfile::tempdir()?;
    let config = dir.path().join("rtc-agent.toml");
    std::fs::write(
        &config,
        "[providers.nokey]\nbase_url = \"https://api.openai.com/v1\"\nmodel = \"gpt-4o-mini\"\n",
    )?;
    let env = std::collections::HashMap::from([
        ("RTC_LLM_BASE_URL".to_owned(), mock.base_url.clone()),
        ("RTC_LLM_MODEL".to_owned(), "mock-model".to_owned()),
        ("RTC_CONFIG".to_owned(), config.display().to_string()),
    ]);
    let srv = crate::harness::start(Engine::Sqlite, env).await?.unwrap();
    let (_, ws) = srv.workspace("Providers").await?;
    ws.create(
        "/v1/assistants",
        serde_json::json!({"name": "On nokey", "llm": {"provider": "nokey"}}),
    )
    .await?;
    ws.create("/v1/assistants", serde_json::json!({"name": "On default"}))
        .await?;
    run_scenario("providers.spec.mjs", &srv.process.base_url, &ws, &[]).await?;
    assert_eq!(mock.requests().len(), 1, "the check sent one request");
    Ok(())
}

#[tokio::test]
async fn console_admin_view_in_a_real_browser() -> anyhow::Result<()> {
    let mock = rtc_testkit::MockLlm::start(vec![]).await?;
    let Some(srv) = crate::conversation::server(Engine::Sqlite, &mock).await? else {
        return Ok(());
    };
    let (_, ws) = srv.workspace("Unused").await?;
    let admin = srv.process.admin_token.clone();
    run_scenario(
        "admin.spec.mjs",
        &srv.process.base_url,
        &ws,
        &[("ADMIN_TOKEN", admin.as_str())],
    )
    .await?;
    let all = srv.admin().get("/v1/workspaces").await?;
    let made = all.assert_status(200)["data"]
        .as_array()
        .and_then(|w| w.iter().find(|w| w["name"] == "Browser Co").cloned())
        .expect("the workspace was created");
    let inside = srv
        .admin_in(made["id"].as_str().unwrap_or_default())
        .get("/v1/assistants")
        .await?;
    assert_eq!(
        inside.assert_status(200)["data"][0]["name"],
        "Made by the admin"
    );
    Ok(())
}
