//! The console's playground of a voice session in a real browser (design
//! `voice-pipeline.md` §4(h), scenario 26 of §4(i)): a pipeline assistant
//! whose `speech` block names OpenAI-compatible STT and TTS interfaces on
//! the speech mock; Chromium's fake microphone plays a WAV this test
//! writes, espeak-ng saying "Where is my order?" with the pilot tone that
//! the STT mock maps to the transcript, between silences. The scenario
//! `console/voice.spec.mjs` opens `#/playground/{id}` directly, clicks
//! Talk, and waits for the ready state, the spoken transcript, the
//! scripted answer, its latency readout and `window.rtcVoice.receivedMs`;
//! then a typed turn is answered aloud. The scenario runs again on a
//! session whose STT is the Deepgram mock (streaming): its interim text
//! shows under the input. This side checks what the mocks got (one 16 kHz
//! upload, the answers spoken, Deepgram's stream) and what the sessions
//! stored.

use std::collections::HashMap;

use rtc_testkit::{
    DeepgramMock, Engine, MockLlm, MockReply, SpeechOpenAiMock, parse_wav, pilot_map, silence,
    speech_with_pilot, to_samples, wav_bytes,
};
use serde_json::{Value, json};

use crate::console::run_scenario;
use crate::harness::start;
use crate::voice::{OPENAI_KEY, openai_interfaces, voice_assistant};

/// What the user says, its pilot tone, and the transcript the STT mock
/// answers for that pilot.
const SPOKEN: (&str, u32, &str) = ("Where is my order?", 2700, "where is my order");
/// The answer to the spoken turn.
const ANSWER: &str = "Your order ships on Friday.";
/// A typed turn and its answer.
const TYPED: (&str, &str) = ("Thanks!", "You are welcome.");
/// The Deepgram mock's key, kept as `secret__deepgram_key`.
const DEEPGRAM_KEY: &str = "dg-voice-console-0123456789";
/// The fake microphone's rate.
const MIC_RATE: u32 = 48_000;

/// The model's script: the spoken transcript gets [`ANSWER`], anything
/// else the typed answer.
fn script(req: &Value) -> MockReply {
    let last_user = req["messages"]
        .as_array()
        .and_then(|m| m.iter().rfind(|m| m["role"] == "user"))
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_owned();
    if last_user.contains(SPOKEN.2) {
        MockReply::text(ANSWER)
    } else {
        MockReply::text(TYPED.1)
    }
}

/// The fake microphone: a second of silence, the utterance over its
/// pilot, then four seconds of silence that end the turn.
async fn mic_wav() -> anyhow::Result<Vec<u8>> {
    let mut samples = silence(1000, MIC_RATE);
    samples.extend(to_samples(
        &speech_with_pilot(SPOKEN.0, MIC_RATE, SPOKEN.1).await?,
    ));
    samples.extend(silence(4000, MIC_RATE));
    Ok(wav_bytes(&samples, MIC_RATE, false))
}

