use std::collections::BTreeMap;

use rtc_protocol::{RunMode, SpeechInterface, SpeechSettings};
use serde_json::{Value, json};

use super::*;
use crate::test_support::put;

/// One valid interface of each (kind, dialect), as in the design.
fn interfaces() -> Vec<(&'static str, Value)> {
    vec![
        (
            "stt-openai",
            json!({"name": "Whisper", "kind": "stt", "connection": {"dialect": "openai",
                "url": "https://api.openai.com/v1", "model": "gpt-4o-mini-transcribe",
                "language": "en", "sampleRate": 16000, "apiKey": "{{secret__key}}"}}),
        ),
        (
            "stt-deepgram",
            json!({"name": "Nova", "kind": "stt", "connection": {"dialect": "deepgram",
                "url": "wss://api.deepgram.com", "model": "nova-3", "language": "en-US",
                "sampleRate": 16000, "apiKey": "{{secret__key}}"}}),
        ),
        (
            "tts-openai",
            json!({"name": "OpenAI TTS", "kind": "tts", "connection": {"dialect": "openai",
                "url": "https://api.openai.com/v1", "model": "gpt-4o-mini-tts", "voice": "marin",
                "format": "pcm", "speed": 1.0, "instructions": "Warm.", "apiKey": "{{secret__key}}"}}),
        ),
        (
            "tts-elevenlabs",
            json!({"name": "Flash", "kind": "tts", "connection": {"dialect": "elevenlabs",
                "url": "wss://api.elevenlabs.io", "model": "eleven_flash_v2_5",
                "voice": "JBFqnCBsd6RMkjVDRZzb", "sampleRate": 24000, "language": "en",
                "voiceSettings": {"stability": 0.5, "similarityBoost": 0.8, "speed": 1.1},
                "apiKey": "{{secret__key}}"}}),
        ),
        (
            "tts-espeak",
            json!({"name": "espeak-ng (en-us)", "kind": "tts",
                "connection": {"dialect": "espeak", "voice": "en-us", "speed": 175}}),
        ),
    ]
}

fn base(name: &str) -> Value {
    interfaces()
        .into_iter()
        .find(|(n, _)| *n == name)
        .map(|(_, v)| v)
        .unwrap_or_else(|| panic!("{name}"))
}

fn check(v: Value) -> Rule {
    let iface: SpeechInterface = serde_json::from_value(v).unwrap_or_else(|e| panic!("{e}"));
    validate_speech_interface(&iface, &|n| n == "secret__key")
}

