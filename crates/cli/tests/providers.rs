//! The model providers as operators see them (`GET /v1/providers`) and
//! their check, on the real binary: a provider that answers, one that
//! cannot be reached (with credentials in its URL that are never shown),
//! and a default provider with no API key.

use std::collections::HashMap;

use rtc_testkit::{Engine, MockLlm, MockReply};
use serde_json::json;

use crate::harness::start;

#[tokio::test]
async fn providers_are_listed_without_secrets_and_checked() -> anyhow::Result<()> {
    let default = MockLlm::start(vec![MockReply::text("ok")]).await?;
    let dir = tempfile::tempdir()?;
    let config = dir.path().join("rtc-agent.toml");
    let dead = format!(
        "http://gw-user:pw-secret-1@127.0.0.1:{}/v1?key=sk-in-url-2",
        rtc_testkit::free_port()?
    );
    std::fs::write(
        &config,
        format!(
            "[providers.alt]\nbase_url = \"{dead}\"\napi_key = \"sk-alt-secret-3\"\nmodel = \"alt-model\"\nsmall_model = \"alt-small\"\n"
        ),
    )?;
    let env = HashMap::from([
        ("RTC_LLM_BASE_URL".to_owned(), default.base_url.clone()),
        ("RTC_LLM_MODEL".to_owned(), "mock-model".to_owned()),
        ("RTC_CONFIG".to_owned(), config.display().to_string()),
    ]);
    let srv = start(Engine::Sqlite, env).await?.unwrap();
    let (_, ws) = srv.workspace("A").await?;
    let list = ws.get("/v1/providers").await?;
    let body = list.assert_status(200).clone();
    let text = body.to_string();
    for secret in ["pw-secret-1", "sk-in-url-2", "sk-alt-secret-3"] {
        assert!(!text.contains(secret), "{secret} leaked: {text}");
    }
    assert_eq!(body["data"][0]["name"], "default");
    assert_eq!(body["data"][0]["isDefault"], true);
    assert_eq!(body["data"][0]["ready"], true);
    assert_eq!(body["data"][0]["defaultModel"], "mock-model");
    let alt = &body["data"][1];
    assert_eq!(alt["name"], "alt");
    assert_eq!(alt["apiKeySet"], true);
    assert_eq!(alt["smallModel"], "alt-small");
    assert!(
        alt["baseUrl"]
            .as_str()
            .unwrap()
            .contains("***:***@127.0.0.1"),
        "{alt}"
    );
    assert_eq!(
        srv.admin().get("/v1/providers").await?.status,
        200,
        "the admin token reads them too"
    );
    assert_eq!(srv.anonymous().get("/v1/providers").await?.status, 401);

    let ok = ws.post("/v1/providers/default/check", json!({})).await?;
    let ok = ok.assert_status(200);
    assert_eq!(
        (ok["ok"].as_bool(), ok["model"].as_str()),
        (Some(true), Some("mock-model")),
        "{ok}"
    );
    assert!(ok["latencyMs"].is_u64());
    assert_eq!(default.requests()[0]["model"], "mock-model");
    let down = ws.post("/v1/providers/alt/check", json!({})).await?;
    let down = down.assert_status(200);
    assert_eq!(down["ok"], false);
    assert!(
        down["error"]
            .as_str()
            .unwrap()
            .contains("could not be reached"),
        "{down}"
    );
    assert!(!down.to_string().contains("secret"), "{down}");
    ws.post("/v1/providers/nope/check", json!({}))
        .await?
        .assert_error(404, "not_found", None);
    assert!(!srv.process.log().contains("sk-alt-secret-3"));

    // A default provider left at OpenAI without a key says what to set.
    let bare = start(Engine::Sqlite, HashMap::new()).await?.unwrap();
    let (_, ws) = bare.workspace("B").await?;
    let list = ws.get("/v1/providers").await?;
    let first = &list.assert_status(200)["data"][0];
    assert_eq!(first["ready"], false, "{first}");
    assert!(
        first["problem"]
            .as_str()
            .unwrap()
            .contains("RTC_LLM_API_KEY"),
        "{first}"
    );
    Ok(())
}
