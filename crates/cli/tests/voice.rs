//! The voice engine through the binary (design `voice-pipeline.md` §4(b),
//! §4(c), §4(g), §4(i)): a pipeline assistant with a `speech` block, a
//! host socket that says `client.hello{audio}`, and what it hears.
//! Test mode (scenario 23, and scenario 4's first message there) speaks
//! through the built-in tone, 20 ms per non-whitespace character, and
//! contacts no speech provider.

use std::time::Duration;

use base64::Engine as _;

use rtc_testkit::{Engine, MockLlm, MockReply, PilotMap, SpeechOpenAiMock};
use serde_json::{Value, json};

use crate::conversation::server;
use crate::harness::{Api, both};
use crate::realtime_support::Host;

pub const OPENAI_KEY: &str = "sk-voice-openai-0123456789";

/// Milliseconds the mock TTS speaks `text`: 20 per non-whitespace char.
pub fn tone_ms(text: &str) -> u64 {
    text.chars().filter(|c| !c.is_whitespace()).count() as u64 * 20
}

/// The last assistant `message.completed` the host saw (`Null`: none).
pub fn last_answer(host: &Host) -> Value {
    host.of_type("message.completed")
        .into_iter()
        .rfind(|m| m["role"] == "assistant")
        .cloned()
        .unwrap_or_default()
}

/// The item (message id) of the last answer the host saw.
pub fn last_answer_item(host: &Host) -> String {
    last_answer(host)["messageId"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Milliseconds of audio `host` received for `item`, from the total of
/// samples (frames need not be whole milliseconds).
pub fn received_ms(host: &Host, item: &str) -> u64 {
    let (mut samples, mut rate) = (0u64, 24_000u64);
    for d in host.of_type("audio.delta") {
        if d["itemId"] != item {
            continue;
        }
        rate = d["rate"].as_u64().unwrap_or(24_000);
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(d["audio"].as_str().unwrap_or_default())
            .map(|b| b.len())
            .unwrap_or(0);
        samples += (bytes / 2) as u64;
    }
    samples * 1000 / rate
}

/// OpenAI STT and TTS interfaces `oa-stt`/`oa-tts` at `url`, with the key.
pub async fn openai_interfaces(ws: &Api, url: &str) -> anyhow::Result<()> {
    ws.put(
        "/v1/secrets/secret__openai_key",
        json!({ "value": OPENAI_KEY }),
    )
    .await?
    .assert_status(201);
    ws.create(
        "/v1/speech-interfaces",
        json!({"id": "oa-stt", "name": "OpenAI STT", "kind": "stt",
        "connection": {"dialect": "openai", "url": url, "model": "gpt-4o-mini-transcribe",
            "sampleRate": 16000, "apiKey": "{{secret__openai_key}}"}}),
    )
    .await?;
    ws.create(
        "/v1/speech-interfaces",
        json!({"id": "oa-tts", "name": "OpenAI TTS", "kind": "tts",
        "connection": {"dialect": "openai", "url": url, "model": "gpt-4o-mini-tts",
            "voice": "marin", "format": "pcm", "apiKey": "{{secret__openai_key}}"}}),
    )
    .await?;
    Ok(())
}

/// A voice assistant on `oa-stt`/`oa-tts` with `extra` fields; its id.
pub async fn voice_assistant(ws: &Api, extra: Value) -> anyhow::Result<String> {
    let mut body = json!({"name": "Voice", "runMode": "pipeline",
        "systemPrompt": "You are a voice assistant.",
        "speech": {"sttInterfaceId": "oa-stt", "ttsInterfaceId": "oa-tts"}});
    if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
        b.extend(e.clone());
    }
    Ok(ws.create("/v1/assistants", body).await?["id"]
        .as_str()
        .unwrap_or_default()
        .to_owned())
}

/// A session of `assistant` (`extra` fields) and its host socket, hello
/// said at `input`/`output` Hz.
pub async fn voice_host(
    srv: &crate::harness::Server,
    ws: &Api,
    assistant: &str,
    extra: Value,
    rates: (u32, u32),
) -> anyhow::Result<(String, Host)> {
    let mut body = json!({"assistantId": assistant});
    if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
        b.extend(e.clone());
    }
    let s = ws.create("/v1/sessions", body).await?;
    let sid = s["id"].as_str().unwrap_or_default().to_owned();
    let token = s["clientToken"].as_str().unwrap_or_default();
    let mut host = Host::connect(srv, &sid, token).await?;
    host.send(json!({"type": "client.hello",
        "audio": {"inputRate": rates.0, "outputRate": rates.1}}))
        .await?;
    Ok((sid, host))
}

