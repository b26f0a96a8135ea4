//! A voice turn through Deepgram's streaming STT and ElevenLabs' TTS
//! (design `voice-pipeline.md` §1.3, §4(d), scenarios 6 and 7): the
//! handshake's query and `Token`, binary audio all along, interim text as
//! ephemeral frames, `Finalize` at the end of the turn and the final as
//! the user message; `KeepAlive` while the host is silent, `CloseStream`
//! when it leaves. With barge-in off, speech over the assistant reaches
//! Deepgram as silence of the same length (§4(d)).

use std::time::Duration;

use rtc_testkit::{DeepgramMock, ElevenLabsMock, Engine, MockLlm, MockReply, pilot_map};
use serde_json::json;

use crate::conversation::server;
use crate::harness::{Api, Server};
use crate::realtime_support::Host;
use crate::voice::{received_ms, tone_ms, voice_assistant, voice_host};
use crate::voice_audio::{speak, utterance};

pub(crate) const DEEPGRAM_KEY: &str = "dg-voice-0123456789";
pub(crate) const ELEVENLABS_KEY: &str = "el-voice-0123456789";
const HEARD: &str = "where is my order";
const ANSWER: &str = "It left our warehouse this morning.";

/// Deepgram (`dg`) and ElevenLabs (`el`) interfaces with their keys as
/// secrets, and a voice assistant on them with `bargeIn.enabled`; its id.
pub(crate) async fn deepgram_assistant(
    ws: &Api,
    dg: &DeepgramMock,
    el: &ElevenLabsMock,
    barge_in: bool,
) -> anyhow::Result<String> {
    for (name, value) in [
        ("secret__deepgram_key", DEEPGRAM_KEY),
        ("secret__elevenlabs_key", ELEVENLABS_KEY),
    ] {
        ws.put(&format!("/v1/secrets/{name}"), json!({ "value": value }))
            .await?
            .assert_status(201);
    }
    ws.create(
        "/v1/speech-interfaces",
        json!({"id": "dg", "name": "Deepgram", "kind": "stt",
        "connection": {"dialect": "deepgram", "url": dg.url(), "model": "nova-3",
            "language": "en-US", "sampleRate": 16000, "apiKey": "{{secret__deepgram_key}}"}}),
    )
    .await?;
    ws.create(
        "/v1/speech-interfaces",
        json!({"id": "el", "name": "ElevenLabs", "kind": "tts",
        "connection": {"dialect": "elevenlabs", "url": el.url(), "model": "eleven_flash_v2_5",
            "voice": "JBFqnCBsd6RMkjVDRZzb", "sampleRate": 24000,
            "apiKey": "{{secret__elevenlabs_key}}"}}),
    )
    .await?;
    voice_assistant(
        ws,
        json!({"speech": {"sttInterfaceId": "dg", "ttsInterfaceId": "el",
            "bargeIn": {"enabled": barge_in}}}),
    )
    .await
}

async fn stage(
    engine: Engine,
    llm: &MockLlm,
    barge_in: bool,
) -> anyhow::Result<Option<(Server, Api, DeepgramMock, ElevenLabsMock, Host)>> {
    let Some(srv) = server(engine, llm).await? else {
        return Ok(None);
    };
    let dg = DeepgramMock::start(DEEPGRAM_KEY, pilot_map([(2700, HEARD)])).await?;
    let el = ElevenLabsMock::start(ELEVENLABS_KEY).await?;
    let (_, ws) = srv.workspace("A").await?;
    let id = deepgram_assistant(&ws, &dg, &el, barge_in).await?;
    let (_, mut host) = voice_host(&srv, &ws, &id, json!({}), (24_000, 24_000)).await?;
    host.until_type("session.speech_ready").await?;
    Ok(Some((srv, ws, dg, el, host)))
}

/// Scenario 6.
async fn deepgram_and_elevenlabs(engine: Engine) -> anyhow::Result<()> {
    let llm = MockLlm::start(vec![MockReply::text(ANSWER)]).await?;
    let Some((_srv, _ws, dg, el, mut host)) = stage(engine, &llm, true).await? else {
        return Ok(());
    };
    dg.set_interim_every(200);
    let connections = dg.connections();
    assert_eq!(connections.len(), 1, "connected at hello: {connections:?}");
    let c = &connections[0];
    assert_eq!(
        c.authorization.as_deref(),
        Some(format!("Token {DEEPGRAM_KEY}").as_str())
    );
    for (k, v) in [
        ("encoding", "linear16"),
        ("sample_rate", "16000"),
        ("channels", "1"),
        ("model", "nova-3"),
        ("language", "en-US"),
        ("interim_results", "true"),
    ] {
        assert_eq!(
            c.query.get(k).map(String::as_str),
            Some(v),
            "{k}: {:?}",
            c.query
        );
    }

    speak(
        &mut host,
        &utterance("Where is my order?", 24_000, 2700).await?,
        24_000,
    )
    .await?;
    let user = host
        .until(Duration::from_secs(20), |v| {
            v["type"] == "message.completed" && v["role"] == "user"
        })
        .await?;
    assert_eq!(user["content"], HEARD);
    assert_eq!(user["source"], "audio");
    assert!(
        dg.audio_bytes() > 16_000,
        "binary audio streamed: {}",
        dg.audio_bytes()
    );
    assert_eq!(dg.text_frames("Finalize").len(), 1);
    let interim = host.of_type("transcript.interim");
    assert!(
        !interim.is_empty() && interim.iter().all(|f| f["seq"].is_null()),
        "{interim:?}"
    );

    host.until(Duration::from_secs(20), |v| v["type"] == "turn.completed")
        .await?;
    let item = crate::voice::last_answer_item(&host);
    assert!(received_ms(&host, &item).abs_diff(tone_ms(ANSWER)) <= 2);
    let el_conn = el.connections();
    assert_eq!(el_conn.len(), 1, "{el_conn:?}");
    assert!(el_conn[0].header_key_ok);
    assert_eq!(
        el_conn[0].path,
        "/v1/text-to-speech/JBFqnCBsd6RMkjVDRZzb/stream-input"
    );
    let frames = el.frames_of(el_conn[0].index);
    assert_eq!(frames.first().map(|f| f["text"].clone()), Some(json!(" ")));
    assert_eq!(frames.last().map(|f| f["text"].clone()), Some(json!("")));
    Ok(())
}

