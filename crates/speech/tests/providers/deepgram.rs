//! Deepgram streaming STT: the handshake's query and `Token` header,
//! binary audio, the result events, `Finalize`, keep-alive against the
//! idle close, `CloseStream`, and refusals without the key.

use std::time::Duration;

use rtc_speech::{AddressPolicy, SpeechError, SttConfig, SttDialect, SttEvent, connect_stt};
use rtc_testkit::{DeepgramFrame, DeepgramMock, pilot_map, silence, speech_with_pilot, to_pcm};

use crate::{next, trim_quiet_end, until_final};

const KEY: &str = "dg-test-key-0042";

async fn mock() -> DeepgramMock {
    let map = pilot_map([(2300, "Book a table for two."), (3100, "Cancel it.")]);
    DeepgramMock::start(KEY, map)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

fn cfg(mock: &DeepgramMock) -> SttConfig {
    let mut cfg = SttConfig::new(SttDialect::Deepgram, mock.url());
    cfg.language = Some("en-US".into());
    cfg.api_key = Some(KEY.into());
    cfg.policy = AddressPolicy::AllowPrivate;
    cfg
}

async fn speech(pilot: u32) -> Vec<u8> {
    let pcm = speech_with_pilot("Book a table for two", 16_000, pilot)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    trim_quiet_end(&pcm)
}

#[tokio::test]
async fn the_handshake_carries_the_designs_query_and_a_token() {
    let mock = mock().await;
    let mut cfg = cfg(&mock);
    cfg.endpointing_ms = Some(400);
    let (mut stt, _events) = connect_stt(&cfg).await.unwrap_or_else(|e| panic!("{e}"));
    let c = &mock.connections()[0];
    assert!(c.accepted);
    assert_eq!(c.path, "/v1/listen");
    assert_eq!(
        c.authorization.as_deref(),
        Some(format!("Token {KEY}").as_str())
    );
    let q = |k: &str| c.query.get(k).map(String::as_str);
    assert_eq!(q("model"), Some("nova-3"));
    assert_eq!(q("language"), Some("en-US"));
    assert_eq!(q("encoding"), Some("linear16"));
    assert_eq!(q("sample_rate"), Some("16000"));
    assert_eq!(q("channels"), Some("1"));
    for flag in ["interim_results", "vad_events", "smart_format"] {
        assert_eq!(q(flag), Some("true"), "{flag}");
    }
    assert_eq!(q("endpointing"), Some("400"));
    assert_eq!(q("utterance_end_ms"), Some("1000"));
    stt.audio(&[0u8; 320])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    mock.wait_for(
        |_, f| f.iter().any(|f| f.frame == DeepgramFrame::Audio(320)),
        crate::WAIT,
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
}

#[tokio::test]
async fn speech_then_silence_gives_started_interim_final_and_utterance_end() {
    let mock = mock().await;
    let mut cfg = cfg(&mock);
    cfg.endpointing_ms = Some(300);
    let (mut stt, mut events) = connect_stt(&cfg).await.unwrap_or_else(|e| panic!("{e}"));
    let mut pcm = speech(2300).await;
    pcm.extend(to_pcm(&silence(1500, 16_000)));
    for frame in pcm.chunks(1600) {
        stt.audio(frame).await.unwrap_or_else(|e| panic!("{e}"));
    }
    assert_eq!(next(&mut events).await, SttEvent::SpeechStarted);
    let seen = until_final(&mut events).await;
    assert!(
        seen.iter().any(|e| matches!(e, SttEvent::Interim { .. })),
        "{seen:?}"
    );
    assert_eq!(
        seen.last(),
        Some(&SttEvent::Final {
            text: "Book a table for two.".into(),
            speech_final: true,
            from_finalize: false
        })
    );
    assert_eq!(next(&mut events).await, SttEvent::UtteranceEnd);
}

#[tokio::test]
async fn finalize_flushes_the_pending_speech_as_a_from_finalize_result() {
    let mock = mock().await;
    let (mut stt, mut events) = connect_stt(&cfg(&mock))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    stt.audio(&speech(3100).await)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    stt.finalize().await.unwrap_or_else(|e| panic!("{e}"));
    let last = until_final(&mut events).await.pop();
    assert_eq!(
        last,
        Some(SttEvent::Final {
            text: "Cancel it.".into(),
            speech_final: false,
            from_finalize: true
        })
    );
    // Nothing pending: an empty from_finalize result where the server gives one.
    mock.set_finalize_empty_answers(true);
    stt.finalize().await.unwrap_or_else(|e| panic!("{e}"));
    assert!(matches!(
        until_final(&mut events).await.pop(),
        Some(SttEvent::Final { text, from_finalize: true, .. }) if text.is_empty()
    ));
    assert_eq!(mock.text_frames("Finalize").len(), 2);
}

#[tokio::test]
async fn keep_alives_hold_an_idle_socket_open_and_without_them_it_closes_with_net_0001() {
    let mock = mock().await;
    mock.set_idle_timeout(Duration::from_millis(800));
    let mut kept = cfg(&mock);
    kept.keep_alive = Some(Duration::from_millis(250));
    let (_kept_stt, mut kept_events) = connect_stt(&kept).await.unwrap_or_else(|e| panic!("{e}"));
    let mut silent = cfg(&mock);
    silent.keep_alive = None;
    let (mut silent_stt, mut silent_events) =
        connect_stt(&silent).await.unwrap_or_else(|e| panic!("{e}"));
    silent_stt
        .keep_alive()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    match next(&mut silent_events).await {
        SttEvent::Error {
            code,
            message,
            fatal: true,
        } => {
            assert_eq!(code, "NET-0001");
            assert!(message.contains("1011"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(next(&mut silent_events).await, SttEvent::Closed);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(
        kept_events.try_recv().is_err(),
        "the kept socket said nothing"
    );
    let connections = mock.connections();
    assert_eq!(connections[0].closed_by_mock, None);
    assert_eq!(
        connections[1].closed_by_mock.as_ref().map(|c| c.0),
        Some(1011)
    );
    let keep_alives = mock
        .frames()
        .iter()
        .filter(|f| matches!(&f.frame, DeepgramFrame::Text(v) if v["type"] == "KeepAlive"))
        .map(|f| f.connection)
        .collect::<Vec<_>>();
    assert!(
        keep_alives.iter().filter(|&&c| c == 0).count() >= 4,
        "{keep_alives:?}"
    );
    assert_eq!(keep_alives.iter().filter(|&&c| c == 1).count(), 1);
}

#[tokio::test]
async fn close_stream_gets_metadata_and_a_normal_close() {
    let mock = mock().await;
    let (mut stt, mut events) = connect_stt(&cfg(&mock))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    stt.close().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(next(&mut events).await, SttEvent::Closed);
    assert_eq!(mock.text_frames("CloseStream").len(), 1);
    assert!(mock.sent().iter().any(|(_, m)| m["type"] == "Metadata"));
    assert_eq!(
        mock.connections()[0].closed_by_mock,
        Some((1000, String::new()))
    );
    assert!(matches!(stt.audio(&[0, 0]).await, Err(SpeechError::Closed)));
}

#[tokio::test]
async fn refusals_keep_the_providers_words_without_the_key() {
    let mock = mock().await;
    let mut wrong = cfg(&mock);
    wrong.api_key = Some("dg-wrong".into());
    match connect_stt(&wrong).await.map(|_| ()) {
        Err(SpeechError::Unauthorized(m)) => assert_eq!(m, "Invalid credentials."),
        other => panic!("{other:?}"),
    }
    mock.refuse_handshakes(Some((500, &format!("internal error, key {KEY}"))));
    match connect_stt(&cfg(&mock)).await.map(|_| ()) {
        Err(e @ SpeechError::Http { status: 500, .. }) => {
            let shown = e.to_string();
            assert!(
                shown.contains("internal error") && !shown.contains(KEY),
                "{shown}"
            );
        }
        other => panic!("{other:?}"),
    }
    mock.refuse_handshakes(None);
    let (_stt, mut events) = connect_stt(&cfg(&mock))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    mock.close_all(1011, &format!("NET-0000 crashed with {KEY}"));
    match next(&mut events).await {
        SttEvent::Error {
            code,
            message,
            fatal: true,
        } => {
            assert_eq!(code, "NET-0000");
            assert!(!message.contains(KEY), "{message}");
        }
        other => panic!("{other:?}"),
    }
}
