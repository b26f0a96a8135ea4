//! One provider rule for the small model (judges, `llm` leaves,
//! extraction): the assistant's provider when it names a small model,
//! else the default provider's small model.

use std::sync::Arc;

use rtc_llm::{OpenAiClient, ProviderConfig};
use rtc_runtime::Provider;
use rtc_testkit::{MockLlm, MockReply};
use serde_json::{Value, json};

use crate::harness::{Harness, WS};

/// Creates a goal, then answers; as a judge, says the goal holds.
fn goal_model(req: &Value) -> MockReply {
    let messages = req["messages"].as_array().cloned().unwrap_or_default();
    let system = messages[0]["content"].as_str().unwrap_or("");
    if system.starts_with("You judge") {
        return MockReply::text(r#"{"satisfied": true, "reason": "it holds"}"#);
    }
    if messages.last().is_some_and(|m| m["role"] == "tool") {
        MockReply::text("working on it")
    } else {
        MockReply::call("createGoal", json!({"condition": "the user is happy"}))
    }
}

fn provider(mock: &MockLlm, small: Option<&str>) -> Provider {
    rtc_testkit::init_tls();
    let mut cfg = ProviderConfig::new(&mock.base_url, None);
    cfg.max_retries = 0;
    Provider {
        client: Arc::new(OpenAiClient::new(cfg, reqwest::Client::new())),
        default_model: "named-main".into(),
        small_model: small.map(str::to_owned),
        max_tools: rtc_runtime::DEFAULT_MAX_TOOLS,
    }
}

fn judged_with(mock: &MockLlm) -> Vec<String> {
    mock.requests()
        .iter()
        .filter(|r| {
            r["messages"][0]["content"]
                .as_str()
                .is_some_and(|s| s.starts_with("You judge"))
        })
        .filter_map(|r| r["model"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn the_judge_runs_on_the_provider_that_serves_a_small_model() {
    let with_small = MockLlm::with_recorded_responder(goal_model).await.unwrap();
    let without_small = MockLlm::with_recorded_responder(goal_model).await.unwrap();
    let default = MockLlm::with_recorded_responder(goal_model).await.unwrap();
    let providers = [
        ("smart", provider(&with_small, Some("named-small"))),
        ("plain", provider(&without_small, None)),
    ];
    let h = Harness::on(default, |c| {
        c.kernel.providers = providers
            .into_iter()
            .map(|(n, p)| (n.to_owned(), p))
            .collect();
    })
    .await;
    for name in ["smart", "plain"] {
        let a = h
            .assistant(
                name,
                json!({"name": name, "systemPrompt": "Hi.", "llm": {"provider": name}}),
            )
            .await;
        let s = h.session(&a).await;
        let mut events = h.events(&s).await;
        h.rt.send_user_message(WS, &s, "help me").await.unwrap();
        events
            .until("goal.updated", |v| v["goal"]["status"] == "completed")
            .await;
    }
    assert_eq!(judged_with(&with_small), ["named-small"]);
    assert!(judged_with(&without_small).is_empty());
    assert_eq!(
        judged_with(&h.mock),
        ["mock-small"],
        "a provider without a small model leaves the judge to the default provider"
    );
}
