//! A voice session handed to a human (design `voice-pipeline.md` §4(f),
//! scenario 22): the handoff line is spoken; the user's speech becomes
//! user messages with no model request; each human agent message is
//! spoken; after release the model answers aloud again.

use std::time::Duration;

use rtc_testkit::{Engine, MockLlm, MockReply, SpeechOpenAiMock, pilot_map};
use serde_json::json;

use crate::conversation::server;
use crate::voice::{
    OPENAI_KEY, openai_interfaces, received_ms, tone_ms, voice_assistant, voice_host,
};
use crate::voice_audio::{speak, utterance};

const LINE: &str = "Connecting you to a person.";
const AGENT: &str = "Hi, this is Anna from support.";
const BACK: &str = "I'm back, how can I help?";
const HEARD: &str = "is anyone there";

async fn handoff_by_voice(engine: Engine) -> anyhow::Result<()> {
    let llm = MockLlm::start(vec![
        MockReply::call(
            "requestHumanHandoff",
            json!({"reason": "asked for a human"}),
        ),
        MockReply::text(BACK),
    ])
    .await?;
    let Some(srv) = server(engine, &llm).await? else {
        return Ok(());
    };
    let speech = SpeechOpenAiMock::start(Some(OPENAI_KEY), pilot_map([(2700, HEARD)])).await?;
    let (_, ws) = srv.workspace("A").await?;
    openai_interfaces(&ws, &speech.base_url).await?;
    let id = voice_assistant(
        &ws,
        json!({"builtInTools": {"requestHumanHandoff": {
        "description": "When the user asks for a human", "message": LINE}}}),
    )
    .await?;
    let (sid, mut host) = voice_host(&srv, &ws, &id, json!({}), (16_000, 16_000)).await?;
    host.until_type("session.speech_ready").await?;
    host.send(json!({"type": "user.message", "text": "A human, please."}))
        .await?;
    host.until_type("handoff.requested").await?;
    host.until_type("turn.completed").await?;
    let line = host
        .of_type("message.completed")
        .into_iter()
        .find(|m| m["content"] == LINE)
        .and_then(|m| m["messageId"].as_str().map(str::to_owned))
        .unwrap_or_default();
    assert_eq!(
        received_ms(&host, &line),
        tone_ms(LINE),
        "the handoff line is spoken"
    );

    // The user's speech is stored for the human; the model is not asked.
    speak(
        &mut host,
        &utterance("Is anyone there?", 16_000, 2700).await?,
        16_000,
    )
    .await?;
    let user = host
        .until(Duration::from_secs(20), |v| {
            v["type"] == "message.completed" && v["role"] == "user" && v["source"] == "audio"
        })
        .await?;
    assert_eq!(user["content"], HEARD);
    host.drain(Duration::from_millis(300)).await?;
    assert_eq!(
        llm.requests().len(),
        1,
        "no model request during the handoff"
    );

    // The human agent's message is spoken.
    ws.post(
        &format!("/v1/sessions/{sid}/handoff/messages"),
        json!({"text": AGENT}),
    )
    .await?;
    let agent = host
        .until(Duration::from_secs(20), |v| {
            v["type"] == "message.completed" && v["content"] == AGENT
        })
        .await?;
    let agent_item = agent["messageId"].as_str().unwrap_or_default().to_owned();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while received_ms(&host, &agent_item) < tone_ms(AGENT) && tokio::time::Instant::now() < deadline
    {
        host.drain(Duration::from_millis(100)).await?;
    }
    assert_eq!(received_ms(&host, &agent_item), tone_ms(AGENT));

    // Released: the model answers aloud again.
    ws.post(&format!("/v1/sessions/{sid}/handoff/release"), json!({}))
        .await?;
    host.until_type("handoff.released").await?;
    host.send(json!({"type": "user.message", "text": "Still there?"}))
        .await?;
    let back = host
        .until(Duration::from_secs(20), |v| {
            v["type"] == "message.completed" && v["content"] == BACK
        })
        .await?;
    host.until_type("turn.completed").await?;
    let item = back["messageId"].as_str().unwrap_or_default();
    assert_eq!(received_ms(&host, item), tone_ms(BACK));
    Ok(())
}

crate::harness::both!(handoff_by_voice);
