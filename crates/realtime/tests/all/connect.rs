//! Connecting: the `model` query, the bearer check, the outbound guard,
//! and each dialect's `session.update` as the mock received it.

use rtc_realtime::{AudioFmt, Dialect, RealtimeError, RtEvent, Vad};
use rtc_testkit::RealtimeMock;
use rtc_tools::net_guard::AddressPolicy;
use serde_json::{Value, json};

use crate::support::{KEY, cfg, flavor, next, server_vad, session, spec, until};

#[tokio::test]
async fn ga_session_update_is_the_ga_shape_and_ready_names_the_session() {
    let mock = RealtimeMock::start(flavor(Dialect::Openai), KEY, json!({}))
        .await
        .unwrap();
    let (mut adapter, mut events) = rtc_realtime::connect(&cfg(Dialect::Openai, &mock))
        .await
        .unwrap();
    assert_eq!(mock.connections()[0].model.as_deref(), Some("openai-model"));
    assert!(mock.connections()[0].authorized);
    adapter.update_session(&spec(server_vad())).await.unwrap();
    let ready = next(&mut events, |e| matches!(e, RtEvent::Ready { .. })).await;
    assert_eq!(
        ready,
        RtEvent::Ready {
            provider_session_id: "sess_mock_0".into(),
            input: AudioFmt { rate: 24_000 },
            output: AudioFmt { rate: 24_000 },
        }
    );
    let updates = mock.frames_of_type("session.update");
    assert_eq!(updates.len(), 1);
    let s = &updates[0]["session"];
    assert_eq!(s["type"], "realtime");
    assert_eq!(s["output_modalities"], json!(["audio"]));
    assert_eq!(
        s["audio"]["input"]["format"],
        json!({"type": "audio/pcm", "rate": 24000})
    );
    assert_eq!(
        s["audio"]["output"]["format"],
        json!({"type": "audio/pcm", "rate": 24000})
    );
    assert_eq!(
        s["audio"]["input"]["transcription"]["model"],
        "gpt-4o-mini-transcribe"
    );
    assert_eq!(s["audio"]["input"]["turn_detection"]["type"], "server_vad");
    assert_eq!(
        s["audio"]["input"]["turn_detection"]["create_response"],
        true
    );
    assert_eq!(s["tools"][0]["name"], "lookup_order");
    assert!(s["tools"][0].get("function").is_none());
    // A second update succeeds without a second Ready; a refused one is
    // Rejected with the provider's message.
    let mut voiced = spec(server_vad());
    voiced.voice = Some("marin".into());
    adapter.update_session(&voiced).await.unwrap();
    voiced.voice = Some("nobody".into());
    let refused = adapter.update_session(&voiced).await;
    assert!(
        matches!(&refused, Err(RealtimeError::Rejected(m)) if m.starts_with("Invalid value: 'nobody'")),
        "{refused:?}"
    );
    adapter.close().await.unwrap();
    let rest = until(&mut events, |e| matches!(e, RtEvent::Closed { .. })).await;
    assert!(
        !rest
            .iter()
            .any(|e| matches!(e, RtEvent::Ready { .. } | RtEvent::Error { .. })),
        "{rest:?}"
    );
    assert_eq!(mock.frames_of_type("session.update").len(), 3);
    // The mock merged the accepted ones into its session.
    let merged = mock.session(0).unwrap();
    assert_eq!(merged["instructions"], "You are a helpful agent.");
    assert_eq!(merged["id"], "sess_mock_0");
    assert_eq!(merged["audio"]["output"]["voice"], "marin");
}

