//! What a voice turn does besides speaking (design `voice-pipeline.md`
//! §4(d), §4(f), §4(i)): skipTurn's absolute silence (scenario 15),
//! barge-in storing what was heard (12) and cancelling the providers
//! (13), noise that interrupts nothing (14), and the STT and TTS failing
//! (24). Through the OpenAI speech mocks and the scripted model.

use std::time::Duration;

use rtc_testkit::{Engine, MockLlm, MockReply, SpeechOpenAiMock, pilot_map, silence, sine, to_pcm};
use serde_json::{Value, json};

use crate::conversation::server;
use crate::harness::{Api, Server};
use crate::realtime_support::Host;
use crate::voice::{
    OPENAI_KEY, openai_interfaces, received_ms, tone_ms, voice_assistant, voice_host,
};
use crate::voice_audio::{speak, utterance};

const STOP: &str = "stop please";
const FOUR: &str = "Your order A1 left our warehouse in Berlin this morning. It is travelling with our partner courier service today. The courier expects to reach your street by Friday afternoon. You will get a message with the exact time slot.";

struct Stage {
    srv: Server,
    ws: Api,
    llm: MockLlm,
    speech: SpeechOpenAiMock,
}

async fn stage(
    engine: Engine,
    replies: Vec<MockReply>,
    extra: Value,
) -> anyhow::Result<Option<(Stage, Host, String)>> {
    let llm = MockLlm::start(replies).await?;
    let Some(srv) = server(engine, &llm).await? else {
        return Ok(None);
    };
    let speech = SpeechOpenAiMock::start(Some(OPENAI_KEY), pilot_map([(2700, STOP)])).await?;
    let (_, ws) = srv.workspace("A").await?;
    openai_interfaces(&ws, &speech.base_url).await?;
    let id = voice_assistant(&ws, extra).await?;
    let (sid, mut host) = voice_host(&srv, &ws, &id, json!({}), (16_000, 16_000)).await?;
    host.until_type("session.speech_ready").await?;
    Ok(Some((
        Stage {
            srv,
            ws,
            llm,
            speech,
        },
        host,
        sid,
    )))
}

async fn messages(ws: &Api, sid: &str) -> anyhow::Result<Vec<Value>> {
    let r = ws.get(&format!("/v1/sessions/{sid}/messages")).await?;
    Ok(r.body["data"].as_array().cloned().unwrap_or_default())
}

/// Scenario 15: "Sure, I'll wait" with `skipTurn` in the same step is
/// never spoken nor stored; the next turn is answered aloud.
async fn skip_turn_is_silent(engine: Engine) -> anyhow::Result<()> {
    let held = "Sure, I'll wait for you.";
    let replies = vec![
        MockReply::Spoken {
            text: held.to_owned(),
            calls: vec![("skipTurn".to_owned(), json!({}))],
            pace: Duration::from_millis(20),
        },
        MockReply::text("Welcome back."),
    ];
    let extra =
        json!({"builtInTools": {"skipTurn": {"description": "When the user asks to wait"}}});
    let Some((st, mut host, sid)) = stage(engine, replies, extra).await? else {
        return Ok(());
    };
    host.send(json!({"type": "user.message", "text": "Hold on a second."}))
        .await?;
    host.until_type("turn.skipped").await?;
    host.until_type("turn.completed").await?;
    assert!(st.speech.requests_to("/audio/speech").is_empty());
    assert!(host.of_type("audio.delta").is_empty());
    assert!(host.of_type("message.delta").is_empty());
    let stored = messages(&st.ws, &sid).await?;
    assert!(
        !stored
            .iter()
            .any(|m| m["content"].as_str().is_some_and(|c| c.contains("wait"))),
        "{stored:?}"
    );
    // The tool call and its output are kept.
    assert!(stored.iter().any(|m| m["role"] == "tool"), "{stored:?}");

    host.send(json!({"type": "user.message", "text": "I'm back."}))
        .await?;
    host.until(Duration::from_secs(20), |v| {
        v["type"] == "turn.completed" && v["interrupted"] == false && v["latency"].is_object()
    })
    .await?;
    assert_eq!(st.speech.requests_to("/audio/speech").len(), 1);
    let spoken = crate::voice::last_answer(&host);
    assert_eq!(spoken["content"], "Welcome back.");
    assert_eq!(
        received_ms(&host, spoken["messageId"].as_str().unwrap_or_default()),
        tone_ms("Welcome back.")
    );
    Ok(())
}

