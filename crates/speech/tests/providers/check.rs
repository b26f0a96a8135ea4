//! The interface check: a TTS speaks "This is a test.", an STT hears 1 s
//! of silence; failures are reported without the key.

use std::time::Duration;

use rtc_speech::check::{CHECK_TEXT, check_stt, check_tts};
use rtc_speech::{AddressPolicy, SttConfig, SttDialect, TtsConfig, TtsDialect};
use rtc_testkit::{DeepgramMock, ElevenLabsMock, SpeechOpenAiMock, tts_ms};

const WITHIN: Duration = Duration::from_secs(5);

#[tokio::test]
async fn a_tts_check_reports_its_first_byte_and_audio_length() {
    let mock = ElevenLabsMock::start("el-key")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    mock.set_first_audio_delay(Duration::from_millis(150));
    let mut cfg = TtsConfig::new(TtsDialect::ElevenLabs, mock.url());
    (cfg.model, cfg.voice) = ("eleven_flash_v2_5".into(), "v1".into());
    cfg.api_key = Some("el-key".into());
    cfg.policy = AddressPolicy::AllowPrivate;
    let report = check_tts(&cfg, WITHIN).await;
    assert!(report.ok, "{report:?}");
    assert!(report.latency_ms.is_some_and(|ms| ms >= 150), "{report:?}");
    assert_eq!(report.audio_ms, Some(tts_ms(CHECK_TEXT)));
    cfg.api_key = Some("el-wrong".into());
    let report = check_tts(&cfg, WITHIN).await;
    let error = report.error.unwrap_or_default();
    assert!(!report.ok && error.contains("Invalid API key") && !error.contains("el-wrong"));
}

#[tokio::test]
async fn stt_checks_answer_for_both_dialects() {
    let openai = SpeechOpenAiMock::start(None, Default::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let mut cfg = SttConfig::new(SttDialect::OpenAi, openai.base_url.clone());
    cfg.model = Some("whisper-1".into());
    cfg.policy = AddressPolicy::AllowPrivate;
    let report = check_stt(&cfg, WITHIN).await;
    assert!(report.ok && report.latency_ms.is_some(), "{report:?}");
    assert_eq!(
        openai.requests()[0].wav.as_ref().map(|w| w.ms()),
        Some(1000)
    );
    openai.fail_transcriptions(1, 503, "try later");
    let report = check_stt(&cfg, WITHIN).await;
    assert!(!report.ok && report.error.unwrap_or_default().contains("try later"));

    let deepgram = DeepgramMock::start("dg-key", Default::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let mut cfg = SttConfig::new(SttDialect::Deepgram, deepgram.url());
    cfg.api_key = Some("dg-key".into());
    cfg.policy = AddressPolicy::AllowPrivate;
    let report = check_stt(&cfg, WITHIN).await;
    assert!(report.ok, "{report:?}");
    assert_eq!(deepgram.audio_bytes(), 32_000);
}