#[tokio::test]
async fn console_voice_playground_in_a_real_browser() -> anyhow::Result<()> {
    let llm = MockLlm::with_recorded_responder(script).await?;
    let env = HashMap::from([
        ("RTC_LLM_BASE_URL".to_owned(), llm.base_url.clone()),
        ("RTC_LLM_MODEL".to_owned(), "mock-model".to_owned()),
        // The speech mock listens on loopback.
        ("RTC_ALLOW_PRIVATE_NETWORK".to_owned(), "1".to_owned()),
    ]);
    let Some(srv) = start(Engine::Sqlite, env).await? else {
        return Ok(());
    };
    let speech =
        SpeechOpenAiMock::start(Some(OPENAI_KEY), pilot_map([(SPOKEN.1, SPOKEN.2)])).await?;
    let (_, ws) = srv.workspace("Voice").await?;
    openai_interfaces(&ws, &speech.base_url).await?;
    let assistant = voice_assistant(&ws, json!({"name": "Voice desk"})).await?;
    let session = ws
        .create("/v1/sessions", json!({"assistantId": assistant}))
        .await?;
    let sid = session["id"].as_str().unwrap_or_default().to_owned();
    let stored = |sid: String| {
        let ws = &ws;
        async move {
            let messages = ws.get(&format!("/v1/sessions/{sid}/messages")).await?;
            let messages = messages.assert_status(200)["data"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            anyhow::Ok(messages)
        }
    };
    let find = |messages: &[Value], role: &str, text: &str| {
        messages
            .iter()
            .find(|m| m["role"] == role && m["content"] == text)
            .map(|m| m["source"].clone())
    };

    let dir = tempfile::tempdir()?;
    let wav = dir.path().join("mic.wav");
    let bytes = mic_wav().await?;
    assert_eq!(parse_wav(&bytes)?.rate, MIC_RATE);
    std::fs::write(&wav, bytes)?;
    run_scenario(
        "voice.spec.mjs",
        &srv.process.base_url,
        &ws,
        &[
            ("MIC_WAV", wav.to_str().unwrap_or_default()),
            ("SESSION_ID", sid.as_str()),
            ("READY", "ready · STT openai (gpt-4o-mini-transcribe) · TTS openai (marin) · in 16000 Hz · out 24000 Hz"),
            ("USER_TEXT", SPOKEN.2),
            ("ANSWER", ANSWER),
            ("TYPED", json!(TYPED).to_string().as_str()),
        ],
    )
    .await?;

    // The browser's microphone reached the STT: one upload at 16 kHz,
    // whose pilot picked the transcript; both answers were spoken.
    let uploads = speech.requests_to("transcriptions");
    assert_eq!(uploads.len(), 1, "{uploads:?}");
    assert!(uploads[0].authorized, "{uploads:?}");
    let spoken: Vec<String> = speech
        .requests_to("speech")
        .iter()
        .map(|r| r.fields["input"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(
        spoken.concat().replace(' ', ""),
        [ANSWER, TYPED.1].concat().replace(' ', ""),
        "{spoken:?}"
    );
    // What the session stored: the transcript as a spoken user message,
    // the answers as spoken.
    let messages = stored(sid).await?;
    assert_eq!(
        find(&messages, "user", SPOKEN.2),
        Some(json!("audio")),
        "{messages:?}"
    );
    for answer in [ANSWER, TYPED.1] {
        assert_eq!(
            find(&messages, "assistant", answer),
            Some(json!("audio")),
            "{messages:?}"
        );
    }

    // Deepgram's streaming STT: interim text under the input.
    let dg = DeepgramMock::start(DEEPGRAM_KEY, pilot_map([(SPOKEN.1, SPOKEN.2)])).await?;
    ws.put(
        "/v1/secrets/secret__deepgram_key",
        json!({ "value": DEEPGRAM_KEY }),
    )
    .await?
    .assert_status(201);
    ws.create(
        "/v1/speech-interfaces",
        json!({"id": "dg", "name": "Deepgram", "kind": "stt",
        "connection": {"dialect": "deepgram", "url": dg.url(), "model": "nova-3",
            "language": "en-US", "sampleRate": 16000, "apiKey": "{{secret__deepgram_key}}"}}),
    )
    .await?;
    let streaming = voice_assistant(
        &ws,
        json!({"name": "Streaming desk",
            "speech": {"sttInterfaceId": "dg", "ttsInterfaceId": "oa-tts"}}),
    )
    .await?;
    let session = ws
        .create("/v1/sessions", json!({"assistantId": streaming}))
        .await?;
    let sid = session["id"].as_str().unwrap_or_default().to_owned();
    run_scenario(
        "voice.spec.mjs",
        &srv.process.base_url,
        &ws,
        &[
            ("MIC_WAV", wav.to_str().unwrap_or_default()),
            ("SESSION_ID", sid.as_str()),
            (
                "READY",
                "ready · STT deepgram (nova-3) · TTS openai (marin) · in 16000 Hz · out 24000 Hz",
            ),
            ("USER_TEXT", SPOKEN.2),
            ("ANSWER", ANSWER),
            ("STREAMING", "1"),
        ],
    )
    .await?;
    assert!(dg.audio_bytes() > 16_000, "{} bytes", dg.audio_bytes());
    let messages = stored(sid).await?;
    assert_eq!(
        find(&messages, "user", SPOKEN.2),
        Some(json!("audio")),
        "{messages:?}"
    );
    assert_eq!(
        find(&messages, "assistant", ANSWER),
        Some(json!("audio")),
        "{messages:?}"
    );
    Ok(())
}
