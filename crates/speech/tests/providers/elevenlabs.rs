//! ElevenLabs `stream-input`: the path, query and `xi-api-key`, BOS `" "`
//! first, chunks ending in one space, EOS, audio attributed to chunks by
//! alignment, `isFinal`, a socket closed mid-item, and cancel.

use std::time::Duration;

use rtc_speech::{
    AddressPolicy, TtsChunk, TtsConfig, TtsDialect, TtsEvent, VoiceSettings, open_tts,
};
use rtc_testkit::{ElevenLabsMock, tts_ms};
use serde_json::json;

use crate::{assert_in_order, collect, next, speak};

const KEY: &str = "el-test-key-777";
const VOICE: &str = "JBFqnCBsd6RMkjVDRZzb";

fn cfg(mock: &ElevenLabsMock) -> TtsConfig {
    let mut cfg = TtsConfig::new(TtsDialect::ElevenLabs, mock.url());
    cfg.model = "eleven_flash_v2_5".into();
    cfg.voice = VOICE.into();
    cfg.sample_rate = 16_000;
    cfg.api_key = Some(KEY.into());
    cfg.policy = AddressPolicy::AllowPrivate;
    cfg
}

async fn mock() -> ElevenLabsMock {
    ElevenLabsMock::start(KEY)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

const CHUNKS: [&str; 3] = ["Hello there, friend.", "How are you today?", "Bye."];

#[tokio::test]
async fn bos_chunks_and_eos_speak_each_chunk_in_order_with_alignment() {
    let mock = mock().await;
    let mut cfg = cfg(&mock);
    cfg.voice_settings = Some(VoiceSettings {
        stability: Some(0.5),
        similarity_boost: Some(0.8),
        speed: None,
    });
    let spoken = speak(&cfg, &CHUNKS).await;
    assert!(spoken.finished, "{:?}", spoken.error);
    assert_in_order(&spoken, CHUNKS.len());
    for (i, text) in CHUNKS.iter().enumerate() {
        assert_eq!(spoken.ms(i, 16_000), tts_ms(text), "chunk {i}");
    }
    assert!(spoken.rates.iter().all(|&r| r == 16_000));
    assert!(spoken.aligned_chars >= CHUNKS.concat().len());

    let c = &mock.connections()[0];
    assert_eq!(c.voice.as_deref(), Some(VOICE));
    assert!(c.header_key_ok && c.finished);
    let q = |k: &str| c.query.get(k).map(String::as_str);
    assert_eq!(q("model_id"), Some("eleven_flash_v2_5"));
    assert_eq!(q("output_format"), Some("pcm_16000"));
    assert_eq!(q("auto_mode"), Some("true"));
    assert_eq!(q("sync_alignment"), Some("true"));
    assert_eq!(q("inactivity_timeout"), Some("60"));
    let frames = mock.frames_of(0);
    assert_eq!(
        frames[0],
        json!({"text": " ", "voice_settings": {"stability": 0.5, "similarity_boost": 0.8}})
    );
    for (frame, chunk) in frames[1..4].iter().zip(CHUNKS) {
        assert_eq!(frame["text"], format!("{chunk} "));
    }
    assert_eq!(frames[4], json!({"text": ""}));
    assert_eq!(frames.len(), 5);
    // auto_mode: each chunk generated as it came.
    let generated: Vec<String> = mock.generations().into_iter().map(|g| g.1).collect();
    assert_eq!(generated, CHUNKS.map(|c| format!("{c} ")));
}

#[tokio::test]
async fn the_socket_is_opened_early_and_whitespace_chunks_send_nothing() {
    let mock = mock().await;
    let (mut tts, mut events) = open_tts(&cfg(&mock))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    // The BOS is sent on open, before any text.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(mock.frames_of(0), vec![json!({"text": " "})]);
    for chunk in ["Hi.", "   ", "Bye."] {
        tts.push(TtsChunk::new(chunk))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }
    tts.finish().await.unwrap_or_else(|e| panic!("{e}"));
    let spoken = collect(&mut events).await;
    assert!(spoken.finished);
    assert_eq!(spoken.done, vec![0, 1, 2]);
    assert_eq!((spoken.ms(0, 16_000), spoken.ms(1, 16_000)), (60, 0));
    assert_eq!(spoken.ms(2, 16_000), 80);
    assert_eq!(mock.frames_of(0).len(), 4, "BOS, two texts, EOS");
}

#[tokio::test]
async fn a_socket_closed_mid_item_ends_the_stream_with_an_error() {
    let mock = mock().await;
    mock.close_after_audio(Some((2, 1011, "internal server error")));
    let spoken = speak(&cfg(&mock), &CHUNKS).await;
    assert!(!spoken.finished);
    let (code, message) = spoken.error.unwrap_or_else(|| panic!("no error"));
    assert_eq!(code, "closed_1011");
    assert!(message.contains("internal server error"), "{message}");
    assert!(spoken.order.len() == 2, "two audio messages came first");
}

#[tokio::test]
async fn a_wrong_key_closes_the_socket_without_showing_the_key() {
    let mock = mock().await;
    let mut wrong = cfg(&mock);
    wrong.api_key = Some("el-wrong-key".into());
    let (mut tts, mut events) = open_tts(&wrong).await.unwrap_or_else(|e| panic!("{e}"));
    let _ = tts.push(TtsChunk::new("Hi.")).await;
    match next(&mut events).await {
        TtsEvent::Error { code, message } => {
            assert_eq!(code, "closed_1008");
            assert!(message.contains("Invalid API key"), "{message}");
            assert!(!message.contains("el-wrong-key"), "{message}");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn cancel_closes_the_socket() {
    let mock = mock().await;
    mock.set_pace(Duration::from_millis(100));
    let (mut tts, mut events) = open_tts(&cfg(&mock))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    tts.push(TtsChunk::new("One two three four five six seven."))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(matches!(
        next(&mut events).await,
        TtsEvent::Audio { chunk: 0, .. }
    ));
    tts.cancel().await;
    mock.wait_for(|c| c.first().is_some_and(|c| c.client_left), crate::WAIT)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(tts.push(TtsChunk::new("more")).await.is_err());
}