/// The assistant's audio item of the answer being played.
async fn first_item(host: &mut Host) -> anyhow::Result<String> {
    let first = host.until_type("audio.delta").await?;
    Ok(first["itemId"].as_str().unwrap_or_default().to_owned())
}

/// Speak over the answer `played` after its first audio; returns the
/// stored cut message once the next turn ended.
async fn barge(
    st: &Stage,
    host: &mut Host,
    sid: &str,
    item: &str,
    played: Duration,
) -> anyhow::Result<Value> {
    tokio::time::sleep(played).await;
    speak(
        host,
        &utterance("Stop please.", 16_000, 2700).await?,
        16_000,
    )
    .await?;
    let started = host.until_type("speech.started").await?;
    let cut = host
        .until(Duration::from_secs(20), |v| {
            v["type"] == "turn.completed" && v["reason"] == "barge_in"
        })
        .await?;
    assert_eq!(cut["interrupted"], true);
    // No audio of the cut item after `speech.started`.
    let at = host.seen.iter().position(|v| *v == started).unwrap_or(0);
    assert!(
        !host.seen[at..]
            .iter()
            .any(|v| v["type"] == "audio.delta" && v["itemId"] == item),
        "audio after speech.started"
    );
    // The user's words start the next turn.
    let user = host
        .until(Duration::from_secs(20), |v| {
            v["type"] == "message.completed" && v["role"] == "user"
        })
        .await?;
    assert_eq!(user["content"], STOP);
    host.until(Duration::from_secs(20), |v| {
        v["type"] == "turn.completed" && v["reason"].is_null()
    })
    .await?;
    let stored = messages(&st.ws, sid).await?;
    Ok(stored
        .into_iter()
        .find(|m| m["id"] == item)
        .unwrap_or_default())
}

/// Scenario 12: the user speaks 1.2 s into a four-sentence answer; the
/// stored answer is what was played, marked interrupted, and the model's
/// next request carries that and not the rest.
async fn barge_in_stores_what_was_heard(engine: Engine) -> anyhow::Result<()> {
    let replies = vec![MockReply::text(FOUR), MockReply::text("Okay, stopping.")];
    let Some((st, mut host, sid)) = stage(engine, replies, json!({})).await? else {
        return Ok(());
    };
    host.send(json!({"type": "user.message", "text": "Where is my order?"}))
        .await?;
    let item = first_item(&mut host).await?;
    let stored = barge(&st, &mut host, &sid, &item, Duration::from_millis(1_200)).await?;
    let heard = stored["content"].as_str().unwrap_or_default().to_owned();
    assert_eq!(stored["interrupted"], true, "{stored}");
    assert!(!heard.is_empty() && heard.len() < FOUR.len() / 2, "{heard}");
    assert!(FOUR.starts_with(&heard), "{heard}");
    // About 1.2 s of 20 ms characters were heard (the lead and the VAD's
    // start in between).
    let ms = tone_ms(&heard);
    assert!((700..=2_200).contains(&ms), "{ms} ms: {heard}");
    let last = st
        .llm
        .requests()
        .last()
        .cloned()
        .unwrap_or_default()
        .to_string();
    assert!(last.contains(&heard), "{last}");
    assert!(!last.contains("exact time slot"), "{last}");
    Ok(())
}

/// Scenario 13: during a paced model stream and paced TTS, a barge-in
/// aborts the TTS request and cancels the model's stream: the turn ends
/// long before the stream would have, with the heard part stored.
async fn barge_in_cancels_providers(engine: Engine) -> anyhow::Result<()> {
    let replies = vec![
        MockReply::Spoken {
            text: FOUR.to_owned(),
            calls: Vec::new(),
            pace: Duration::from_millis(400),
        },
        MockReply::text("Okay."),
    ];
    let Some((st, mut host, sid)) = stage(engine, replies, json!({})).await? else {
        return Ok(());
    };
    st.speech.set_pacing(100, Duration::from_millis(100));
    let began = tokio::time::Instant::now();
    host.send(json!({"type": "user.message", "text": "Where is my order?"}))
        .await?;
    let item = first_item(&mut host).await?;
    let stored = barge(&st, &mut host, &sid, &item, Duration::from_millis(600)).await?;
    // The stream takes 40 words / 3 × 400 ms ≈ 5.6 s; the turn ended first.
    assert!(
        began.elapsed() < Duration::from_millis(5_000),
        "{:?}",
        began.elapsed()
    );
    assert_eq!(stored["interrupted"], true, "{stored}");
    // The mock notices the closed request at its next paced write.
    st.speech
        .wait_for(|r| r.iter().any(|r| r.aborted), Duration::from_secs(3))
        .await?;
    Ok(())
}

