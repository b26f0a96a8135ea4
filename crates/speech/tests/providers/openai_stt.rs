//! OpenAI-compatible STT: one multipart WAV upload per utterance, the
//! answer read in each form a server may give, failures as non-fatal
//! errors, and the key never shown.

use std::time::Duration;

use rtc_speech::{AddressPolicy, SttConfig, SttDialect, SttEvent, connect_stt};
use rtc_testkit::{SpeechOpenAiMock, SttAnswer, pilot_map, silence, speech_with_pilot, to_pcm};

use crate::{next, until_final};

const KEY: &str = "sk-test-stt-key-123";

fn cfg(mock: &SpeechOpenAiMock) -> SttConfig {
    let mut cfg = SttConfig::new(SttDialect::OpenAi, mock.base_url.clone());
    cfg.model = Some("gpt-4o-mini-transcribe".into());
    cfg.language = Some("en".into());
    cfg.api_key = Some(KEY.into());
    cfg.policy = AddressPolicy::AllowPrivate;
    cfg
}

async fn mock() -> SpeechOpenAiMock {
    let map = pilot_map([(2300, "What time is it?"), (2700, "Book a table.")]);
    SpeechOpenAiMock::start(Some(KEY), map)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

async fn utterance(pilot: u32, rate: u32) -> Vec<u8> {
    let mut pcm = speech_with_pilot("What time is it", rate, pilot)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    pcm.extend(to_pcm(&silence(200, rate)));
    pcm
}

fn final_text(events: &[SttEvent]) -> &str {
    match events.last() {
        Some(SttEvent::Final {
            text,
            speech_final: true,
            from_finalize: true,
        }) => text,
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn an_utterance_is_uploaded_once_as_a_16_bit_mono_wav_with_the_model() {
    let mock = mock().await;
    let (mut stt, mut events) = connect_stt(&cfg(&mock))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let pcm = utterance(2300, 16_000).await;
    for frame in pcm.chunks(3200) {
        stt.audio(frame).await.unwrap_or_else(|e| panic!("{e}"));
    }
    assert!(
        mock.requests().is_empty(),
        "nothing is sent before finalize"
    );
    stt.finalize().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        final_text(&until_final(&mut events).await),
        "What time is it?"
    );
    let requests = mock.requests_to("transcriptions");
    assert_eq!(requests.len(), 1);
    let r = &requests[0];
    assert!(r.authorized);
    assert_eq!(r.fields["model"], "gpt-4o-mini-transcribe");
    assert_eq!(r.fields["language"], "en");
    assert_eq!(r.fields["response_format"], "json");
    let wav = r.wav.clone().unwrap_or_else(|| panic!("no wav"));
    assert_eq!(
        (wav.format, wav.channels, wav.bits, wav.rate),
        (1, 1, 16, 16_000)
    );
    assert_eq!(wav.ms(), rtc_testkit::pcm_ms(pcm.len(), 16_000));
    assert_eq!(r.pilot, Some(2300));
}

#[tokio::test]
async fn text_and_event_stream_answers_give_the_same_transcript_in_order() {
    let mock = mock().await;
    let (mut stt, mut events) = connect_stt(&cfg(&mock))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let first = utterance(2300, 16_000).await;
    let second = utterance(2700, 16_000).await;
    for answer in [SttAnswer::Text, SttAnswer::Sse] {
        mock.force_stt_answer(Some(answer));
        // Two utterances finalized back to back: answers keep their order.
        stt.audio(&first).await.unwrap_or_else(|e| panic!("{e}"));
        stt.finalize().await.unwrap_or_else(|e| panic!("{e}"));
        stt.audio(&second).await.unwrap_or_else(|e| panic!("{e}"));
        stt.finalize().await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            final_text(&until_final(&mut events).await),
            "What time is it?"
        );
        assert_eq!(final_text(&until_final(&mut events).await), "Book a table.");
    }
    // Nothing buffered: an empty final at once, no request.
    let before = mock.requests().len();
    stt.finalize().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(final_text(&until_final(&mut events).await), "");
    assert_eq!(mock.requests().len(), before);
    stt.close().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(next(&mut events).await, SttEvent::Closed);
}

#[tokio::test]
async fn a_wrong_rate_moves_the_pilot_and_loses_the_transcript() {
    let mock = mock().await;
    let mut cfg = cfg(&mock);
    cfg.sample_rate = 24_000; // the audio is 16 kHz: resampling was forgotten
    let (mut stt, mut events) = connect_stt(&cfg).await.unwrap_or_else(|e| panic!("{e}"));
    stt.audio(&utterance(2300, 16_000).await)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    stt.finalize().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(final_text(&until_final(&mut events).await), "");
    assert_eq!(mock.requests()[0].pilot, None);
}

#[tokio::test]
async fn a_500_is_a_non_fatal_error_that_keeps_the_providers_words_but_not_the_key() {
    let mock = mock().await;
    mock.fail_transcriptions(1, 500, &format!("upstream exploded while using {KEY}"));
    let (mut stt, mut events) = connect_stt(&cfg(&mock))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let pcm = utterance(2300, 16_000).await;
    stt.audio(&pcm).await.unwrap_or_else(|e| panic!("{e}"));
    stt.finalize().await.unwrap_or_else(|e| panic!("{e}"));
    match until_final(&mut events).await.pop() {
        Some(SttEvent::Error {
            code,
            message,
            fatal: false,
        }) => {
            assert_eq!(code, "http_500");
            assert!(message.contains("upstream exploded"), "{message}");
            assert!(!message.contains(KEY), "{message}");
        }
        other => panic!("{other:?}"),
    }
    // The session goes on: the next utterance is transcribed.
    stt.audio(&pcm).await.unwrap_or_else(|e| panic!("{e}"));
    stt.finalize().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        final_text(&until_final(&mut events).await),
        "What time is it?"
    );
}

#[tokio::test]
async fn a_refused_key_echoed_back_is_scrubbed_and_a_slow_answer_times_out() {
    let mock = mock().await;
    let mut wrong = cfg(&mock);
    wrong.api_key = Some("sk-wrong-key-456".into());
    let (mut stt, mut events) = connect_stt(&wrong).await.unwrap_or_else(|e| panic!("{e}"));
    let pcm = utterance(2300, 16_000).await;
    stt.audio(&pcm).await.unwrap_or_else(|e| panic!("{e}"));
    stt.finalize().await.unwrap_or_else(|e| panic!("{e}"));
    match until_final(&mut events).await.pop() {
        Some(SttEvent::Error { code, message, .. }) => {
            assert_eq!(code, "unauthorized");
            assert!(
                message.contains("Incorrect API key provided: [redacted]"),
                "{message}"
            );
            assert!(!message.contains("sk-wrong-key-456"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    mock.set_stt_delay(Duration::from_secs(3));
    let mut slow = cfg(&mock);
    slow.timeout = Duration::from_millis(300);
    let (mut stt, mut events) = connect_stt(&slow).await.unwrap_or_else(|e| panic!("{e}"));
    stt.audio(&pcm).await.unwrap_or_else(|e| panic!("{e}"));
    stt.finalize().await.unwrap_or_else(|e| panic!("{e}"));
    assert!(matches!(
        until_final(&mut events).await.pop(),
        Some(SttEvent::Error { code, fatal: false, .. }) if code == "timeout"
    ));
}
