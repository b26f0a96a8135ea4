//! The real espeak-ng: audible speech of a plausible length at 22 050 Hz,
//! one process per chunk under the limiter, and a missing binary.

use std::path::PathBuf;
use std::time::Duration;

use rtc_speech::{EspeakAccess, EspeakLimiter, SpeechError, TtsConfig, TtsDialect, open_tts};

use crate::speak;

fn cfg(limiter: &EspeakLimiter, workspace: &str) -> TtsConfig {
    let mut cfg = TtsConfig::new(TtsDialect::Espeak, "");
    cfg.voice = "en-us".into();
    cfg.speed = Some(175.0);
    cfg.espeak = Some(EspeakAccess {
        limiter: limiter.clone(),
        workspace: workspace.into(),
        binary: None,
    });
    cfg
}

#[tokio::test]
async fn espeak_speaks_each_chunk_audibly_at_22050_hz() {
    let limiter = EspeakLimiter::new(4);
    let chunks = ["Hello there, this is a test of the voice.", "Goodbye."];
    let spoken = speak(&cfg(&limiter, "w1"), &chunks).await;
    assert!(spoken.finished, "{:?}", spoken.error);
    crate::assert_in_order(&spoken, 2);
    assert!(spoken.rates.iter().all(|&r| r == 22_050));
    // Nine words at 175 wpm: about three seconds; one word: well under one.
    let (long, short) = (spoken.ms(0, 22_050), spoken.ms(1, 22_050));
    assert!((1500..6000).contains(&long), "{long} ms");
    assert!((200..1500).contains(&short), "{short} ms");
    let samples = rtc_testkit::to_samples(&spoken.pcm);
    assert!(rtc_testkit::speech_rms(&samples) > 500.0, "audible");
    assert_eq!(limiter.running(), 0, "every slot was given back");
}

#[tokio::test]
async fn a_workspace_at_its_share_waits_and_then_gives_up() {
    let limiter = EspeakLimiter::new(2);
    let held = limiter.try_acquire("busy");
    assert!(held.is_some(), "one of two slots for the workspace");
    let mut busy = cfg(&limiter, "busy");
    busy.timeout = Duration::from_millis(200);
    let spoken = speak(&busy, &["Hello."]).await;
    let (code, message) = spoken.error.unwrap_or_else(|| panic!("no error"));
    assert_eq!(code, "unavailable");
    assert!(message.contains("no espeak process was free"), "{message}");
    // Another workspace still has its share.
    let spoken = speak(&cfg(&limiter, "other"), &["Hello."]).await;
    assert!(spoken.finished, "{:?}", spoken.error);
}

#[tokio::test]
async fn a_missing_binary_or_a_bad_voice_is_refused_at_open() {
    let limiter = EspeakLimiter::new(4);
    let mut missing = cfg(&limiter, "w");
    if let Some(access) = missing.espeak.as_mut() {
        access.binary = Some(PathBuf::from("/nonexistent/espeak-ng"));
    }
    assert!(matches!(
        open_tts(&missing).await.map(|_| ()),
        Err(SpeechError::Unavailable(_))
    ));
    let mut bad = cfg(&limiter, "w");
    bad.voice = "en us; rm".into();
    assert!(matches!(
        open_tts(&bad).await.map(|_| ()),
        Err(SpeechError::Config(_))
    ));
    let mut fast = cfg(&limiter, "w");
    fast.speed = Some(900.0);
    assert!(matches!(
        open_tts(&fast).await.map(|_| ()),
        Err(SpeechError::Config(_))
    ));
}
