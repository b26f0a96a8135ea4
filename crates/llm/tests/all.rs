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

mod misbehaving {
    use super::*;
    use rtc_testkit::Misbehaviour as M;

    fn misbehave(m: M) -> MockReply {
        MockReply::Misbehave(m)
    }

    #[tokio::test]
    async fn a_stream_cut_before_any_output_is_sent_again() {
        let mock = MockLlm::start(vec![misbehave(M::CutBeforeOutput), MockReply::text("ok")])
            .await
            .unwrap();
        let (_, r) = collect(&client(&mock)).await;
        assert_eq!(r.unwrap().content, "ok");
        assert_eq!(mock.calls(), 2);
    }

    #[tokio::test]
    async fn a_stream_cut_after_output_is_an_error_not_an_answer() {
        for cut in [
            M::CutText("one two three four five six seven".into()),
            M::EndsEarly("one two three four five six seven".into()),
        ] {
            let mock = MockLlm::start(vec![misbehave(cut), MockReply::text("never")])
                .await
                .unwrap();
            let (deltas, r) = collect(&client(&mock)).await;
            assert!(!deltas.is_empty(), "text reached the caller first");
            assert_eq!(r.unwrap_err(), LlmError::Cut);
            assert_eq!(mock.calls(), 1, "output was shown: not sent again");
        }
    }

    #[tokio::test]
    async fn cut_arguments_are_sent_again_while_no_text_was_shown() {
        let mock = MockLlm::start(vec![
            misbehave(M::CutCall {
                name: "lookup".into(),
                partial: r#"{"q": "abcdefghij"#.into(),
            }),
            MockReply::call("lookup", json!({"q": "x"})),
        ])
        .await
        .unwrap();
        let (_, r) = collect(&client(&mock)).await;
        let r = r.unwrap();
        assert_eq!(r.tool_calls.len(), 1);
        assert_eq!(r.tool_calls[0].arguments, r#"{"q":"x"}"#);
    }

    #[tokio::test]
    async fn finish_reasons_refusals_and_missing_ids_come_through() {
        let mock = MockLlm::start(vec![
            misbehave(M::Finish {
                text: "a long answer that".into(),
                reason: "length".into(),
            }),
            misbehave(M::Refusal("I can't help with that.".into())),
            misbehave(M::CallsWithoutIds(vec![
                ("a".into(), json!({})),
                ("b".into(), json!({})),
            ])),
            misbehave(M::EmptyFinish("quirky but whole".into())),
        ])
        .await
        .unwrap();
        let c = client(&mock);
        let r = collect(&c).await.1.unwrap();
        assert_eq!(r.finish_reason.as_deref(), Some("length"));
        let r = collect(&c).await.1.unwrap();
        assert_eq!(r.refusal.as_deref(), Some("I can't help with that."));
        assert_eq!(r.content, "");
        let r = collect(&c).await.1.unwrap();
        assert_eq!(r.tool_calls.len(), 2);
        assert!(r.tool_calls.iter().all(|c| !c.id.is_empty()));
        assert_ne!(r.tool_calls[0].id, r.tool_calls[1].id);
        let r = collect(&c).await.1.unwrap();
        assert_eq!(r.content, "quirky but whole");
    }

    #[tokio::test]
    async fn an_exhausted_quota_fails_at_once_and_retry_after_is_honoured() {
        let mock = MockLlm::start(vec![misbehave(M::insufficient_quota())])
            .await
            .unwrap();
        let (_, r) = collect(&client(&mock)).await;
        let e = r.unwrap_err();
        assert!(matches!(e, LlmError::Quota(_)), "{e:?}");
        assert!(e.to_string().contains("quota"), "{e}");
        assert_eq!(mock.calls(), 1, "not retried");

        let mock = MockLlm::start(vec![
            misbehave(M::rate_limited("retry-after-ms", "300")),
            MockReply::text("ok"),
        ])
        .await
        .unwrap();
        let started = std::time::Instant::now();
        let (_, r) = collect(&client(&mock)).await;
        assert_eq!(r.unwrap().content, "ok");
        assert!(
            started.elapsed() >= Duration::from_millis(300),
            "waited as asked, not the 5 ms backoff"
        );
    }
}

/// The mock refuses what OpenAI refuses, in its words: a client that sent
/// `max_tokens` or a temperature to a reasoning model would be told so.
#[tokio::test]
async fn the_mock_refuses_parameters_as_openai_words_them() {
    rtc_testkit::init_tls();
    let mock = MockLlm::start(vec![MockReply::text("never")])
        .await
        .unwrap();
    let body = json!({"model": "o3-mini", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]});
    let r = reqwest::Client::new()
        .post(format!("{}/chat/completions", mock.base_url))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let text = r.text().await.unwrap();
    assert!(
        text.contains("Use 'max_completion_tokens' instead."),
        "{text}"
    );
    // The client sends what the model takes, so it is answered.
    let mock = MockLlm::start(vec![MockReply::text("fine")]).await.unwrap();
    let c = client(&mock);
    let mut req = request();
    req.model = "o3-mini".into();
    req.max_tokens = Some(5);
    req.temperature = Some(0.0);
    let mut s = c.stream(req);
    let mut answer = None;
    while let Some(ev) = s.next().await {
        if let Ok(LlmEvent::Done(r)) = ev {
            answer = Some(r.content);
        }
    }
    assert_eq!(answer.as_deref(), Some("fine"));
}