#[test]
fn every_dialect_of_the_design_is_valid() {
    for (name, v) in interfaces() {
        check(v).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    // The minimal forms: deepgram's model defaults, openai's key is optional.
    check(put(base("stt-deepgram"), "/connection/model", Value::Null)).unwrap();
    check(put(base("stt-openai"), "/connection/apiKey", Value::Null)).unwrap();
    check(put(base("tts-openai"), "/connection/format", json!("wav"))).unwrap();
}

#[test]
#[rustfmt::skip]
fn each_interface_rule_answers_its_code_and_field() {
    let cases: Vec<(&str, &str, Value, &str, &str)> = vec![
        // a dialect not offered for the kind
        ("tts-openai", "/connection/dialect", json!("deepgram"), "unsupported_dialect", "connection.dialect"),
        ("stt-openai", "/connection/dialect", json!("elevenlabs"), "unsupported_dialect", "connection.dialect"),
        ("stt-openai", "/connection/dialect", json!("espeak"), "unsupported_dialect", "connection.dialect"),
        ("tts-espeak", "/kind", json!("stt"), "unsupported_dialect", "connection.dialect"),
        // url: scheme, host, credentials, none for espeak, missing
        ("stt-openai", "/connection/url", json!("wss://api.openai.com/v1"), "invalid_url", "connection.url"),
        ("stt-deepgram", "/connection/url", json!("https://api.deepgram.com"), "invalid_url", "connection.url"),
        ("tts-elevenlabs", "/connection/url", json!("http://api.elevenlabs.io"), "invalid_url", "connection.url"),
        ("tts-openai", "/connection/url", json!("https://"), "invalid_url", "connection.url"),
        ("tts-openai", "/connection/url", json!("not a url"), "invalid_url", "connection.url"),
        ("tts-openai", "/connection/url", json!("https://user:pw@api.openai.com/v1"), "invalid_url", "connection.url"),
        ("tts-espeak", "/connection/url", json!("https://example.com"), "unexpected_field", "connection.url"),
        ("stt-deepgram", "/connection/url", Value::Null, "missing_field", "connection.url"),
        // required fields
        ("stt-openai", "/connection/model", Value::Null, "missing_field", "connection.model"),
        ("tts-openai", "/connection/model", json!("  "), "missing_field", "connection.model"),
        ("tts-elevenlabs", "/connection/model", Value::Null, "missing_field", "connection.model"),
        ("tts-openai", "/connection/voice", Value::Null, "missing_field", "connection.voice"),
        ("tts-elevenlabs", "/connection/voice", Value::Null, "missing_field", "connection.voice"),
        ("tts-espeak", "/connection/voice", Value::Null, "missing_field", "connection.voice"),
        ("stt-deepgram", "/connection/apiKey", Value::Null, "missing_field", "connection.apiKey"),
        ("tts-elevenlabs", "/connection/apiKey", Value::Null, "missing_field", "connection.apiKey"),
        // fields the dialect does not take
        ("stt-openai", "/connection/voice", json!("marin"), "unexpected_field", "connection.voice"),
        ("stt-deepgram", "/connection/format", json!("pcm"), "unexpected_field", "connection.format"),
        ("tts-elevenlabs", "/connection/format", json!("pcm"), "unexpected_field", "connection.format"),
        ("tts-espeak", "/connection/apiKey", json!("{{secret__key}}"), "unexpected_field", "connection.apiKey"),
        ("tts-espeak", "/connection/model", json!("x"), "unexpected_field", "connection.model"),
        ("tts-openai", "/connection/language", json!("en"), "unexpected_field", "connection.language"),
        ("tts-elevenlabs", "/connection/speed", json!(1.0), "unexpected_field", "connection.speed"),
        ("stt-openai", "/connection/instructions", json!("x"), "unexpected_field", "connection.instructions"),
        ("tts-openai", "/connection/voiceSettings", json!({"speed": 1.0}), "unexpected_field", "connection.voiceSettings"),
        // the key
        ("stt-deepgram", "/connection/apiKey", json!("dg-plain-key"), "invalid_placeholder", "connection.apiKey"),
        ("tts-openai", "/connection/apiKey", json!("Bearer {{secret__key}}"), "invalid_placeholder", "connection.apiKey"),
        ("tts-openai", "/connection/apiKey", json!(""), "invalid_placeholder", "connection.apiKey"),
        ("tts-elevenlabs", "/connection/apiKey", json!("{{secret__gone}}"), "unknown_secret", "connection.apiKey"),
        // ranges
        ("stt-openai", "/connection/sampleRate", json!(22050), "out_of_range", "connection.sampleRate"),
        ("stt-deepgram", "/connection/sampleRate", json!(44100), "out_of_range", "connection.sampleRate"),
        ("tts-elevenlabs", "/connection/sampleRate", json!(48000), "out_of_range", "connection.sampleRate"),
        ("tts-openai", "/connection/sampleRate", json!(16000), "out_of_range", "connection.sampleRate"),
        ("tts-espeak", "/connection/sampleRate", json!(16000), "out_of_range", "connection.sampleRate"),
        ("tts-openai", "/connection/speed", json!(4.5), "out_of_range", "connection.speed"),
        ("tts-openai", "/connection/speed", json!(0.2), "out_of_range", "connection.speed"),
        ("tts-espeak", "/connection/speed", json!(60), "out_of_range", "connection.speed"),
        ("tts-espeak", "/connection/speed", json!(451), "out_of_range", "connection.speed"),
        ("tts-elevenlabs", "/connection/voiceSettings/stability", json!(1.5), "out_of_range", "connection.voiceSettings.stability"),
        ("tts-elevenlabs", "/connection/voiceSettings/similarityBoost", json!(-0.1), "out_of_range", "connection.voiceSettings.similarityBoost"),
        ("tts-elevenlabs", "/connection/voiceSettings/speed", json!(1.3), "out_of_range", "connection.voiceSettings.speed"),
        // values
        ("stt-deepgram", "/connection/language", json!("english"), "invalid_value", "connection.language"),
        ("stt-openai", "/connection/language", json!("en_US"), "invalid_value", "connection.language"),
        ("tts-elevenlabs", "/connection/language", json!(""), "invalid_value", "connection.language"),
        ("tts-espeak", "/connection/voice", json!("en us"), "invalid_value", "connection.voice"),
        ("tts-espeak", "/connection/voice", json!("-v;rm"), "invalid_value", "connection.voice"),
        ("tts-elevenlabs", "/connection/voice", json!("../x"), "invalid_value", "connection.voice"),
        ("stt-deepgram", "/connection/model", json!(" "), "invalid_value", "connection.model"),
        ("tts-openai", "/connection/voice", json!("ma\nrin"), "invalid_value", "connection.voice"),
        // the name
        ("tts-openai", "/name", json!(" "), "invalid_name", "name"),
    ];
    for (name, pointer, value, code, field) in cases {
        let err = check(put(base(name), pointer, value.clone()))
            .expect_err(&format!("{name} {pointer}={value} is refused"));
        assert_eq!((err.code, err.field.as_str()), (code, field), "{name} {pointer}={value}: {}", err.message);
    }
}

#[test]
fn the_first_failing_rule_answers() {
    // A missing voice comes before a field espeak does not take.
    let v = put(
        put(base("tts-espeak"), "/connection/voice", Value::Null),
        "/connection/apiKey",
        json!("{{secret__key}}"),
    );
    assert_eq!(check(v).unwrap_err().field, "connection.voice");
    // A wrong dialect comes before everything else.
    let v = put(base("tts-espeak"), "/connection/dialect", json!("deepgram"));
    assert_eq!(check(v).unwrap_err().code, "unsupported_dialect");
}

#[test]
fn language_tags_and_voices() {
    for ok in ["en", "eng", "en-US", "zh-Hant-TW", "cmn"] {
        assert!(valid_language(ok), "{ok}");
    }
    for bad in ["e", "engl", "en-", "en-U", "en-123456789", "en US", ""] {
        assert!(!valid_language(bad), "{bad}");
    }
    for ok in ["en-us", "cmn", "en+f3", "mb_en1"] {
        assert!(valid_espeak_voice(ok), "{ok}");
    }
    for bad in ["", "en us", "a/b", &"x".repeat(65)] {
        assert!(!valid_espeak_voice(bad), "{bad}");
    }
}

fn stored() -> BTreeMap<String, SpeechInterface> {
    interfaces()
        .into_iter()
        .map(|(id, v)| {
            let iface = serde_json::from_value(v).unwrap_or_else(|e| panic!("{e}"));
            (id.to_owned(), iface)
        })
        .collect()
}

fn speech(v: Value) -> SpeechSettings {
    serde_json::from_value(v).unwrap_or_else(|e| panic!("{e}"))
}

fn good_speech() -> Value {
    json!({"sttInterfaceId": "stt-deepgram", "ttsInterfaceId": "tts-elevenlabs",
        "turnDetection": {"type": "stt", "threshold": 0.5, "prefixPaddingMs": 300,
            "silenceDurationMs": 500, "maxUtteranceMs": 30000},
        "bargeIn": {"enabled": true, "minSpeechMs": 300},
        "toolFiller": {"afterMs": 1500, "text": "One moment, please."}})
}

#[test]
fn a_pipeline_assistant_names_its_interfaces() {
    let all = stored();
    check_speech(RunMode::Pipeline, Some(&speech(good_speech())), &all).unwrap();
    check_speech(RunMode::Pipeline, None, &all).unwrap();
    check_speech(RunMode::Realtime, None, &all).unwrap();
    // Defaults fill turn detection and barge-in.
    let minimal = json!({"sttInterfaceId": "stt-openai", "ttsInterfaceId": "tts-espeak"});
    check_speech(RunMode::Pipeline, Some(&speech(minimal)), &all).unwrap();
    // The bounds are inclusive.
    let edges = put(
        put(good_speech(), "/turnDetection/threshold", json!(1.0)),
        "/toolFiller/text",
        json!("x".repeat(500)),
    );
    check_speech(RunMode::Pipeline, Some(&speech(edges)), &all).unwrap();
}

#[test]
#[rustfmt::skip]
fn each_speech_rule_answers_its_code_and_field() {
    let all = stored();
    let cases: Vec<(&str, Value, &str, &str)> = vec![
        ("/sttInterfaceId", Value::Null, "missing_field", "speech.sttInterfaceId"),
        ("/ttsInterfaceId", json!(""), "missing_field", "speech.ttsInterfaceId"),
        ("/sttInterfaceId", json!("ghost"), "unknown_speech_interface", "speech.sttInterfaceId"),
        ("/ttsInterfaceId", json!("ghost"), "unknown_speech_interface", "speech.ttsInterfaceId"),
        ("/sttInterfaceId", json!("tts-openai"), "speech_kind_mismatch", "speech.sttInterfaceId"),
        ("/ttsInterfaceId", json!("stt-openai"), "speech_kind_mismatch", "speech.ttsInterfaceId"),
        ("/sttInterfaceId", json!("stt-openai"), "unsupported_turn_detection", "speech.turnDetection.type"),
        ("/turnDetection/threshold", json!(1.5), "out_of_range", "speech.turnDetection.threshold"),
        ("/turnDetection/threshold", json!(-0.1), "out_of_range", "speech.turnDetection.threshold"),
        ("/turnDetection/prefixPaddingMs", json!(2001), "out_of_range", "speech.turnDetection.prefixPaddingMs"),
        ("/turnDetection/silenceDurationMs", json!(99), "out_of_range", "speech.turnDetection.silenceDurationMs"),
        ("/turnDetection/silenceDurationMs", json!(5001), "out_of_range", "speech.turnDetection.silenceDurationMs"),
        ("/turnDetection/maxUtteranceMs", json!(999), "out_of_range", "speech.turnDetection.maxUtteranceMs"),
        ("/turnDetection/maxUtteranceMs", json!(120_001), "out_of_range", "speech.turnDetection.maxUtteranceMs"),
        ("/bargeIn/minSpeechMs", json!(3001), "out_of_range", "speech.bargeIn.minSpeechMs"),
        ("/toolFiller/afterMs", json!(30_001), "out_of_range", "speech.toolFiller.afterMs"),
        ("/toolFiller/text", json!(""), "out_of_range", "speech.toolFiller.text"),
        ("/toolFiller/text", json!("x".repeat(501)), "out_of_range", "speech.toolFiller.text"),
    ];
    for (pointer, value, code, field) in cases {
        let s = speech(put(good_speech(), pointer, value.clone()));
        let err = check_speech(RunMode::Pipeline, Some(&s), &all)
            .expect_err(&format!("{pointer}={value} is refused"));
        assert_eq!((err.code, err.field.as_str()), (code, field), "{pointer}={value}: {}", err.message);
    }
    let err = check_speech(RunMode::Realtime, Some(&speech(good_speech())), &all).unwrap_err();
    assert_eq!((err.code, err.field.as_str()), ("pipeline_only", "speech"));
    // Both missing: the STT is named first.
    let err = check_speech(RunMode::Pipeline, Some(&speech(json!({}))), &all).unwrap_err();
    assert_eq!(err.field, "speech.sttInterfaceId");
}

#[test]
fn references_are_the_named_interfaces_and_the_key() {
    let a: Assistant =
        serde_json::from_value(json!({"name": "A", "speech": good_speech()})).unwrap();
    assert_eq!(
        referenced_interfaces(&a),
        vec!["stt-deepgram", "tts-elevenlabs"]
    );
    let all = stored();
    assert_eq!(
        referenced_secret(&all["stt-deepgram"]).as_deref(),
        Some("secret__key")
    );
    assert_eq!(referenced_secret(&all["tts-espeak"]), None);
}

#[test]
fn assistant_validation_applies_the_speech_rules() {
    use crate::assistant_rules::{AssistantContext, validate_assistant};
    let all = stored();
    let (tools, providers) = (BTreeMap::new(), std::collections::BTreeSet::new());
    let ctx = AssistantContext {
        tools: &tools,
        realtime_interface: None,
        providers: &providers,
        task_backend: None,
        speech_interfaces: &all,
        update_bounds: Default::default(),
    };
    let voiced: Assistant =
        serde_json::from_value(json!({"name": "A", "speech": good_speech()})).unwrap();
    validate_assistant(&voiced, &ctx).unwrap();
    let ghost = put(good_speech(), "/ttsInterfaceId", json!("ghost"));
    let a: Assistant = serde_json::from_value(json!({"name": "A", "speech": ghost})).unwrap();
    let err = validate_assistant(&a, &ctx).unwrap_err();
    assert_eq!(
        (err.code, err.field.as_str()),
        ("unknown_speech_interface", "speech.ttsInterfaceId")
    );
}
