//! The console's realtime playground in a real browser (R-RT, design
//! `realtime.md` §5d): Chromium's fake microphone plays a WAV this test
//! writes (1 s of a 440 Hz tone, 1.5 s of silence, another second of tone,
//! 2 s of silence) into a session of a realtime assistant whose interface
//! points at the mock realtime provider. The scenario
//! `console/realtime.spec.mjs` edits the interface's connection, clicks
//! Talk and waits for the ready state and both transcripts; the second
//! tone speaks over the first answer (played in real time), whose playback
//! stops and is reported; the second answer is played to its end; a typed
//! message has the model call an HTTP tool. This side checks that the mock
//! heard the tones, got the voice the form set and the truncation of what
//! was heard, and what the session stored.

use std::collections::HashMap;
use std::time::Duration;

use base64::Engine as _;
use rtc_testkit::{Engine, RealtimeFlavor, RealtimeMock, SPEECH_RMS};
use serde_json::{Value, json};

use crate::console::run_scenario;
use crate::harness::start;
use crate::realtime_support::{order_stub, order_tool, order_variables};

/// The key the mock expects, kept as `secret__mock_realtime_key`.
const MOCK_KEY: &str = "sk-mock-realtime-0123456789";
/// The transcripts of the two spoken turns.
const USER_TEXTS: [&str; 2] = ["where is my order", "thank you"];
/// The answers to the spoken turns and to the typed one.
const ANSWERS: [&str; 3] = [
    "Let me check that for you, it takes a moment.",
    "You are welcome.",
    "Order A-1 has shipped.",
];
/// Their audio: the first, played in real time, is long enough to be
/// spoken over.
const ANSWER_MS: [u64; 3] = [3000, 400, 200];
/// The push-to-talk turn: the user's transcript, the answer, its ms.
const PUSH_TO_TALK: (&str, &str, u64) = ("push to talk works", "Heard you.", 300);

/// A 16-bit mono PCM WAV file at `rate` Hz: each `(tone, ms)` segment is
/// `ms` of a 440 Hz sine at half scale, or of silence.
fn tone_wav(rate: u32, segments: &[(bool, u32)]) -> Vec<u8> {
    let samples = segments.iter().flat_map(|&(tone, ms)| {
        let n = (u64::from(rate) * u64::from(ms) / 1000) as usize;
        (0..n).map(move |i| {
            let t = i as f64 / f64::from(rate);
            let level = if tone { 16_384.0 } else { 0.0 };
            (level * (2.0 * std::f64::consts::PI * 440.0 * t).sin()) as i16
        })
    });
    let data: Vec<u8> = samples.flat_map(i16::to_le_bytes).collect();
    let data_len = u32::try_from(data.len()).unwrap_or(u32::MAX);
    let mut wav = Vec::with_capacity(44 + data.len());
    wav.extend_from_slice(b"RIFF");
    wav.extend_from_slice(&(36 + data_len).to_le_bytes());
    wav.extend_from_slice(b"WAVEfmt ");
    wav.extend_from_slice(&16u32.to_le_bytes()); // fmt chunk size
    wav.extend_from_slice(&1u16.to_le_bytes()); // PCM
    wav.extend_from_slice(&1u16.to_le_bytes()); // mono
    wav.extend_from_slice(&rate.to_le_bytes());
    wav.extend_from_slice(&(rate * 2).to_le_bytes()); // bytes per second
    wav.extend_from_slice(&2u16.to_le_bytes()); // bytes per frame
    wav.extend_from_slice(&16u16.to_le_bytes()); // bits per sample
    wav.extend_from_slice(b"data");
    wav.extend_from_slice(&data_len.to_le_bytes());
    wav.extend_from_slice(&data);
    wav
}

/// Root mean square of base64 PCM16 audio, on the PCM16 scale.
fn rms(b64: &str) -> f64 {
    base64::engine::general_purpose::STANDARD
        .decode(b64)
        .map_or(0.0, |bytes| rtc_testkit::pcm16_rms(&bytes))
}

#[test]
fn the_wav_holds_the_tone_then_silence() {
    let wav = tone_wav(48_000, &[(true, 1000), (false, 1500)]);
    assert_eq!(wav.len(), 44 + 2 * 48_000 * 5 / 2);
    assert_eq!(&wav[..4], b"RIFF");
    assert_eq!(&wav[8..16], b"WAVEfmt ");
    assert_eq!(u32::from_le_bytes(wav[24..28].try_into().unwrap()), 48_000);
    let tone = base64::engine::general_purpose::STANDARD.encode(&wav[44..44 + 96_000]);
    let level = rms(&tone);
    assert!((level - 16_384.0 / 2f64.sqrt()).abs() < 50.0, "{level}");
    assert!(wav[44 + 96_000..].iter().all(|b| *b == 0));
}

