//! A voice host's speech-to-text connection that fails or drops (design
//! `voice-pipeline.md` §4(c) `speech_connect_failed`, §4(d)): the engine
//! keeps hearing with its VAD, and a streaming STT (the Deepgram mock) is
//! reconnected when the user next speaks, as the backoff of 2 s doubling
//! to 60 s allows; the reconnected stream hears the whole utterance, which
//! becomes the user message and is answered aloud.

use std::time::{Duration, Instant};

use rtc_testkit::{DeepgramMock, ElevenLabsMock, Engine, MockLlm, MockReply, pilot_map};
use serde_json::{Value, json};

use crate::conversation::server;
use crate::harness::{Api, Server, both};
use crate::realtime_support::Host;
use crate::voice::voice_host;
use crate::voice_audio::{speak, utterance};
use crate::voice_deepgram::{DEEPGRAM_KEY, ELEVENLABS_KEY, LONG, deepgram_assistant};

const HEARD: &str = "where is my order";
const ANSWER: &str = "It left our warehouse this morning.";
const LATER_ANSWER: &str = "It arrives tomorrow before noon.";
/// The wait after the first failed attempt (design: realtime's backoff).
const FIRST_WAIT: Duration = Duration::from_secs(2);

/// A server, the mocks and a Deepgram/ElevenLabs voice assistant's id.
async fn stage(
    engine: Engine,
    llm: &MockLlm,
) -> anyhow::Result<Option<(Server, Api, DeepgramMock, ElevenLabsMock, String)>> {
    let Some(srv) = server(engine, llm).await? else {
        return Ok(None);
    };
    let dg = DeepgramMock::start(DEEPGRAM_KEY, pilot_map([(2700, HEARD)])).await?;
    let el = ElevenLabsMock::start(ELEVENLABS_KEY).await?;
    let (_, ws) = srv.workspace("A").await?;
    let id = deepgram_assistant(&ws, &dg, &el, true).await?;
    Ok(Some((srv, ws, dg, el, id)))
}

/// The `error` events of `code` the host saw.
fn errors<'a>(host: &'a Host, code: &str) -> Vec<&'a Value> {
    host.of_type("error")
        .into_iter()
        .filter(|e| e["code"] == code)
        .collect()
}

/// The user messages heard from audio so far.
fn heard_messages(host: &Host) -> Vec<&Value> {
    host.of_type("message.completed")
        .into_iter()
        .filter(|m| m["role"] == "user" && m["source"] == "audio")
        .collect()
}

/// No frame refused the host's audio.
fn audio_was_taken(host: &Host) {
    let refused: Vec<&Value> = host
        .seen
        .iter()
        .filter(|v| {
            let text = v.to_string();
            text.contains("not_voice_host") || text.contains("voice_detached")
        })
        .collect();
    assert!(refused.is_empty(), "{refused:?}");
}

