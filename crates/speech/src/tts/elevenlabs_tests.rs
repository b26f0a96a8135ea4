//! Unit tests of the ElevenLabs URL, BOS and the attribution of audio to
//! chunks by alignment.

use super::*;
use crate::TtsDialect;
use crate::config::VoiceSettings;

fn cfg() -> TtsConfig {
    let mut cfg = TtsConfig::new(TtsDialect::ElevenLabs, "wss://api.elevenlabs.io");
    cfg.model = "eleven_flash_v2_5".into();
    cfg.voice = "JBFqnCBsd6RMkjVDRZzb".into();
    cfg
}

#[test]
fn the_url_carries_the_designs_query() {
    let url = stream_url(&cfg()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        url.as_str(),
        "wss://api.elevenlabs.io/v1/text-to-speech/JBFqnCBsd6RMkjVDRZzb/stream-input\
         ?model_id=eleven_flash_v2_5&output_format=pcm_24000&auto_mode=true\
         &sync_alignment=true&inactivity_timeout=60"
    );
    let mut odd = cfg();
    odd.sample_rate = 48_000;
    assert!(stream_url(&odd).is_err());
    let mut http = cfg();
    http.url = "https://api.elevenlabs.io".into();
    assert!(stream_url(&http).is_err());
}

#[test]
fn the_bos_is_one_space_with_the_voice_settings() {
    assert_eq!(bos(&cfg()), json!({"text": " "}));
    let mut with = cfg();
    with.voice_settings = Some(VoiceSettings {
        stability: Some(0.5),
        similarity_boost: None,
        speed: Some(1.1),
    });
    assert_eq!(
        bos(&with),
        json!({"text": " ", "voice_settings": {"stability": 0.5, "speed": 1.1}})
    );
}

fn timings(text: &str, from_ms: u32) -> Vec<CharTiming> {
    let mut at = from_ms;
    text.chars()
        .map(|c| {
            let len = if c.is_whitespace() { 0 } else { 20 };
            let t = (c, at, len);
            at += len;
            t
        })
        .collect()
}

#[test]
fn a_message_spanning_two_chunks_is_split_at_the_second() {
    let mut book = Book::default();
    book.push(0, "Hi.");
    book.push(1, "Yes");
    // 1 kHz: 1 sample per ms, 2 bytes per ms; "Hi. Yes" = 6 chars, 120 ms.
    let pcm = Bytes::from(vec![0u8; 240]);
    let events = book.audio(pcm, 1000, Some(timings("Hi. Yes", 0)));
    let shape: Vec<(String, usize)> = events
        .iter()
        .map(|e| match e {
            TtsEvent::Audio { chunk, pcm, .. } => (format!("audio{chunk}"), pcm.len()),
            TtsEvent::ChunkDone { chunk } => (format!("done{chunk}"), 0),
            other => (format!("{other:?}"), 0),
        })
        .collect();
    assert_eq!(
        shape,
        vec![
            ("audio0".to_owned(), 120),
            ("done0".to_owned(), 0),
            ("audio1".to_owned(), 120)
        ]
    );
    let TtsEvent::Audio { align: Some(a), .. } = &events[2] else {
        panic!("{events:?}")
    };
    assert_eq!(a[0], ('Y', 0, 20), "timings are relative to the piece");
    assert_eq!(book.finish(), vec![TtsEvent::ChunkDone { chunk: 1 }]);
}

#[test]
fn audio_without_alignment_goes_to_the_oldest_open_chunk() {
    let mut book = Book::default();
    book.push(0, "One two.");
    let events = book.audio(Bytes::from_static(&[0, 0]), 24_000, None);
    assert!(matches!(
        &events[..],
        [TtsEvent::Audio {
            chunk: 0,
            align: None,
            ..
        }]
    ));
}

#[test]
fn alignment_is_read_from_the_message() {
    let frame = json!({"audio": "AAA=", "alignment": {"chars": ["H", "i"],
        "charStartTimesMs": [0, 30.4], "charDurationsMs": [30, 40]}});
    assert_eq!(alignment(&frame), Some(vec![('H', 0, 30), ('i', 30, 40)]));
    assert_eq!(
        alignment(&json!({"audio": "AAA=", "alignment": null})),
        None
    );
}
