//! The console's Speech page and an assistant's Voice section in a real
//! browser (design `voice-pipeline.md` §4(a), §4(h)), the scenario in
//! `console/speech.spec.mjs`: an OpenAI TTS and a Deepgram STT interface
//! made through the form against the testkit's dialect-accurate mocks
//! (fields that follow the dialect, the key picked from the workspace's
//! secrets, a missing model shown at its field), an espeak interface
//! refused to a workspace key, Check that passes and one that fails with
//! the provider's error (the wrong key scrubbed), a pipeline assistant
//! given a voice (a bad silence shown at its field), saved and reloaded,
//! an interface in use that cannot be deleted until "No voice" took it off
//! the assistant using it. This side
//! checks what the forms saved through the API and what the mocks heard.

use std::collections::HashMap;

use rtc_testkit::{DeepgramMock, Engine, MockLlm, SpeechOpenAiMock, pilot_map};
use serde_json::json;

use crate::console::run_scenario;
use crate::harness::start;

/// The keys the mocks expect, kept as workspace secrets.
const OPENAI_KEY: &str = "sk-speech-mock-0123456789";
const DEEPGRAM_KEY: &str = "dg-mock-0123456789";
/// A key the OpenAI mock refuses (and echoes back, to prove it is scrubbed).
const WRONG_KEY: &str = "sk-wrong-key-9876543210";

#[tokio::test]
async fn console_speech_in_a_real_browser() -> anyhow::Result<()> {
    let llm = MockLlm::start(vec![]).await?;
    let openai = SpeechOpenAiMock::start(Some(OPENAI_KEY), pilot_map([])).await?;
    let deepgram = DeepgramMock::start(DEEPGRAM_KEY, pilot_map([])).await?;
    let env = HashMap::from([
        ("RTC_LLM_BASE_URL".to_owned(), llm.base_url.clone()),
        ("RTC_ALLOW_PRIVATE_NETWORK".to_owned(), "1".to_owned()),
    ]);
    let Some(srv) = start(Engine::Sqlite, env).await? else {
        return Ok(());
    };
    let (ws_id, ws) = srv.workspace("Speech").await?;
    for (name, value) in [
        ("secret__openai_speech", OPENAI_KEY),
        ("secret__deepgram", DEEPGRAM_KEY),
        ("secret__wrong_key", WRONG_KEY),
    ] {
        ws.put(&format!("/v1/secrets/{name}"), json!({ "value": value }))
            .await?
            .assert_status(201);
    }
    let broken = ws
        .create(
            "/v1/speech-interfaces",
            json!({"name": "Broken TTS", "kind": "tts",
                "connection": {"dialect": "openai", "url": openai.base_url, "model": "gpt-4o-mini-tts",
                    "voice": "marin", "apiKey": "{{secret__wrong_key}}"}}),
        )
        .await?;
    // The admin's local voice, listed as admin only.
    srv.admin_in(&ws_id)
        .create(
            "/v1/speech-interfaces",
            json!({"name": "Local espeak", "kind": "tts",
                "connection": {"dialect": "espeak", "voice": "en-us", "speed": 175}}),
        )
        .await?;
    let assistant = ws
        .create(
            "/v1/assistants",
            json!({"name": "Receptionist", "runMode": "pipeline", "systemPrompt": "Greet callers."}),
        )
        .await?;
    let assistant_id = assistant["id"].as_str().unwrap().to_owned();
    // An assistant with a voice, to be taken away in the console.
    let old = ws
        .create(
            "/v1/speech-interfaces",
            json!({"name": "Old STT", "kind": "stt",
                "connection": {"dialect": "openai", "url": openai.base_url, "model": "whisper-1",
                    "apiKey": "{{secret__openai_speech}}"}}),
        )
        .await?;
    ws.create(
        "/v1/assistants",
        json!({"name": "Spare", "runMode": "pipeline", "systemPrompt": "Help.",
            "speech": {"sttInterfaceId": old["id"], "ttsInterfaceId": broken["id"]}}),
    )
    .await?;

    run_scenario(
        "speech.spec.mjs",
        &srv.process.base_url,
        &ws,
        &[
            ("OPENAI_URL", openai.base_url.as_str()),
            ("DEEPGRAM_URL", deepgram.url().as_str()),
            ("WRONG_KEY", WRONG_KEY),
        ],
    )
    .await?;

    // What the forms saved: only the fields each dialect takes, the key a
    // reference.
    let listed = ws.get("/v1/speech-interfaces").await?;
    let items = listed.assert_status(200)["data"]
        .as_array()
        .unwrap()
        .clone();
    let named = |n: &str| items.iter().find(|i| i["name"] == n).cloned();
    let tts = named("OpenAI TTS").expect("the TTS was made in the form");
    assert_eq!(tts["kind"], "tts");
    assert_eq!(
        tts["connection"],
        json!({"dialect": "openai", "url": openai.base_url, "model": "gpt-4o-mini-tts",
            "voice": "marin", "format": "pcm", "apiKey": "{{secret__openai_speech}}", "speed": 1.25})
    );
    let stt = named("Deepgram STT").expect("the STT was made in the form");
    assert_eq!(stt["kind"], "stt");
    assert_eq!(
        stt["connection"],
        json!({"dialect": "deepgram", "url": deepgram.url(), "language": "en-US",
            "sampleRate": 16000, "apiKey": "{{secret__deepgram}}"})
    );
    assert!(
        named("Console espeak").is_none(),
        "an espeak interface is refused to a workspace key"
    );
    assert!(named("Broken TTS").is_some() && named("Local espeak").is_some());
    assert!(
        named("Old STT").is_none(),
        "deleted once no assistant used it"
    );

    // The assistant's voice as the Voice section saved it.
    let saved = ws.get(&format!("/v1/assistants/{assistant_id}")).await?;
    let saved = saved.assert_status(200);
    assert_eq!(
        saved["speech"],
        json!({"sttInterfaceId": stt["id"], "ttsInterfaceId": tts["id"],
            "turnDetection": {"type": "stt", "threshold": 0.5, "prefixPaddingMs": 300,
                "silenceDurationMs": 700, "maxUtteranceMs": 20000},
            "bargeIn": {"enabled": true, "minSpeechMs": 250},
            "toolFiller": {"afterMs": 800, "text": "One moment."}})
    );
    let spare = ws.get("/v1/assistants").await?;
    let spare = spare.assert_status(200)["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "Spare")
        .cloned()
        .expect("the second assistant was made");
    assert!(
        spare.get("speech").is_none_or(serde_json::Value::is_null),
        "No voice removed the block: {spare}"
    );

    // Each Check sent one request: "This is a test." with the right key,
    // once with the wrong one; the STT's socket was opened with its token.
    let spoken = openai.requests_to("/audio/speech");
    assert!(
        spoken
            .iter()
            .any(|r| r.authorized && r.fields["input"] == "This is a test."),
        "{spoken:?}"
    );
    assert!(spoken.iter().any(|r| !r.authorized), "{spoken:?}");
    let sockets = deepgram.connections();
    assert!(
        sockets
            .iter()
            .any(|c| c.authorization.as_deref() == Some(&format!("Token {DEEPGRAM_KEY}"))),
        "{sockets:?}"
    );
    // The interface in use cannot be deleted through the API either.
    ws.delete(&format!(
        "/v1/speech-interfaces/{}",
        stt["id"].as_str().unwrap()
    ))
    .await?
    .assert_error(409, "in_use", None);
    Ok(())
}
