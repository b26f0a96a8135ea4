//! Other speech providers in a voice turn (design `voice-pipeline.md`
//! §4(e), §4(i)): the real espeak-ng speaking an answer (scenario 25) and
//! the ElevenLabs `stream-input` side of scenario 6, against its mock.

use std::time::Duration;

use base64::Engine as _;
use rtc_testkit::{ElevenLabsMock, Engine, MockLlm, MockReply, PilotMap, SpeechOpenAiMock};
use serde_json::json;

use crate::conversation::server;
use crate::voice::{
    OPENAI_KEY, openai_interfaces, received_ms, tone_ms, voice_assistant, voice_host,
};

const ANSWER: &str = "Your order has shipped. It should arrive on Friday afternoon.";
const ELEVENLABS_KEY: &str = "el-voice-0123456789";

/// Scenario 25: the admin's espeak interface speaks the answer through
/// the real espeak-ng: audible, of plausible length, at the host's rate.
async fn espeak_speaks(engine: Engine) -> anyhow::Result<()> {
    if std::process::Command::new(rtc_testkit::espeak_program())
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("espeak-ng is not installed: skipped");
        return Ok(());
    }
    let llm = MockLlm::start(vec![MockReply::text(ANSWER)]).await?;
    let Some(srv) = server(engine, &llm).await? else {
        return Ok(());
    };
    let speech = SpeechOpenAiMock::start(Some(OPENAI_KEY), PilotMap::new()).await?;
    let (ws_id, ws) = srv.workspace("A").await?;
    openai_interfaces(&ws, &speech.base_url).await?;
    srv.admin_in(&ws_id)
        .create(
            "/v1/speech-interfaces",
            json!({"id": "local-en", "name": "espeak-ng (en-us)",
            "kind": "tts", "connection": {"dialect": "espeak", "voice": "en-us", "speed": 175}}),
        )
        .await?;
    let id = voice_assistant(
        &ws,
        json!({"speech": {"sttInterfaceId": "oa-stt", "ttsInterfaceId": "local-en"}}),
    )
    .await?;
    let (_, mut host) = voice_host(&srv, &ws, &id, json!({}), (16_000, 24_000)).await?;
    let ready = host.until_type("session.speech_ready").await?;
    assert_eq!(ready["tts"]["dialect"], "espeak", "{ready}");
    host.send(json!({"type": "user.message", "text": "Where is my order?"}))
        .await?;
    host.until(Duration::from_secs(30), |v| v["type"] == "turn.completed")
        .await?;
    let item = crate::voice::last_answer_item(&host);
    let ms = received_ms(&host, &item);
    // About 10 words at 175 words a minute, with pauses.
    assert!((2_000..=9_000).contains(&ms), "{ms} ms of speech");
    let samples: Vec<i16> = host
        .of_type("audio.delta")
        .iter()
        .flat_map(|d| {
            base64::engine::general_purpose::STANDARD
                .decode(d["audio"].as_str().unwrap_or_default())
                .unwrap_or_default()
        })
        .collect::<Vec<u8>>()
        .chunks_exact(2)
        .map(|b| i16::from_le_bytes([b[0], b[1]]))
        .collect();
    assert!(rtc_testkit::speech_rms(&samples) > 300.0, "audible");
    assert!(
        host.of_type("audio.delta")
            .iter()
            .all(|d| d["rate"] == 24_000)
    );
    assert!(speech.requests().is_empty());
    Ok(())
}

/// A server and a workspace whose voice assistant speaks through the
/// ElevenLabs mock `el`; the assistant's id.
async fn elevenlabs_stage(
    engine: Engine,
    llm: &MockLlm,
    el: &ElevenLabsMock,
) -> anyhow::Result<Option<(crate::harness::Server, crate::harness::Api, String)>> {
    let Some(srv) = server(engine, llm).await? else {
        return Ok(None);
    };
    let speech = SpeechOpenAiMock::start(Some(OPENAI_KEY), PilotMap::new()).await?;
    let (_, ws) = srv.workspace("A").await?;
    openai_interfaces(&ws, &speech.base_url).await?;
    ws.put(
        "/v1/secrets/secret__elevenlabs_key",
        json!({ "value": ELEVENLABS_KEY }),
    )
    .await?
    .assert_status(201);
    ws.create(
        "/v1/speech-interfaces",
        json!({"id": "el-flash", "name": "ElevenLabs Flash",
        "kind": "tts", "connection": {"dialect": "elevenlabs", "url": el.url(),
            "model": "eleven_flash_v2_5", "voice": "JBFqnCBsd6RMkjVDRZzb", "sampleRate": 16000,
            "apiKey": "{{secret__elevenlabs_key}}"}}),
    )
    .await?;
    let id = voice_assistant(
        &ws,
        json!({"speech": {"sttInterfaceId": "oa-stt", "ttsInterfaceId": "el-flash"}}),
    )
    .await?;
    Ok(Some((srv, ws, id)))
}