/// Scenario 14: an 80 ms blip during the answer interrupts nothing.
async fn noise_interrupts_nothing(engine: Engine) -> anyhow::Result<()> {
    let answer = "Your order A1 left our warehouse in Berlin this morning.";
    let Some((st, mut host, sid)) = stage(engine, vec![MockReply::text(answer)], json!({})).await?
    else {
        return Ok(());
    };
    host.send(json!({"type": "user.message", "text": "Where is my order?"}))
        .await?;
    let item = first_item(&mut host).await?;
    let mut blip = to_pcm(&sine(300.0, 80, 16_000, 8_000.0));
    blip.extend(to_pcm(&silence(600, 16_000)));
    speak(&mut host, &blip, 16_000).await?;
    host.until_type("turn.completed").await?;
    assert!(host.of_type("speech.started").is_empty());
    assert_eq!(received_ms(&host, &item), tone_ms(answer));
    let stored = messages(&st.ws, &sid).await?;
    let spoken = stored
        .iter()
        .find(|m| m["id"] == item.as_str())
        .cloned()
        .unwrap_or_default();
    assert_eq!(spoken["content"], answer);
    assert!(
        spoken["interrupted"].is_null() || spoken["interrupted"] == false,
        "{spoken}"
    );
    assert!(st.speech.requests_to("/audio/transcriptions").is_empty());
    drop(st.srv);
    Ok(())
}

/// Scenario 24: the STT failing is `stt_failed`; the TTS cut mid-item is
/// `tts_failed` with the stored text cut to what was sent; the next turn
/// works.
async fn failures_are_reported(engine: Engine) -> anyhow::Result<()> {
    let replies = vec![MockReply::text(FOUR), MockReply::text("All good now.")];
    let Some((st, mut host, sid)) = stage(engine, replies, json!({})).await? else {
        return Ok(());
    };
    st.speech.fail_transcriptions(1, 500, "the STT broke");
    speak(
        &mut host,
        &utterance("Stop please.", 16_000, 2700).await?,
        16_000,
    )
    .await?;
    let error = host.until_type("error").await?;
    assert_eq!(error["code"], "stt_failed", "{error}");
    assert!(
        st.llm.requests().is_empty(),
        "a lost utterance starts no turn"
    );

    // 1 s of 24 kHz audio, then the TTS connection breaks.
    st.speech.cut_speech_after(Some(48_000));
    host.send(json!({"type": "user.message", "text": "Where is my order?"}))
        .await?;
    let error = host
        .until(Duration::from_secs(20), |v| {
            v["type"] == "error" && v["code"] != "stt_failed"
        })
        .await?;
    assert_eq!(error["code"], "tts_failed", "{error}");
    host.until_type("turn.completed").await?;
    let completed = crate::voice::last_answer(&host);
    let kept = completed["content"].as_str().unwrap_or_default();
    assert!(
        !kept.is_empty() && kept.len() < FOUR.len() && FOUR.starts_with(kept),
        "{completed}"
    );
    let stored = messages(&st.ws, &sid).await?;
    assert!(stored.iter().any(|m| m["content"] == kept), "{stored:?}");

    st.speech.cut_speech_after(None);
    host.send(json!({"type": "user.message", "text": "Again?"}))
        .await?;
    host.until(Duration::from_secs(20), |v| {
        v["type"] == "message.completed" && v["content"] == "All good now."
    })
    .await?;
    Ok(())
}

crate::harness::both!(skip_turn_is_silent);
crate::harness::both!(barge_in_stores_what_was_heard);
crate::harness::both!(barge_in_cancels_providers);
crate::harness::both!(noise_interrupts_nothing);
crate::harness::both!(failures_are_reported);
