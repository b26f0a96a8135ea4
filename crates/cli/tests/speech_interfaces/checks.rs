//! `POST /v1/speech-interfaces/{id}/check` against the dialect-accurate
//! speech mocks (a working interface and one with a wrong key, per
//! dialect) and the real espeak-ng; the per-workspace rate of checks; and
//! an espeak interface refused where espeak-ng is missing (424).

use std::collections::HashMap;

use rtc_testkit::{DeepgramMock, ElevenLabsMock, Engine, SpeechOpenAiMock, pilot_map, tts_ms};
use serde_json::{Value, json};

use super::{
    DEEPGRAM_KEY, ELEVENLABS_KEY, OPENAI_KEY, put, seed_keys, stt_deepgram, stt_openai,
    tts_elevenlabs, tts_espeak, tts_openai,
};
use crate::harness::{Api, both, start};

const WRONG_KEY: &str = "wrong-key-that-must-not-leak-42";

async fn check(ws: &Api, id: &str) -> anyhow::Result<Value> {
    let reply = ws
        .post(&format!("/v1/speech-interfaces/{id}/check"), json!({}))
        .await?;
    Ok(reply.assert_status(200).clone())
}

/// `body` under `-bad` with the wrong key's secret.
fn with_wrong_key(body: &Value) -> Value {
    let id = format!("{}-bad", body["id"].as_str().unwrap_or_default());
    let mut bad = put(
        body.clone(),
        "/connection/apiKey",
        json!("{{secret__wrong_key}}"),
    );
    bad["id"] = json!(id);
    bad
}

fn assert_ok(report: &Value, what: &str) {
    assert_eq!(report["ok"], true, "{what}: {report}");
    assert!(report["latencyMs"].is_u64(), "{what}: {report}");
    assert!(report.get("error").is_none(), "{what}: {report}");
}

fn assert_failed(report: &Value, what: &str) {
    assert_eq!(report["ok"], false, "{what}: {report}");
    let error = report["error"].as_str().unwrap_or_default();
    assert!(!error.is_empty(), "{what}: {report}");
    for key in [WRONG_KEY, OPENAI_KEY, DEEPGRAM_KEY, ELEVENLABS_KEY] {
        assert!(!error.contains(key), "{what}: the key is scrubbed: {error}");
    }
}

/// The TTS spoke "This is a test." as the mocks do: 20 ms a character.
fn assert_spoke_the_test(report: &Value, what: &str) {
    let want = tts_ms("This is a test.");
    let got = report["audioMs"].as_u64().unwrap_or_default();
    assert!(
        got + 20 >= want && got <= want + 20,
        "{what}: {got} ms of audio, want {want}: {report}"
    );
}