/// Speak the utterance mapped to `HEARD`; its user message and the
/// content of the answer spoken to it.
async fn spoken_turn(host: &mut Host) -> anyhow::Result<(Value, String)> {
    speak(
        host,
        &utterance("Where is my order?", 24_000, 2700).await?,
        24_000,
    )
    .await?;
    let user = host
        .until(Duration::from_secs(20), |v| {
            v["type"] == "message.completed" && v["role"] == "user"
        })
        .await?;
    host.until(Duration::from_secs(20), |v| v["type"] == "turn.completed")
        .await?;
    let answer = crate::voice::last_answer(host)["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    Ok((user, answer))
}

/// (a) Deepgram refuses the handshake at hello: one `speech_connect_failed`
/// without the key, and the host is still a voice host whose speech is
/// detected. An utterance inside the 2 s window makes no attempt and is
/// not transcribed; once the window passed, the next utterance reconnects,
/// is transcribed whole and answered.
async fn refused_at_hello_then_retried(engine: Engine) -> anyhow::Result<()> {
    let llm = MockLlm::start(vec![MockReply::text(ANSWER)]).await?;
    let Some((srv, ws, dg, _el, id)) = stage(engine, &llm).await? else {
        return Ok(());
    };
    dg.refuse_handshakes(Some((503, &format!("overloaded, key {DEEPGRAM_KEY}"))));
    let hello_sent = Instant::now();
    let (_, mut host) = voice_host(&srv, &ws, &id, json!({}), (24_000, 24_000)).await?;
    host.until_type("session.speech_ready").await?;
    let failed = host
        .until(Duration::from_secs(20), |v| {
            v["type"] == "error" && v["code"] == "speech_connect_failed"
        })
        .await?;
    let window_from = Instant::now();
    let message = failed["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("503") && message.contains("overloaded"),
        "{failed}"
    );
    assert!(!message.contains(DEEPGRAM_KEY), "the key leaked: {failed}");
    assert_eq!(dg.connections().len(), 1);

    // Inside the backoff window: heard by the VAD, no connect attempt.
    speak(
        &mut host,
        &utterance("Where is my order?", 24_000, 2700).await?,
        24_000,
    )
    .await?;
    host.until_type("speech.started").await?;
    host.until_type("speech.stopped").await?;
    let decided_within = hello_sent.elapsed();
    anyhow::ensure!(
        decided_within < FIRST_WAIT,
        "the utterance took {decided_within:?} to be heard: too slow to fall inside the window"
    );
    host.drain(Duration::from_millis(1_500)).await?;
    audio_was_taken(&host);
    assert_eq!(dg.connections().len(), 1, "no attempt inside the window");
    assert!(heard_messages(&host).is_empty(), "the utterance is dropped");
    assert!(llm.requests().is_empty());

    // After the window: the next utterance reconnects and is heard whole.
    dg.refuse_handshakes(None);
    let wait = (window_from + FIRST_WAIT + Duration::from_millis(200))
        .saturating_duration_since(Instant::now());
    tokio::time::sleep(wait).await;
    let (user, answer) = spoken_turn(&mut host).await?;
    assert_eq!(user["content"], HEARD, "{user}");
    assert_eq!(user["source"], "audio");
    assert_eq!(answer, ANSWER);
    let connections = dg.connections();
    assert_eq!(connections.len(), 2, "{connections:?}");
    assert!(connections[1].accepted);
    assert_eq!(errors(&host, "speech_connect_failed").len(), 1);
    assert!(errors(&host, "stt_failed").is_empty());
    audio_was_taken(&host);
    assert_eq!(llm.requests().len(), 1);
    Ok(())
}

/// (b) Deepgram closes the socket mid-session (after a first turn): the
/// listener is not stopped, nothing was pending so nothing failed, and the
/// next utterance reconnects, is transcribed and answered.
async fn dropped_stream_reconnects(engine: Engine) -> anyhow::Result<()> {
    let llm = MockLlm::start(vec![MockReply::text(ANSWER), MockReply::text(LATER_ANSWER)]).await?;
    let Some((srv, ws, dg, _el, id)) = stage(engine, &llm).await? else {
        return Ok(());
    };
    let (_, mut host) = voice_host(&srv, &ws, &id, json!({}), (24_000, 24_000)).await?;
    host.until_type("session.speech_ready").await?;
    let connected = Instant::now();
    let (user, answer) = spoken_turn(&mut host).await?;
    assert_eq!(
        (user["content"].as_str(), answer.as_str()),
        (Some(HEARD), ANSWER)
    );
    assert_eq!(dg.connections().len(), 1);

    // A stream that lived 5 s may reconnect at once (one dropped sooner
    // counts as a failed attempt: unit-tested in `stt_link`).
    tokio::time::sleep(Duration::from_millis(5_300).saturating_sub(connected.elapsed())).await;
    dg.close_all(1011, "NET-0000: the server crashed");
    dg.wait_for(
        |connections, _| connections[0].closed_by_mock.is_some(),
        Duration::from_secs(5),
    )
    .await?;
    host.drain(Duration::from_millis(500)).await?;
    assert!(
        errors(&host, "stt_failed").is_empty(),
        "nothing was pending"
    );

    let (user, answer) = spoken_turn(&mut host).await?;
    assert_eq!(user["content"], HEARD, "{user}");
    assert_eq!(answer, LATER_ANSWER);
    let connections = dg.connections();
    assert_eq!(connections.len(), 2, "{connections:?}");
    assert!(connections[1].accepted && connections[1].closed_by_mock.is_none());
    assert_eq!(heard_messages(&host).len(), 2);
    assert!(errors(&host, "speech_connect_failed").is_empty());
    audio_was_taken(&host);
    Ok(())
}

/// Deepgram refuses every handshake: the VAD alone still hears the user.
/// A barge-in over a typed turn's spoken answer cuts it, the speech that
/// made it is a new attempt once the 2 s window passed (a second
/// `speech_connect_failed`), and nothing heard becomes a message.
async fn barge_in_while_the_stt_is_down(engine: Engine) -> anyhow::Result<()> {
    let llm = MockLlm::start(vec![MockReply::text(LONG)]).await?;
    let Some((srv, ws, dg, _el, id)) = stage(engine, &llm).await? else {
        return Ok(());
    };
    dg.refuse_handshakes(Some((503, "overloaded")));
    let (_, mut host) = voice_host(&srv, &ws, &id, json!({}), (24_000, 24_000)).await?;
    host.until(Duration::from_secs(20), |v| {
        v["type"] == "error" && v["code"] == "speech_connect_failed"
    })
    .await?;
    let window_from = Instant::now();
    tokio::time::sleep(FIRST_WAIT + Duration::from_millis(200)).await;
    assert!(window_from.elapsed() > FIRST_WAIT);

    host.send(json!({"type": "user.message", "text": "Any news on my parcel?"}))
        .await?;
    host.until(Duration::from_secs(20), |v| v["type"] == "audio.delta")
        .await?;
    speak(
        &mut host,
        &utterance("Where is my order?", 24_000, 2700).await?,
        24_000,
    )
    .await?;
    host.until_type("speech.started").await?;
    let cut = host
        .until(Duration::from_secs(20), |v| {
            v["type"] == "turn.completed" && v["reason"] == "barge_in"
        })
        .await?;
    assert_eq!(cut["interrupted"], true, "{cut}");
    host.drain(Duration::from_millis(1_000)).await?;
    assert_eq!(host.of_type("speech.stopped").len(), 1);
    assert_eq!(errors(&host, "speech_connect_failed").len(), 2);
    assert_eq!(dg.connections().len(), 2, "one attempt for the barge-in");
    assert!(dg.connections().iter().all(|c| !c.accepted));
    assert!(heard_messages(&host).is_empty());
    assert_eq!(llm.requests().len(), 1, "the cut speech started no turn");
    audio_was_taken(&host);
    Ok(())
}

/// Turn detection `stt` with Deepgram down: nothing would endpoint the
/// utterance, so the server's silence detection ends it (not the 30 s
/// `maxUtteranceMs`).
async fn stt_endpointing_falls_back_to_silence(engine: Engine) -> anyhow::Result<()> {
    let llm = MockLlm::start(Vec::new()).await?;
    let Some((srv, ws, dg, _el, _)) = stage(engine, &llm).await? else {
        return Ok(());
    };
    let id = crate::voice::voice_assistant(
        &ws,
        json!({"name": "Endpointed", "speech": {"sttInterfaceId": "dg", "ttsInterfaceId": "el",
            "turnDetection": {"type": "stt", "silenceDurationMs": 500}}}),
    )
    .await?;
    dg.refuse_handshakes(Some((503, "overloaded")));
    let (_, mut host) = voice_host(&srv, &ws, &id, json!({}), (16_000, 16_000)).await?;
    host.until(Duration::from_secs(20), |v| {
        v["type"] == "error" && v["code"] == "speech_connect_failed"
    })
    .await?;
    speak(
        &mut host,
        &utterance("Where is my order?", 16_000, 2700).await?,
        16_000,
    )
    .await?;
    let started = host.until_type("speech.started").await?;
    let stopped = host
        .until(Duration::from_secs(10), |v| v["type"] == "speech.stopped")
        .await?;
    let said = stopped["audioEndMs"].as_u64().unwrap_or_default()
        - started["audioStartMs"].as_u64().unwrap_or_default();
    assert!(said < 3_000, "ended by silence: {started} {stopped}");
    assert!(heard_messages(&host).is_empty());
    Ok(())
}

both!(refused_at_hello_then_retried);
both!(stt_endpointing_falls_back_to_silence);
both!(dropped_stream_reconnects);
both!(barge_in_while_the_stt_is_down);