/// Scenario 6, the ElevenLabs side: the path with the voice, `xi-api-key`,
/// the BOS `" "` first, every chunk ending in a space, EOS last, and the
/// audio delivered at the host's rate.
async fn elevenlabs_speaks(engine: Engine) -> anyhow::Result<()> {
    let llm = MockLlm::start(vec![MockReply::text(ANSWER)]).await?;
    let el = ElevenLabsMock::start(ELEVENLABS_KEY).await?;
    let Some((srv, ws, id)) = elevenlabs_stage(engine, &llm, &el).await? else {
        return Ok(());
    };
    let (_, mut host) = voice_host(&srv, &ws, &id, json!({}), (16_000, 24_000)).await?;
    host.until_type("session.speech_ready").await?;
    host.send(json!({"type": "user.message", "text": "Where is my order?"}))
        .await?;
    host.until(Duration::from_secs(20), |v| v["type"] == "turn.completed")
        .await?;
    let item = crate::voice::last_answer_item(&host);
    let got = received_ms(&host, &item);
    assert!(got.abs_diff(tone_ms(ANSWER)) <= 4, "{got} ms");

    let connections = el.connections();
    assert_eq!(connections.len(), 1, "{connections:?}");
    let c = &connections[0];
    assert!(c.header_key_ok);
    assert_eq!(c.voice.as_deref(), Some("JBFqnCBsd6RMkjVDRZzb"));
    assert_eq!(
        c.query.get("output_format").map(String::as_str),
        Some("pcm_16000")
    );
    assert_eq!(
        c.query.get("model_id").map(String::as_str),
        Some("eleven_flash_v2_5")
    );
    let frames = el.frames_of(c.index);
    assert_eq!(frames.first().map(|f| f["text"].clone()), Some(json!(" ")));
    assert_eq!(frames.last().map(|f| f["text"].clone()), Some(json!("")));
    let chunks = &frames[1..frames.len() - 1];
    assert!(!chunks.is_empty());
    assert!(
        chunks
            .iter()
            .all(|f| f["text"].as_str().is_some_and(|t| t.ends_with(' '))),
        "{frames:?}"
    );
    let said: String = chunks.iter().filter_map(|f| f["text"].as_str()).collect();
    assert_eq!(said.trim(), ANSWER);
    Ok(())
}

/// The ElevenLabs socket of a step's answer is opened when the step is
/// requested (design §4(e)): a slow handshake is hidden behind the model's
/// time to its first token, not added to the time to first audio.
async fn elevenlabs_socket_opens_ahead(engine: Engine) -> anyhow::Result<()> {
    let handshake = Duration::from_millis(500);
    let llm = MockLlm::start(vec![MockReply::Delayed(
        Duration::from_millis(900),
        Box::new(MockReply::text(ANSWER)),
    )])
    .await?;
    let el = ElevenLabsMock::start(ELEVENLABS_KEY).await?;
    el.set_handshake_delay(handshake);
    let Some((srv, ws, id)) = elevenlabs_stage(engine, &llm, &el).await? else {
        return Ok(());
    };
    let (_, mut host) = voice_host(&srv, &ws, &id, json!({}), (16_000, 16_000)).await?;
    host.until_type("session.speech_ready").await?;
    host.send(json!({"type": "user.message", "text": "Where is my order?"}))
        .await?;
    let done = host
        .until(Duration::from_secs(20), |v| v["type"] == "turn.completed")
        .await?;
    let latency = &done["latency"];
    // Released to TTS at once: the handshake is not in the chunk's time.
    let chunk = latency["chunkMs"].as_u64().unwrap_or(u64::MAX);
    assert!(chunk < 250, "{latency}");
    let ttft = latency["llmTtftMs"].as_u64().unwrap_or_default();
    assert!(ttft >= 800, "{latency}");
    let connections = el.connections();
    assert_eq!(connections.len(), 1, "one socket, used: {connections:?}");
    let said: String = el
        .frames_of(connections[0].index)
        .iter()
        .filter_map(|f| f["text"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(said.trim(), ANSWER);
    Ok(())
}

crate::harness::both!(espeak_speaks);
crate::harness::both!(elevenlabs_speaks);
crate::harness::both!(elevenlabs_socket_opens_ahead);
