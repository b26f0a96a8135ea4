//! OpenAI-compatible TTS: one request per chunk with the design's body,
//! two in flight, audio in chunk order and of the right length, the body
//! read by its content type, and failures as the stream's last event.

use std::time::{Duration, Instant};

use rtc_speech::{AddressPolicy, TtsChunk, TtsConfig, TtsDialect, TtsFormat, open_tts};
use rtc_testkit::{SpeechOpenAiMock, TtsAnswer, tts_ms};

use crate::{assert_in_order, collect, next, speak};

const KEY: &str = "sk-test-tts-key-789";

fn cfg(mock: &SpeechOpenAiMock, model: &str) -> TtsConfig {
    let mut cfg = TtsConfig::new(TtsDialect::OpenAi, mock.base_url.clone());
    cfg.model = model.into();
    cfg.voice = "marin".into();
    cfg.api_key = Some(KEY.into());
    cfg.policy = AddressPolicy::AllowPrivate;
    cfg
}

async fn mock() -> SpeechOpenAiMock {
    SpeechOpenAiMock::start(Some(KEY), Default::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

const CHUNKS: [&str; 4] = [
    "The first sentence is rather long, so its body takes the longest time.",
    "Short one.",
    "A third, of middling length.",
    "Done.",
];

#[tokio::test]
async fn chunks_run_two_at_a_time_and_arrive_in_order_with_their_lengths() {
    let mock = mock().await;
    mock.set_pacing(100, Duration::from_millis(20));
    let spoken = speak(&cfg(&mock, "gpt-4o-mini-tts"), &CHUNKS).await;
    assert!(spoken.finished, "{:?}", spoken.error);
    assert_in_order(&spoken, CHUNKS.len());
    for (i, text) in CHUNKS.iter().enumerate() {
        assert_eq!(spoken.ms(i, 24_000), tts_ms(text), "chunk {i}");
    }
    assert!(spoken.rates.iter().all(|&r| r == 24_000));
    let requests = mock.requests_to("speech");
    assert_eq!(requests.len(), 4);
    assert_eq!(mock.max_speech_in_flight(), 2);
    // The short second chunk ran while the first streamed, and the third
    // waited for the first to end.
    assert!(requests[1].started < requests[0].finished.unwrap_or_else(Instant::now));
    assert!(requests[2].started >= requests[0].finished.unwrap_or_else(Instant::now));
    let body = &requests[0].fields;
    assert_eq!(body["model"], "gpt-4o-mini-tts");
    assert_eq!(body["voice"], "marin");
    assert_eq!(body["input"], CHUNKS[0]);
    assert_eq!(body["response_format"], "pcm");
    assert_eq!(body["stream_format"], "audio");
    assert!(requests.iter().all(|r| r.authorized && !r.aborted));
}

#[tokio::test]
async fn tts_1_gets_no_stream_format_and_wav_answers_are_read_by_their_header() {
    let mock = mock().await;
    let mut legacy = cfg(&mock, "tts-1");
    legacy.speed = Some(1.5);
    legacy.instructions = Some("Cheerful.".into());
    let spoken = speak(&legacy, &["Hello there."]).await;
    assert!(spoken.finished, "{:?}", spoken.error);
    let body = mock.requests_to("speech")[0].fields.clone();
    assert_eq!(body.get("stream_format"), None);
    assert_eq!(body.get("instructions"), None);
    assert_eq!(body["speed"], 1.5);
    // Asked for wav; and a server that answers wav to a pcm request.
    let mut wav = cfg(&mock, "gpt-4o-mini-tts");
    wav.format = TtsFormat::Wav;
    for (cfg, forced) in [
        (wav, None),
        (cfg(&mock, "gpt-4o-mini-tts"), Some(TtsAnswer::Wav)),
    ] {
        mock.force_tts_answer(forced);
        let spoken = speak(&cfg, &["Hello there."]).await;
        assert!(spoken.finished, "{:?}", spoken.error);
        assert_eq!(spoken.ms(0, 24_000), tts_ms("Hello there."));
    }
    // An answer it cannot play.
    mock.force_tts_answer(Some(TtsAnswer::Mp3));
    let spoken = speak(&cfg(&mock, "gpt-4o-mini-tts"), &["Hello there."]).await;
    assert_eq!(spoken.error.map(|e| e.0).as_deref(), Some("protocol"));
}

#[tokio::test]
async fn a_failed_chunk_ends_the_stream_after_the_audio_before_it() {
    let mock = mock().await;
    mock.set_pacing(100, Duration::from_millis(30));
    let cfg = cfg(&mock, "gpt-4o-mini-tts");
    let (mut tts, mut events) = open_tts(&cfg).await.unwrap_or_else(|e| panic!("{e}"));
    tts.push(TtsChunk::new(CHUNKS[0]))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    // The first request is under way; the next one fails.
    mock.wait_for(|r| !r.is_empty(), crate::WAIT)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    mock.fail_speech(1, 500, &format!("overloaded ({KEY})"));
    tts.push(TtsChunk::new(CHUNKS[1]))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    tts.finish().await.unwrap_or_else(|e| panic!("{e}"));
    let spoken = collect(&mut events).await;
    assert_eq!(
        spoken.ms(0, 24_000),
        tts_ms(CHUNKS[0]),
        "chunk 0 was delivered whole"
    );
    assert_eq!(spoken.done, vec![0]);
    let (code, message) = spoken.error.unwrap_or_else(|| panic!("no error"));
    assert_eq!(code, "http_500");
    assert!(message.contains("overloaded ([redacted])"), "{message}");
    assert!(!spoken.finished);
}

#[tokio::test]
async fn a_body_cut_short_is_an_error_and_a_slow_first_byte_is_waited_for_or_timed_out() {
    let mock = mock().await;
    mock.cut_speech_after(Some(4800));
    let spoken = speak(&cfg(&mock, "gpt-4o-mini-tts"), &[CHUNKS[0]]).await;
    assert!(spoken.error.is_some() && !spoken.finished);
    assert!(spoken.bytes.first().copied().unwrap_or(0) <= 4800);
    mock.cut_speech_after(None);

    mock.set_first_byte_delay(Duration::from_millis(400));
    let started = Instant::now();
    let spoken = speak(&cfg(&mock, "gpt-4o-mini-tts"), &["Hi."]).await;
    assert!(spoken.finished && started.elapsed() >= Duration::from_millis(400));
    let mut impatient = cfg(&mock, "gpt-4o-mini-tts");
    impatient.timeout = Duration::from_millis(100);
    let spoken = speak(&impatient, &["Hi."]).await;
    assert_eq!(spoken.error.map(|e| e.0).as_deref(), Some("timeout"));
}

#[tokio::test]
async fn cancel_aborts_the_requests_in_flight() {
    let mock = mock().await;
    mock.set_pacing(50, Duration::from_millis(50));
    let (mut tts, mut events) = open_tts(&cfg(&mock, "gpt-4o-mini-tts"))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    tts.push(TtsChunk::new(CHUNKS[0]))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(matches!(
        next(&mut events).await,
        rtc_speech::TtsEvent::Audio { chunk: 0, .. }
    ));
    tts.cancel().await;
    mock.wait_for(|r| r.first().is_some_and(|r| r.aborted), crate::WAIT)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(tts.push(TtsChunk::new("more")).await.is_err());
}

#[tokio::test]
async fn a_wrong_key_echoed_in_the_401_never_shows() {
    let mock = mock().await;
    let mut wrong = cfg(&mock, "gpt-4o-mini-tts");
    wrong.api_key = Some("sk-not-the-right-one".into());
    let spoken = speak(&wrong, &["Hi."]).await;
    let (code, message) = spoken.error.unwrap_or_else(|| panic!("no error"));
    assert_eq!(code, "unauthorized");
    assert!(!message.contains("sk-not-the-right-one"), "{message}");
    assert!(message.contains("[redacted]"), "{message}");
}
