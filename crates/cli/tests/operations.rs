//! Health, metrics, OpenAPI, and what survives a restart.

use std::collections::HashMap;

use rtc_testkit::{Engine, ServerProcess, TestDatabase};
use serde_json::json;

use crate::harness::{binary, on_both};

on_both!(health_metrics_and_docs, |srv| {
    let api = srv.anonymous();
    assert_eq!(
        api.get("/healthz").await?.assert_status(200)["status"],
        "ok"
    );
    assert_eq!(
        api.get("/readyz").await?.assert_status(200)["status"],
        "ready"
    );
    let (_, ws) = srv.workspace("A").await?;
    ws.get("/v1/tools").await?.assert_status(200);
    let metrics = api.get("/metrics").await?;
    metrics.assert_status(200);
    assert!(
        metrics.text.contains("rtc_http_requests_total"),
        "{}",
        metrics.text
    );
    assert!(
        metrics.text.contains("route=\"/v1/tools\""),
        "{}",
        metrics.text
    );
    let doc = api.get("/openapi.json").await?;
    let doc = doc.assert_status(200);
    for path in [
        "/v1/tools",
        "/v1/assistants/{id}/compatibility/cleanup",
        "/v1/mcp-servers/{id}/tools",
        "/v1/secrets/{name}",
        "/v1/workspaces",
    ] {
        assert!(
            doc["paths"].get(path).is_some(),
            "{path} missing from OpenAPI"
        );
    }
    assert!(doc["components"]["schemas"].get("Assistant").is_some());
    let docs = srv
        .client
        .get(format!("{}/docs/", srv.process.base_url))
        .send()
        .await?;
    assert_eq!(docs.status().as_u16(), 200);
    assert!(docs.text().await?.contains("swagger"));
    Ok(())
});

async fn restart(engine: Engine) -> anyhow::Result<()> {
    let Some(db) = TestDatabase::new(engine).await? else {
        return Ok(());
    };
    let data = tempfile::tempdir()?;
    // No RTC_ADMIN_TOKEN: the first start creates and prints one.
    let env = HashMap::from([("RTC_ADMIN_TOKEN".to_owned(), String::new())]);
    let first =
        ServerProcess::start_without_admin_token(&binary(), &db.url, data.path(), &env).await?;
    let token = first
        .printed_admin_token()
        .expect("first start prints the admin token");
    assert!(
        first
            .output()
            .contains(&format!("console: {}/", first.base_url)),
        "the first start prints the console URL: {}",
        first.output()
    );
    let client = rtc_testkit::api_client();
    let ws: serde_json::Value = client
        .post(format!("{}/v1/workspaces", first.base_url))
        .bearer_auth(&token)
        .json(&json!({"name": "A"}))
        .send()
        .await?
        .json()
        .await?;
    let key = ws["apiKey"].as_str().unwrap().to_owned();
    client
        .put(format!("{}/v1/secrets/secret__k", first.base_url))
        .bearer_auth(&key)
        .json(&json!({"value": "v-secret-value"}))
        .send()
        .await?;
    first.kill().await;

    let second =
        ServerProcess::start_without_admin_token(&binary(), &db.url, data.path(), &env).await?;
    assert!(
        second.printed_admin_token().is_none(),
        "the admin token is printed only once"
    );
    let r = client
        .get(format!("{}/v1/workspaces", second.base_url))
        .bearer_auth(&token)
        .send()
        .await?;
    assert_eq!(r.status().as_u16(), 200, "the first token still works");
    let secrets: serde_json::Value = client
        .get(format!("{}/v1/secrets", second.base_url))
        .bearer_auth(&key)
        .send()
        .await?
        .json()
        .await?;
    assert_eq!(secrets["data"][0]["name"], "secret__k");
    second.kill().await;
    Ok(())
}

#[tokio::test]
async fn restart_keeps_data_and_admin_token_sqlite() -> anyhow::Result<()> {
    restart(Engine::Sqlite).await
}

#[tokio::test]
async fn restart_keeps_data_and_admin_token_postgres() -> anyhow::Result<()> {
    restart(Engine::Postgres).await
}

#[tokio::test]
async fn migrate_command_applies_migrations() -> anyhow::Result<()> {
    let db = TestDatabase::sqlite()?;
    let data = tempfile::tempdir()?;
    let out = tokio::process::Command::new(binary())
        .args(["migrate", "--database-url", &db.url, "--data-dir"])
        .arg(data.path())
        .output()
        .await?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("migrations applied"));
    let bad = tokio::process::Command::new(binary())
        .args(["migrate", "--database-url", "mysql://u:pw@h/db"])
        .output()
        .await?;
    assert!(!bad.status.success());
    assert!(
        !String::from_utf8_lossy(&bad.stderr).contains("pw@"),
        "passwords are not echoed"
    );
    Ok(())
}