#[tokio::test]
async fn qwen_session_update_is_flat_with_nested_tools_at_16k_in() {
    let mut s = session(Dialect::Qwen, json!({}), Vad::Semantic { eagerness: None }).await;
    let caps = s.adapter.caps();
    assert_eq!((caps.input.rate, caps.output.rate), (16_000, 24_000));
    let updates = s.mock.frames_of_type("session.update");
    let session = &updates[0]["session"];
    assert_eq!(session["modalities"], json!(["text", "audio"]));
    assert_eq!(session["input_audio_format"], "pcm");
    assert_eq!(session["output_audio_format"], "pcm");
    assert_eq!(
        session["input_audio_transcription"]["model"],
        "gummy-realtime-v1"
    );
    assert_eq!(session["turn_detection"]["type"], "semantic_vad");
    assert_eq!(session["tools"][0]["type"], "function");
    assert_eq!(session["tools"][0]["function"]["name"], "lookup_order");
    assert!(session["tools"][0].get("name").is_none());
    assert!(session.get("audio").is_none());
    assert!(matches!(
        s.adapter.send_text("hello").await,
        Err(RealtimeError::Unsupported(_))
    ));
    s.adapter.close().await.unwrap();
    let closed = next(&mut s.events, |e| matches!(e, RtEvent::Closed { .. })).await;
    assert_eq!(
        closed,
        RtEvent::Closed {
            reason: "closed by the client".into()
        }
    );
}

#[tokio::test]
async fn stepfun_always_sends_turn_detection() {
    let s = session(Dialect::Stepfun, json!({}), Vad::None).await;
    let update = &s.mock.frames_of_type("session.update")[0]["session"];
    assert_eq!(update.get("turn_detection"), Some(&Value::Null));
    assert_eq!(update["input_audio_format"], "pcm16");
    assert_eq!(update["output_audio_format"], "pcm16");
    assert_eq!(update["tools"][0]["name"], "lookup_order");

    let s = session(Dialect::Stepfun, json!({}), server_vad()).await;
    let update = &s.mock.frames_of_type("session.update")[0]["session"];
    assert_eq!(update["turn_detection"]["type"], "server_vad");
    assert_eq!(update["turn_detection"]["silence_duration_ms"], 300);
    assert_eq!(update["turn_detection"]["interrupt_response"], true);
}

#[tokio::test]
async fn a_wrong_key_is_unauthorized_and_never_shown() {
    let mock = RealtimeMock::start(flavor(Dialect::Openai), KEY, json!({}))
        .await
        .unwrap();
    let mut wrong = cfg(Dialect::Openai, &mock);
    wrong.api_key = "sk-wrong-secret".into();
    let Err(err) = rtc_realtime::connect(&wrong).await else {
        panic!("a wrong key connected");
    };
    assert!(matches!(err, RealtimeError::Unauthorized), "{err}");
    assert!(!err.to_string().contains("sk-wrong-secret"));
    assert!(!format!("{err:?}").contains("sk-wrong-secret"));
    assert_eq!(mock.connections().len(), 1);
    assert!(!mock.connections()[0].authorized);
    assert!(mock.log().is_empty());
}

#[tokio::test]
async fn public_only_refuses_loopback_without_dialling() {
    let mock = RealtimeMock::start(flavor(Dialect::Openai), KEY, json!({}))
        .await
        .unwrap();
    let mut guarded = cfg(Dialect::Openai, &mock);
    guarded.policy = AddressPolicy::PublicOnly;
    let Err(err) = rtc_realtime::connect(&guarded).await else {
        panic!("the guard let 127.0.0.1 through");
    };
    assert!(
        matches!(&err, RealtimeError::Blocked(host) if host == "127.0.0.1"),
        "{err}"
    );
    // A name resolving to loopback is refused by name, not by address.
    guarded.url = format!("ws://localhost:{}/v1/realtime", mock.addr().port());
    let Err(err) = rtc_realtime::connect(&guarded).await else {
        panic!("the guard let localhost through");
    };
    assert!(
        matches!(&err, RealtimeError::Blocked(host) if host == "localhost"),
        "{err}"
    );
    assert!(!err.to_string().contains("127.0.0.1"));
    assert!(mock.connections().is_empty());
}

#[tokio::test]
async fn only_websocket_urls() {
    let mock = RealtimeMock::start(flavor(Dialect::Openai), KEY, json!({}))
        .await
        .unwrap();
    let mut bad = cfg(Dialect::Openai, &mock);
    bad.url = "https://api.openai.com/v1/realtime".into();
    assert!(matches!(
        rtc_realtime::connect(&bad).await,
        Err(RealtimeError::InvalidUrl(_))
    ));
}