/// Scenario 7: `KeepAlive` while the host is silent, the socket lives
/// past Deepgram's 10 s idle limit, and `CloseStream` when the host leaves.
async fn deepgram_idle(engine: Engine) -> anyhow::Result<()> {
    let llm = MockLlm::start(Vec::new()).await?;
    let Some((_srv, _ws, dg, _el, host)) = stage(engine, &llm, true).await? else {
        return Ok(());
    };
    tokio::time::sleep(Duration::from_secs(12)).await;
    let c = dg.connections();
    assert!(c[0].closed_by_mock.is_none(), "{c:?}");
    assert!(!dg.text_frames("KeepAlive").is_empty());
    drop(host);
    dg.wait_for(
        |_, frames| {
            frames.iter().any(|f| {
                matches!(&f.frame, rtc_testkit::DeepgramFrame::Text(v) if v["type"] == "CloseStream")
            })
        },
        Duration::from_secs(5),
    )
    .await?;
    Ok(())
}

/// A long answer: its audio plays for seconds.
pub(crate) const LONG: &str = "Your order left our warehouse this morning and travels by \
    courier today. It should reach you tomorrow before noon, and you will get \
    a text message with the tracking link as soon as the driver sets out.";

/// §4(d): with `bargeIn.enabled:false`, audio received while the
/// assistant speaks is dropped, and Deepgram gets silence of the same
/// byte length instead, so its timeline stays aligned.
async fn no_barge_in_sends_silence(engine: Engine) -> anyhow::Result<()> {
    let llm = MockLlm::start(vec![MockReply::text(LONG)]).await?;
    let Some((_srv, _ws, dg, _el, mut host)) = stage(engine, &llm, false).await? else {
        return Ok(());
    };
    dg.set_interim_every(100);
    host.send(json!({"type": "user.message", "text": "Any news on my parcel?"}))
        .await?;
    // The answer plays: the user speaks over it, all of it at once.
    host.until(Duration::from_secs(20), |v| v["type"] == "audio.delta")
        .await?;
    let before = dg.audio_bytes();
    let pcm = utterance("Where is my order?", 24_000, 2700).await?;
    speak(&mut host, &pcm, 24_000).await?;
    // The same byte length reaches Deepgram (24 kHz in, 16 kHz out).
    let expected = pcm.len() * 2 / 3;
    let audio = |frames: &[rtc_testkit::LoggedFrame]| -> usize {
        frames
            .iter()
            .map(|f| match f.frame {
                rtc_testkit::DeepgramFrame::Audio(n) => n,
                rtc_testkit::DeepgramFrame::Text(_) => 0,
            })
            .sum()
    };
    dg.wait_for(
        |_, frames| audio(frames) + 256 >= before + expected,
        Duration::from_secs(5),
    )
    .await?;
    let sent = dg.audio_bytes() - before;
    assert!(
        sent.abs_diff(expected) <= 256,
        "sent {sent} bytes for {expected}"
    );
    host.until(Duration::from_secs(20), |v| v["type"] == "turn.completed")
        .await?;
    host.drain(Duration::from_millis(1500)).await?;
    // Deepgram heard silence: no word of it came back.
    let heard: Vec<_> = dg
        .sent()
        .into_iter()
        .filter(|(_, v)| v.to_string().to_lowercase().contains("where"))
        .collect();
    assert!(heard.is_empty(), "{heard:?}");
    assert!(host.of_type("speech.started").is_empty());
    assert!(host.of_type("transcript.interim").is_empty());
    assert!(dg.text_frames("Finalize").is_empty());
    assert!(
        host.of_type("message.completed")
            .iter()
            .all(|m| m["role"] != "user" || m["source"] != "audio"),
        "no user message was heard"
    );
    assert_eq!(llm.requests().len(), 1);
    Ok(())
}

crate::harness::both!(deepgram_and_elevenlabs);
crate::harness::both!(no_barge_in_sends_silence);
crate::harness::both!(deepgram_idle);