/// An operator-defined interface `name` on a mock at `url`.
fn interface(name: &str, dialect: &str, url: &str, turn_detection: Value) -> Value {
    json!({"name": name, "provider": "mock",
        "fieldSchema": {"features": {"realtimePromptTools": {"toolTypes": ["http", "client"], "builtInTools": ["endConversation"]}}},
        "connection": {"dialect": dialect, "url": url, "model": "mock-realtime",
            "apiKey": "{{secret__mock_realtime_key}}", "turnDetection": turn_detection}})
}

/// A realtime assistant `name` on `interface`, with the order tool.
fn assistant(name: &str, interface: &Value, binding: &Value) -> Value {
    json!({"name": name, "runMode": "realtime", "realtimeInterfaceId": interface["id"],
        "systemPrompt": "You answer questions about orders.",
        "dynamicVariables": order_variables(), "toolBindings": [binding]})
}

#[tokio::test]
async fn console_realtime_playground_in_a_real_browser() -> anyhow::Result<()> {
    // The spoken turns are answered aloud (the first in real time, so the
    // second turn speaks over it); a typed one has the model look the
    // order up first.
    let script = json!({"userTranscripts": USER_TEXTS, "responses": [
        {"when": USER_TEXTS[0], "steps": [{"transcript": {"text": ANSWERS[0]}}, {"audio": {"ms": ANSWER_MS[0], "pace": 1}}, "done"]},
        {"when": USER_TEXTS[1], "steps": [{"transcript": {"text": ANSWERS[1]}}, {"audio": {"ms": ANSWER_MS[1]}}, "done"]},
        {"steps": [{"tool_call": {"name": "lookup_order", "args": {"order_id": "A-1"}, "split": 2}}, "done"]},
        {"steps": [{"transcript": {"text": ANSWERS[2]}}, {"audio": {"ms": ANSWER_MS[2]}}, "done"]}]});
    let env = HashMap::from([("RTC_ALLOW_PRIVATE_NETWORK".to_owned(), "1".to_owned())]);
    let Some(srv) = start(Engine::Sqlite, env).await? else {
        return Ok(());
    };
    let mock = RealtimeMock::start(RealtimeFlavor::OpenaiGa, MOCK_KEY, script).await?;
    let (_, ws) = srv.workspace("Voice").await?;
    ws.put(
        "/v1/secrets/secret__mock_realtime_key",
        json!({"value": MOCK_KEY}),
    )
    .await?
    .assert_status(201);
    let vad = json!({"type": "server_vad", "silenceDurationMs": 300});
    let iface = ws
        .create(
            "/v1/realtime-interfaces",
            interface("Mock Realtime", "openai", &mock.url(), vad),
        )
        .await?;
    let iface_id = iface["id"].as_str().unwrap().to_owned();
    // Push to talk: no turn detection, the host commits; Qwen's 16 kHz in.
    let push_script = json!({"userTranscripts": [PUSH_TO_TALK.0], "responses": [
        {"steps": [{"transcript": {"text": PUSH_TO_TALK.1}}, {"audio": {"ms": PUSH_TO_TALK.2}}, "done"]}]});
    let push_mock = RealtimeMock::start(RealtimeFlavor::Qwen, MOCK_KEY, push_script).await?;
    let push_iface = ws
        .create(
            "/v1/realtime-interfaces",
            interface(
                "Mock Push",
                "qwen",
                &push_mock.url(),
                json!({"type": "none"}),
            ),
        )
        .await?;
    let (orders, stub_calls) = order_stub(Duration::ZERO).await?;
    let binding = order_tool(&ws, &orders).await?;
    let desk = ws
        .create("/v1/assistants", assistant("Voice desk", &iface, &binding))
        .await?;
    ws.create(
        "/v1/assistants",
        assistant("Push to talk", &push_iface, &binding),
    )
    .await?;
    let dir = tempfile::tempdir()?;
    let wav = dir.path().join("mic.wav");
    let mic = [(true, 1000), (false, 1500), (true, 1000), (false, 2000)];
    std::fs::write(&wav, tone_wav(48_000, &mic))?;
    run_scenario(
        "realtime.spec.mjs",
        &srv.process.base_url,
        &ws,
        &[
            ("MIC_WAV", wav.to_str().unwrap()),
            ("PROVIDER_URL", mock.url().as_str()),
            ("USER_TEXTS", json!(USER_TEXTS).to_string().as_str()),
            ("ANSWERS", json!(ANSWERS).to_string().as_str()),
            ("ANSWER_MS", json!(ANSWER_MS).to_string().as_str()),
            ("PUSH_TO_TALK", json!(PUSH_TO_TALK).to_string().as_str()),
        ],
    )
    .await?;

    // The browser's microphone reached the provider: the tone, loud
    // enough to be speech, and at least the second it lasted.
    let appended = mock.frames_of_type("input_audio_buffer.append");
    let loudest = appended
        .iter()
        .map(|f| rms(f["audio"].as_str().unwrap_or_default()))
        .fold(0.0, f64::max);
    assert!(loudest > SPEECH_RMS, "the tone arrived: RMS {loudest}");
    assert!(
        mock.audio_ms_received() >= 3500,
        "{} ms of audio",
        mock.audio_ms_received()
    );
    // What the browser heard of the first answer before the second tone
    // is what the provider was told to keep.
    let truncations = mock.frames_of_type("conversation.item.truncate");
    assert_eq!(truncations.len(), 1, "{truncations:?}");
    let heard = truncations[0]["audio_end_ms"].as_u64().unwrap_or_default();
    assert!(heard > 0 && heard < ANSWER_MS[0], "{truncations:?}");
    assert!(
        mock.log().iter().all(|f| f.frame["type"] != "error"),
        "no error"
    );
    // The voice set in the form is the one the provider was asked for.
    let updates = mock.frames_of_type("session.update");
    assert!(
        updates
            .iter()
            .any(|u| u.to_string().contains(r#""voice":"verse""#)),
        "{updates:?}"
    );
    let saved = ws
        .get(&format!("/v1/realtime-interfaces/{iface_id}"))
        .await?;
    assert_eq!(saved.assert_status(200)["connection"]["voice"], "verse");
    assert_eq!(
        saved.body["connection"]["turnDetection"],
        json!({"type": "server_vad", "silenceDurationMs": 400})
    );
    assert!(
        updates
            .iter()
            .any(|u| u.to_string().contains(r#""silence_duration_ms":400"#)),
        "{updates:?}"
    );
    assert_eq!(
        saved.body["connection"]["apiKey"],
        "{{secret__mock_realtime_key}}"
    );
    // Push to talk: one commit, after at least the half second the page
    // waited for, at the 16 kHz the page sent.
    let commits = push_mock.frames_of_type("input_audio_buffer.commit");
    assert_eq!(commits.len(), 1, "{:?}", push_mock.log());
    assert!(
        push_mock.audio_ms_received() >= 500,
        "{} ms",
        push_mock.audio_ms_received()
    );
    // Stop sent the last chunk, then the commit; the bridge asked for
    // the answer after it.
    let log = push_mock.log();
    let types: Vec<&str> = log
        .iter()
        .filter_map(|f| f.frame["type"].as_str())
        .collect();
    let commit = types
        .iter()
        .position(|t| *t == "input_audio_buffer.commit")
        .unwrap();
    assert!(
        !types[commit..].contains(&"input_audio_buffer.append"),
        "{types:?}"
    );
    assert!(types[commit..].contains(&"response.create"), "{types:?}");

    // The typed turn's tool ran once, with the tenant typed at the start.
    assert_eq!(
        *stub_calls.lock().unwrap(),
        vec![json!({"id": "A-1", "tenant": "acme"})]
    );
    // What the session stored: the spoken turns as transcripts.
    let sessions = ws.get("/v1/sessions").await?;
    let sessions = sessions.assert_status(200)["data"]
        .as_array()
        .unwrap()
        .clone();
    let sid = sessions
        .iter()
        .find(|s| s["assistantId"] == desk["id"])
        .and_then(|s| s["id"].as_str())
        .unwrap()
        .to_owned();
    let messages = ws.get(&format!("/v1/sessions/{sid}/messages")).await?;
    let messages = messages.assert_status(200)["data"]
        .as_array()
        .unwrap()
        .clone();
    let spoken = |role: &str, text: &str| {
        messages
            .iter()
            .find(|m| m["role"] == role && m["source"] == "audio" && m["content"] == text)
    };
    for text in USER_TEXTS {
        assert!(spoken("user", text).is_some(), "{messages:?}");
    }
    assert_eq!(
        spoken("assistant", ANSWERS[0]).map(|m| &m["interrupted"]),
        Some(&json!(true)),
        "{messages:?}"
    );
    assert!(spoken("assistant", ANSWERS[1]).is_some(), "{messages:?}");
    Ok(())
}