#[tokio::test]
async fn the_provider_closing_ends_the_events_with_closed() {
    let mut s = session(Dialect::Openai, json!({}), Vad::None).await;
    s.adapter.commit_audio().await.unwrap();
    s.mock
        .wait_for(
            |log| {
                log.iter()
                    .any(|f| f.frame["type"] == "input_audio_buffer.commit")
            },
            crate::support::WAIT,
        )
        .await
        .unwrap();
    s.mock.close_all();
    let events = until(&mut s.events, |e| matches!(e, RtEvent::Closed { .. })).await;
    let Some(RtEvent::Closed { reason }) = events.last() else {
        unreachable!()
    };
    assert!(reason.contains("closed"), "{reason}");
    assert!(s.events.recv().await.is_none());
    assert_eq!(s.mock.log().iter().filter(|f| f.connection == 0).count(), 2);
}

#[tokio::test]
async fn wss_runs_tls_over_the_guarded_stream() {
    let mock = RealtimeMock::start(flavor(Dialect::Openai), KEY, json!({}))
        .await
        .unwrap();
    let mut tls = cfg(Dialect::Openai, &mock);
    tls.url = mock.url().replace("ws://", "wss://");
    let Err(err) = rtc_realtime::connect(&tls).await else {
        panic!("TLS to a plain WebSocket server succeeded");
    };
    assert!(
        matches!(&err, RealtimeError::Connect(m) if m.starts_with("TLS with 127.0.0.1 failed")),
        "{err}"
    );
    // The server saw TLS bytes, not a WebSocket request.
    assert!(
        mock.connections()
            .iter()
            .all(|c| !c.authorized && c.model.is_none())
    );
    assert!(mock.log().is_empty());
}

#[tokio::test]
async fn a_silent_server_times_out() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let held = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        // Hold the connection open and never answer.
        tokio::time::sleep(std::time::Duration::from_secs(30)).await;
        drop(tcp);
    });
    let mock = RealtimeMock::start(flavor(Dialect::Openai), KEY, json!({}))
        .await
        .unwrap();
    let mut silent = cfg(Dialect::Openai, &mock);
    silent.url = format!("ws://127.0.0.1:{port}/v1/realtime");
    silent.timeout = std::time::Duration::from_millis(300);
    let Err(err) = rtc_realtime::connect(&silent).await else {
        panic!("a silent server connected");
    };
    assert!(matches!(err, RealtimeError::Timeout(_)), "{err}");
    held.abort();
}

/// A provider that sends one message larger than the bound breaks its
/// connection instead of making the platform buffer it (R-SEC-7).
#[tokio::test]
async fn a_message_past_the_bound_closes_the_connection() {
    use futures::SinkExt;
    use tokio_tungstenite::tungstenite::Message;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}/v1/realtime", listener.local_addr().unwrap());
    let server = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let mut ws = tokio_tungstenite::accept_async(tcp).await.unwrap();
        let created = json!({"type": "session.created", "event_id": "e0",
            "session": {"id": "sess_big", "model": "m"}});
        ws.send(Message::text(created.to_string())).await.unwrap();
        // 3 MiB of transcript in one message.
        let huge = json!({"type": "response.output_audio_transcript.delta",
            "response_id": "r", "item_id": "i", "delta": "x".repeat(3 << 20)});
        let _ = ws.send(Message::text(huge.to_string())).await;
        tokio::time::sleep(std::time::Duration::from_secs(5)).await;
    });
    let mut config = rtc_realtime::ProviderCfg {
        url,
        ..cfg_without_mock()
    };
    config.max_message_bytes = 1024 * 1024;
    let (_adapter, mut events) = rtc_realtime::connect(&config).await.unwrap();
    let closed = next(&mut events, |e| matches!(e, RtEvent::Closed { .. })).await;
    let RtEvent::Closed { reason } = closed else {
        unreachable!()
    };
    assert!(reason.contains("failed"), "{reason}");
    server.abort();
}

fn cfg_without_mock() -> rtc_realtime::ProviderCfg {
    rtc_realtime::ProviderCfg {
        dialect: Dialect::Openai,
        url: String::new(),
        model: "m".into(),
        api_key: KEY.into(),
        input_rate: 24_000,
        output_rate: 24_000,
        policy: AddressPolicy::AllowPrivate,
        timeout: std::time::Duration::from_secs(5),
        max_message_bytes: 1024 * 1024,
    }
}