/// A provider over HTTP/2 that allows `streams` concurrent streams per
/// connection, like a real one (hyper's own default is 200). Each answer
/// waits until `expected` requests are being answered at once (or a
/// second has passed); it reports the most it saw at once.
struct StreamLimited {
    base_url: String,
    peak: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

async fn stream_limited(streams: u32, expected: usize) -> StreamLimited {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let now = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let changed = Arc::new(tokio::sync::Notify::new());
    let answer = {
        let (now, peak, changed) = (now.clone(), peak.clone(), changed.clone());
        move || {
            let (now, peak, changed) = (now.clone(), peak.clone(), changed.clone());
            async move {
                let here = now.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(here, Ordering::SeqCst);
                changed.notify_waiters();
                let _ = tokio::time::timeout(Duration::from_secs(1), async {
                    while now.load(Ordering::SeqCst) < expected {
                        let notified = changed.notified();
                        if now.load(Ordering::SeqCst) >= expected {
                            break;
                        }
                        notified.await;
                    }
                })
                .await;
                now.fetch_sub(1, Ordering::SeqCst);
                (
                    [("content-type", "text/event-stream")],
                    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n",
                )
            }
        }
    };
    let app = axum::Router::new().route("/v1/chat/completions", axum::routing::post(answer));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((socket, _)) = listener.accept().await else {
                return;
            };
            let app = app.clone();
            tokio::spawn(async move {
                let mut builder = hyper_util::server::conn::auto::Builder::new(
                    hyper_util::rt::TokioExecutor::new(),
                );
                builder.http2().max_concurrent_streams(streams);
                let _ = builder
                    .serve_connection(
                        hyper_util::rt::TokioIo::new(socket),
                        hyper_util::service::TowerToHyperService::new(app),
                    )
                    .await;
            });
        }
    });
    StreamLimited {
        base_url: format!("http://{addr}/v1"),
        peak,
    }
}

/// Twelve answers at once from a provider allowing four streams per
/// HTTP/2 connection.
async fn twelve_at_once(client: OpenAiClient) {
    let runs: Vec<_> = (0..12)
        .map(|_| {
            let c = client.clone();
            tokio::spawn(async move { collect(&c).await.1 })
        })
        .collect();
    for r in runs {
        assert_eq!(r.await.unwrap().unwrap().content, "hi");
    }
}

fn h2_client() -> reqwest::Client {
    reqwest::Client::builder()
        .http2_prior_knowledge()
        .build()
        .unwrap()
}

#[tokio::test]
async fn past_a_connections_stream_limit_requests_go_out_on_another() {
    use std::sync::atomic::Ordering;
    rtc_testkit::init_tls();
    // One client: the h2 connection queues all but four.
    let provider = stream_limited(4, 12).await;
    let config = ProviderConfig::new(&provider.base_url, None);
    twelve_at_once(OpenAiClient::new(config, h2_client())).await;
    assert_eq!(provider.peak.load(Ordering::SeqCst), 4);
    // Lanes of four: all twelve are answered at once, on three connections.
    let provider = stream_limited(4, 12).await;
    let mut config = ProviderConfig::new(&provider.base_url, None);
    config.streams_per_connection = 4;
    let client = OpenAiClient::with_lanes(
        config,
        h2_client(),
        std::sync::Arc::new(|| Some(h2_client())),
    );
    twelve_at_once(client).await;
    assert_eq!(provider.peak.load(Ordering::SeqCst), 12);
}