/// Read until `item` has `want` ms of audio (or 10 s passed).
pub async fn wait_audio(host: &mut Host, item: &str, want: u64) -> anyhow::Result<()> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while host.audio_ms(Some(item)) < want && tokio::time::Instant::now() < deadline {
        host.drain(Duration::from_millis(100)).await?;
    }
    assert_eq!(host.audio_ms(Some(item)), want, "audio of {item}");
    Ok(())
}

const ANSWER: &str = "Hello there. I can help with your order today.";

/// Scenario 23 (and 4's first message, in test mode): `speech_ready` says
/// `mock`; the first message and a typed turn's answer are the built-in
/// tone at the host's rate, 20 ms per character, in frames of at most
/// 100 ms with no `seq`; the answer is stored as spoken; `turn.completed`
/// carries the latency; the speech provider saw nothing.
async fn test_mode_turn_is_spoken(engine: Engine) -> anyhow::Result<()> {
    let llm = MockLlm::start(vec![MockReply::text(ANSWER)]).await?;
    let Some(srv) = server(engine, &llm).await? else {
        return Ok(());
    };
    let speech = SpeechOpenAiMock::start(Some(OPENAI_KEY), PilotMap::new()).await?;
    let (_, ws) = srv.workspace("A").await?;
    openai_interfaces(&ws, &speech.base_url).await?;
    let first = "Hi, this is the shop.";
    let id = voice_assistant(&ws, json!({"firstMessage": first})).await?;
    let (sid, mut host) =
        voice_host(&srv, &ws, &id, json!({"testMode": true}), (16_000, 24_000)).await?;

    let ready = host.until_type("session.speech_ready").await?;
    assert_eq!(ready["inputRate"], 16_000);
    assert_eq!(ready["outputRate"], 24_000);
    assert_eq!(ready["stt"]["dialect"], "mock");
    assert_eq!(ready["tts"]["dialect"], "mock");
    assert!(ready["seq"].as_i64().is_some(), "{ready}");

    // The first message is spoken: its item's tone is 20 ms a character.
    let messages = ws.get(&format!("/v1/sessions/{sid}/messages")).await?;
    let greeting = messages.body["data"][0].clone();
    assert_eq!(greeting["content"], first, "{}", messages.body);
    let greeting_id = greeting["id"].as_str().unwrap_or_default().to_owned();
    let want = tone_ms(first);
    wait_audio(&mut host, &greeting_id, want).await?;

    // A typed turn is answered aloud.
    host.send(json!({"type": "user.message", "text": "Where is my order?"}))
        .await?;
    let done = host.until_type("turn.completed").await?;
    let completed = last_answer(&host);
    assert_eq!(completed["content"], ANSWER);
    assert_eq!(completed["source"], "audio");
    let item = completed["messageId"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert_eq!(completed["itemId"], item.as_str());
    assert_eq!(host.audio_ms(Some(&item)), tone_ms(ANSWER));
    let deltas = host.of_type("audio.delta");
    assert!(
        deltas
            .iter()
            .all(|d| d["seq"].is_null() && d["rate"] == 24_000)
    );
    // Each frame ≤ 100 ms at 24 kHz (4800 bytes, 6400 base64 characters).
    assert!(
        deltas
            .iter()
            .all(|d| d["audio"].as_str().unwrap_or_default().len() <= 6_400)
    );
    // Released text is recorded as audio deltas, and adds up to the answer.
    let released: String = host
        .of_type("message.delta")
        .into_iter()
        .filter(|d| d["messageId"] == item.as_str())
        .map(|d| {
            assert_eq!(d["source"], "audio");
            d["delta"].as_str().unwrap_or_default().to_owned()
        })
        .collect();
    assert_eq!(released, ANSWER);
    // The audio came before the message and the end of the turn.
    let at = |pred: &dyn Fn(&Value) -> bool| host.seen.iter().position(pred);
    let last_audio = host
        .seen
        .iter()
        .rposition(|v| v["type"] == "audio.delta" && v["itemId"] == item.as_str());
    let completed_at = at(&|v| v["type"] == "message.completed" && v["messageId"] == item.as_str());
    assert!(last_audio < completed_at, "audio after the message");
    let latency = &done["latency"];
    assert!(
        latency["endpointMs"].is_null() && latency["sttMs"].is_null(),
        "{done}"
    );
    for field in [
        "llmTtftMs",
        "chunkMs",
        "ttsTtfbMs",
        "firstAudioMs",
        "serverMs",
    ] {
        assert!(latency[field].as_u64().is_some(), "{field}: {done}");
    }
    let first_audio = latency["firstAudioMs"].as_u64().unwrap_or_default();
    let parts: u64 = ["llmTtftMs", "chunkMs", "ttsTtfbMs", "serverMs"]
        .iter()
        .map(|f| latency[f].as_u64().unwrap_or_default())
        .sum();
    assert!(parts.abs_diff(first_audio) <= 1, "{latency}");

    // Stored as typed and as spoken; no audio is replayed on resume.
    let messages = ws.get(&format!("/v1/sessions/{sid}/messages")).await?;
    let data = messages.body["data"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let user = data
        .iter()
        .find(|m| m["role"] == "user")
        .cloned()
        .unwrap_or_default();
    assert!(user["source"].is_null(), "{user}");
    let spoken = data
        .iter()
        .find(|m| m["id"] == item.as_str())
        .cloned()
        .unwrap_or_default();
    assert_eq!(spoken["content"], ANSWER);
    assert_eq!(spoken["source"], "audio");
    let mut again = host.reconnect().await?;
    again.send(json!({"type": "resume", "afterSeq": 0})).await?;
    again.until_type("turn.completed").await?;
    assert!(again.of_type("audio.delta").is_empty());

    // Test mode contacts no speech provider.
    assert!(speech.requests().is_empty(), "{:?}", speech.requests());
    Ok(())
}

both!(test_mode_turn_is_spoken);

/// Scenario 4: creating the session contacts no provider; the hello is
/// answered with the host's rates; the first message is spoken by the
/// TTS (which got exactly it) at the host's rate, its length matching.
async fn first_message_is_spoken(engine: Engine) -> anyhow::Result<()> {
    let llm = MockLlm::start(Vec::new()).await?;
    let Some(srv) = server(engine, &llm).await? else {
        return Ok(());
    };
    let speech = SpeechOpenAiMock::start(Some(OPENAI_KEY), PilotMap::new()).await?;
    let (_, ws) = srv.workspace("A").await?;
    openai_interfaces(&ws, &speech.base_url).await?;
    let first = "Welcome to the shop, how can I help?";
    let id = voice_assistant(&ws, json!({"firstMessage": first})).await?;
    let s = ws
        .create("/v1/sessions", json!({"assistantId": id}))
        .await?;
    assert!(
        speech.requests().is_empty(),
        "creating the session contacts no provider"
    );
    let sid = s["id"].as_str().unwrap_or_default();
    let mut host = Host::connect(&srv, sid, s["clientToken"].as_str().unwrap_or_default()).await?;
    host.send(json!({"type": "client.hello", "audio": {"inputRate": 24000, "outputRate": 16000}}))
        .await?;
    let ready = host.until_type("session.speech_ready").await?;
    assert_eq!(
        (ready["inputRate"].as_u64(), ready["outputRate"].as_u64()),
        (Some(24_000), Some(16_000))
    );
    assert_eq!(ready["tts"]["voice"], "marin");
    let messages = ws.get(&format!("/v1/sessions/{sid}/messages")).await?;
    let greeting = messages.body["data"][0]["id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while received_ms(&host, &greeting) + 2 < tone_ms(first)
        && tokio::time::Instant::now() < deadline
    {
        host.drain(Duration::from_millis(100)).await?;
    }
    assert!(received_ms(&host, &greeting).abs_diff(tone_ms(first)) <= 2);
    assert!(
        host.of_type("audio.delta")
            .iter()
            .all(|d| d["rate"] == 16_000)
    );
    let said: Vec<String> = speech
        .requests_to("/audio/speech")
        .iter()
        .map(|r| r.fields["input"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(said.join(" "), first);
    Ok(())
}

/// `RTC_VOICE_MAX_SESSIONS`: a workspace's voice hosts beyond it are
/// refused with a stable code; a socket without audio is no voice host.
async fn voice_hosts_are_bounded(engine: Engine) -> anyhow::Result<()> {
    let llm = MockLlm::start(Vec::new()).await?;
    let env = std::collections::HashMap::from([
        ("RTC_LLM_BASE_URL".to_owned(), llm.base_url.clone()),
        ("RTC_LLM_MODEL".to_owned(), "mock-model".to_owned()),
        ("RTC_ALLOW_PRIVATE_NETWORK".to_owned(), "1".to_owned()),
        ("RTC_VOICE_MAX_SESSIONS".to_owned(), "1".to_owned()),
    ]);
    let Some(srv) = crate::harness::start(engine, env).await? else {
        return Ok(());
    };
    let speech = SpeechOpenAiMock::start(Some(OPENAI_KEY), PilotMap::new()).await?;
    let (_, ws) = srv.workspace("A").await?;
    openai_interfaces(&ws, &speech.base_url).await?;
    let id = voice_assistant(&ws, json!({})).await?;
    let (_, mut one) =
        voice_host(&srv, &ws, &id, json!({"testMode": true}), (16_000, 16_000)).await?;
    one.until_type("session.speech_ready").await?;
    let (_, mut two) =
        voice_host(&srv, &ws, &id, json!({"testMode": true}), (16_000, 16_000)).await?;
    let refused = two
        .until(Duration::from_secs(10), |v| {
            v["error"].is_object() || v["code"].is_string()
        })
        .await?;
    assert!(
        refused.to_string().contains("voice_sessions_limited"),
        "{refused}"
    );
    // Audio without a voice host is refused, not heard.
    two.send(json!({"type": "audio.append", "audio": "AAAAAA=="}))
        .await?;
    let refused = two
        .until(Duration::from_secs(10), |v| {
            v.to_string().contains("not_voice_host")
        })
        .await?;
    assert!(refused.to_string().contains("not_voice_host"));
    // Once the first host leaves, another may attach.
    drop(one);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        two.send(
            json!({"type": "client.hello", "audio": {"inputRate": 16000, "outputRate": 16000}}),
        )
        .await?;
        let answer = two
            .until(Duration::from_secs(5), |v| {
                v["type"] == "session.speech_ready"
                    || v.to_string().contains("voice_sessions_limited")
            })
            .await?;
        if answer["type"] == "session.speech_ready" {
            break;
        }
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "the slot was never freed"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok(())
}

both!(first_message_is_spoken);
both!(voice_hosts_are_bounded);