async fn checks_against_the_mocks(engine: Engine) -> anyhow::Result<()> {
    let openai = SpeechOpenAiMock::start(Some(OPENAI_KEY), pilot_map([])).await?;
    let deepgram = DeepgramMock::start(DEEPGRAM_KEY, pilot_map([])).await?;
    let elevenlabs = ElevenLabsMock::start(ELEVENLABS_KEY).await?;
    let env = HashMap::from([
        ("RTC_ALLOW_PRIVATE_NETWORK".to_owned(), "1".to_owned()),
        ("RTC_SPEECH_CHECKS_PER_MINUTE".to_owned(), "9".to_owned()),
    ]);
    let Some(srv) = start(engine, env).await? else {
        return Ok(());
    };
    let (ws_id, ws) = srv.workspace("Checks").await?;
    seed_keys(&ws).await?;
    ws.put("/v1/secrets/secret__wrong_key", json!({"value": WRONG_KEY}))
        .await?
        .assert_status(201);
    let good = [
        stt_openai(&openai.base_url),
        tts_openai(&openai.base_url),
        stt_deepgram(&deepgram.url()),
        tts_elevenlabs(&elevenlabs.url()),
    ];
    for body in &good {
        ws.create("/v1/speech-interfaces", body.clone()).await?;
        ws.create("/v1/speech-interfaces", with_wrong_key(body))
            .await?;
    }

    // OpenAI-compatible STT: one upload of 1 s of silence, 16 kHz WAV.
    let report = check(&ws, "oa-stt").await?;
    assert_ok(&report, "openai stt");
    let uploads = openai.requests_to("transcriptions");
    assert_eq!(uploads.len(), 1, "{uploads:#?}");
    assert!(uploads[0].authorized);
    assert_eq!(uploads[0].fields["model"], "gpt-4o-mini-transcribe");
    let wav = uploads[0].wav.as_ref().expect("a WAV was uploaded");
    assert_eq!((wav.rate, wav.ms()), (16_000, 1_000));
    assert_failed(&check(&ws, "oa-stt-bad").await?, "openai stt, wrong key");

    // OpenAI-compatible TTS: "This is a test." as pcm.
    let report = check(&ws, "oa-tts").await?;
    assert_ok(&report, "openai tts");
    assert_spoke_the_test(&report, "openai tts");
    let speech = openai.requests_to("speech");
    assert_eq!(speech.len(), 1, "{speech:#?}");
    assert!(speech[0].authorized);
    assert_eq!(
        (
            &speech[0].fields["model"],
            &speech[0].fields["voice"],
            &speech[0].fields["input"],
            &speech[0].fields["response_format"]
        ),
        (
            &json!("gpt-4o-mini-tts"),
            &json!("marin"),
            &json!("This is a test."),
            &json!("pcm")
        )
    );
    assert_failed(&check(&ws, "oa-tts-bad").await?, "openai tts, wrong key");

    // Deepgram: the handshake with `Token`, linear16 at the interface's rate.
    let report = check(&ws, "dg-nova3").await?;
    assert_ok(&report, "deepgram");
    let connections = deepgram.connections();
    let first = &connections[0];
    assert!(first.accepted, "{first:?}");
    assert_eq!(
        first.authorization.as_deref(),
        Some(format!("Token {DEEPGRAM_KEY}").as_str())
    );
    assert_eq!(first.query.get("model").map(String::as_str), Some("nova-3"));
    assert_eq!(
        first.query.get("sample_rate").map(String::as_str),
        Some("16000")
    );
    assert_eq!(
        first.query.get("encoding").map(String::as_str),
        Some("linear16")
    );
    assert!(deepgram.audio_bytes() >= 32_000, "1 s of 16 kHz audio sent");
    assert_failed(&check(&ws, "dg-nova3-bad").await?, "deepgram, wrong key");

    // ElevenLabs: the voice's `stream-input` with `xi-api-key`.
    let report = check(&ws, "el-flash").await?;
    assert_ok(&report, "elevenlabs");
    assert_spoke_the_test(&report, "elevenlabs");
    let connections = elevenlabs.connections();
    let first = &connections[0];
    assert_eq!(first.voice.as_deref(), Some("JBFqnCBsd6RMkjVDRZzb"));
    assert!(first.header_key_ok && first.finished, "{first:?}");
    assert_eq!(
        first.query.get("model_id").map(String::as_str),
        Some("eleven_flash_v2_5")
    );
    assert_failed(&check(&ws, "el-flash-bad").await?, "elevenlabs, wrong key");

    // The real espeak-ng: audible speech of a plausible length.
    let admin = srv.admin_in(&ws_id);
    admin.create("/v1/speech-interfaces", tts_espeak()).await?;
    let report = check(&ws, "local-en").await?;
    assert_ok(&report, "espeak");
    let audio = report["audioMs"].as_u64().unwrap_or_default();
    assert!(
        (500..=4_000).contains(&audio),
        "\"This is a test.\" at 175 wpm: {audio} ms: {report}"
    );

    // Nine checks this minute: the workspace's share is spent...
    let reply = ws
        .post("/v1/speech-interfaces/oa-tts/check", json!({}))
        .await?;
    reply.assert_error(429, "too_many_speech_checks", None);
    assert_eq!(openai.requests_to("speech").len(), 2, "not sent");
    ws.post("/v1/speech-interfaces/ghost/check", json!({}))
        .await?
        .assert_error(404, "not_found", None);
    // ...another workspace's is not.
    let (_, other) = srv.workspace("Other").await?;
    seed_keys(&other).await?;
    other
        .create("/v1/speech-interfaces", tts_openai(&openai.base_url))
        .await?;
    assert_ok(&check(&other, "oa-tts").await?, "another workspace");
    Ok(())
}

both!(checks_against_the_mocks);

async fn espeak_missing_is_424(engine: Engine) -> anyhow::Result<()> {
    let env = HashMap::from([(
        "RTC_ESPEAK_BIN".to_owned(),
        "/nonexistent/espeak-ng".to_owned(),
    )]);
    let Some(srv) = start(engine, env).await? else {
        return Ok(());
    };
    let (ws_id, _) = srv.workspace("No espeak").await?;
    let admin = srv.admin_in(&ws_id);
    let reply = admin.post("/v1/speech-interfaces", tts_espeak()).await?;
    reply.assert_error(424, "speech_engine_unavailable", Some("connection.dialect"));
    assert!(reply.text.contains("RTC_ESPEAK_BIN"), "{}", reply.text);
    // The rules still answer first.
    let bad = put(tts_espeak(), "/connection/voice", json!("a b"));
    admin
        .post("/v1/speech-interfaces", bad)
        .await?
        .assert_error(422, "invalid_value", Some("connection.voice"));
    Ok(())
}

both!(espeak_missing_is_424);
