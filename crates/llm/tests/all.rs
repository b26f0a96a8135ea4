//! The client against the scripted mock server over real HTTP.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

use std::time::Duration;

use futures::StreamExt;
use rtc_core::llm::{ChatMessage, ChatRequest, LlmClient, LlmError, LlmEvent, ToolCall};
use rtc_llm::{OpenAiClient, ProviderConfig};
use rtc_testkit::{MockLlm, MockReply};
use serde_json::json;

fn client(mock: &MockLlm) -> OpenAiClient {
    rtc_testkit::init_tls();
    let mut config = ProviderConfig::new(&mock.base_url, Some("sk-test".into()));
    config.backoff = Duration::from_millis(5);
    config.idle_timeout = Duration::from_millis(800);
    OpenAiClient::new(config, reqwest::Client::new())
}

fn request() -> ChatRequest {
    ChatRequest {
        model: "mock-model".into(),
        messages: vec![ChatMessage::User {
            content: "hi".into(),
        }],
        ..Default::default()
    }
}

async fn collect(c: &OpenAiClient) -> (Vec<String>, Result<rtc_core::llm::ChatResponse, LlmError>) {
    let mut s = c.stream(request());
    let mut deltas = Vec::new();
    while let Some(ev) = s.next().await {
        match ev {
            Ok(LlmEvent::TextDelta(t)) => deltas.push(t),
            Ok(LlmEvent::Done(r)) => return (deltas, Ok(r)),
            Err(e) => return (deltas, Err(e)),
        }
    }
    (deltas, Err(LlmError::Protocol("ended without Done".into())))
}

#[tokio::test]
async fn streams_text_and_tool_calls() {
    let mock = MockLlm::start(vec![
        MockReply::text("Hello there, how can I help you today?"),
        MockReply::ToolCalls(vec![
            ("get_sum".into(), json!({"a": 1, "b": 2})),
            ("echo".into(), json!({"message": "hé"})),
        ]),
    ])
    .await
    .unwrap();
    let c = client(&mock);
    let (deltas, r) = collect(&c).await;
    assert!(deltas.len() > 1, "text arrives in pieces");
    assert_eq!(r.unwrap().content, "Hello there, how can I help you today?");
    let (_, r) = collect(&c).await;
    let r = r.unwrap();
    let ids: Vec<String> = r.tool_calls.iter().map(|c| c.id.clone()).collect();
    assert!(ids[0].starts_with("call_") && ids[0] != ids[1], "{ids:?}");
    assert_eq!(
        r.tool_calls,
        vec![
            ToolCall {
                id: ids[0].clone(),
                name: "get_sum".into(),
                arguments: r#"{"a":1,"b":2}"#.into()
            },
            ToolCall {
                id: ids[1].clone(),
                name: "echo".into(),
                arguments: r#"{"message":"hé"}"#.into()
            },
        ]
    );
    let sent = &mock.requests()[0];
    assert_eq!(sent["model"], "mock-model");
    assert_eq!(sent["stream"], true);
    assert_eq!(
        sent["messages"][0],
        json!({"role": "user", "content": "hi"})
    );
}

#[tokio::test]
async fn retries_on_429_and_5xx_then_succeeds() {
    let mock = MockLlm::start(vec![
        MockReply::Error(429, "slow down".into()),
        MockReply::Error(503, "busy".into()),
        MockReply::text("ok"),
    ])
    .await
    .unwrap();
    let (_, r) = collect(&client(&mock)).await;
    assert_eq!(r.unwrap().content, "ok");
    assert_eq!(mock.calls(), 3);
}

#[tokio::test]
async fn client_errors_are_not_retried() {
    let mock = MockLlm::start(vec![
        MockReply::Error(400, "bad model".into()),
        MockReply::text("never"),
    ])
    .await
    .unwrap();
    let (_, r) = collect(&client(&mock)).await;
    assert_eq!(
        r.unwrap_err(),
        LlmError::Http {
            status: 400,
            message: "bad model".into()
        }
    );
    assert_eq!(mock.calls(), 1);
}

#[tokio::test]
async fn gives_up_after_the_retry_budget() {
    let mock = MockLlm::start(
        (0..5)
            .map(|_| MockReply::Error(500, "down".into()))
            .collect(),
    )
    .await
    .unwrap();
    let (_, r) = collect(&client(&mock)).await;
    assert!(matches!(r.unwrap_err(), LlmError::Http { status: 500, .. }));
    assert_eq!(mock.calls(), 4, "one try and three retries");
}

#[tokio::test]
async fn a_silent_provider_times_out() {
    let slow = MockReply::Delayed(Duration::from_secs(5), Box::new(MockReply::text("late")));
    let mock = MockLlm::start(vec![slow.clone(), slow.clone(), slow.clone(), slow])
        .await
        .unwrap();
    let mut c = client(&mock);
    c = {
        let mut config = ProviderConfig::new(&mock.base_url, None);
        config.idle_timeout = Duration::from_millis(100);
        config.max_retries = 0;
        let _ = c;
        OpenAiClient::new(config, reqwest::Client::new())
    };
    let (_, r) = collect(&c).await;
    assert_eq!(r.unwrap_err(), LlmError::Timeout);
}

#[tokio::test]
async fn unreachable_provider_is_a_connect_error() {
    rtc_testkit::init_tls();
    let port = rtc_testkit::free_port().unwrap();
    let mut config = ProviderConfig::new(format!("http://127.0.0.1:{port}/v1"), None);
    config.max_retries = 1;
    config.backoff = Duration::from_millis(5);
    let (_, r) = collect(&OpenAiClient::new(config, reqwest::Client::new())).await;
    assert!(
        matches!(r.unwrap_err(), LlmError::Connect(_)),
        "connection refused"
    );
}
