//! How a voice session ends (design `voice-pipeline.md` §4(f)): the
//! custom goodbye is spoken verbatim with no model call, then
//! `session.ended` after its last audio (scenario 20); a goodbye that may
//! not be interrupted ignores the user's speech (scenario 21); a
//! `generated` goodbye is one more model step, with no tools, spoken
//! before `session.ended`.

use std::time::Duration;

use rtc_testkit::{Engine, MockLlm, MockReply, SpeechOpenAiMock, pilot_map};
use serde_json::json;

use crate::conversation::server;
use crate::voice::{
    OPENAI_KEY, openai_interfaces, received_ms, tone_ms, voice_assistant, voice_host,
};
use crate::voice_audio::{speak, utterance};

const GOODBYE: &str = "Thank you for calling the shop, goodbye!";
const BEFORE: &str = "Glad I could help.";

async fn custom_goodbye(engine: Engine, interrupt: bool) -> anyhow::Result<()> {
    let llm = MockLlm::start(vec![MockReply::Spoken {
        text: BEFORE.to_owned(),
        calls: vec![("endConversation".to_owned(), json!({"reason": "done"}))],
        pace: Duration::ZERO,
    }])
    .await?;
    let Some(srv) = server(engine, &llm).await? else {
        return Ok(());
    };
    let speech =
        SpeechOpenAiMock::start(Some(OPENAI_KEY), pilot_map([(2700, "wait one more thing")]))
            .await?;
    let (_, ws) = srv.workspace("A").await?;
    openai_interfaces(&ws, &speech.base_url).await?;
    let id = voice_assistant(
        &ws,
        json!({"builtInTools": {"endConversation": {
        "description": "When the user is done", "messageType": "custom",
        "customMessage": GOODBYE, "allowEndInterruption": false}}}),
    )
    .await?;
    let (sid, mut host) = voice_host(&srv, &ws, &id, json!({}), (16_000, 16_000)).await?;
    host.until_type("session.speech_ready").await?;
    host.send(json!({"type": "user.message", "text": "That's all, thanks."}))
        .await?;
    if interrupt {
        // Scenario 21: speech during the goodbye is not heard.
        let before = host
            .until(Duration::from_secs(20), |v| {
                v["type"] == "message.completed" && v["content"] == BEFORE
            })
            .await?;
        let before = before["messageId"].clone();
        // The goodbye's first audio: the user speaks over it.
        host.until(Duration::from_secs(20), |v| {
            v["type"] == "audio.delta" && v["itemId"] != before
        })
        .await?;
        speak(
            &mut host,
            &utterance("Wait, one more thing.", 16_000, 2700).await?,
            16_000,
        )
        .await?;
    }
    let ended = host.until_type("session.ended").await?;
    assert_eq!(ended["reason"], "done");
    let goodbye = host
        .of_type("message.completed")
        .into_iter()
        .find(|m| m["content"] == GOODBYE)
        .cloned()
        .unwrap_or_default();
    assert_eq!(goodbye["source"], "audio", "{goodbye}");
    let item = goodbye["messageId"].as_str().unwrap_or_default().to_owned();
    // Spoken verbatim, whole, before the end.
    assert_eq!(received_ms(&host, &item), tone_ms(GOODBYE));
    let said: Vec<String> = speech
        .requests_to("/audio/speech")
        .iter()
        .map(|r| r.fields["input"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert!(said.contains(&GOODBYE.to_owned()), "{said:?}");
    assert!(said.contains(&BEFORE.to_owned()), "{said:?}");
    let ended_at = host.seen.iter().position(|v| v["type"] == "session.ended");
    let last_audio = host.seen.iter().rposition(|v| v["type"] == "audio.delta");
    assert!(
        last_audio < ended_at,
        "session.ended follows the last audio"
    );
    // One model call: the goodbye is no model's.
    assert_eq!(llm.requests().len(), 1);
    if interrupt {
        host.drain(Duration::from_millis(500)).await?;
        assert!(host.of_type("speech.started").is_empty());
        assert!(speech.requests_to("/audio/transcriptions").is_empty());
        let messages = ws.get(&format!("/v1/sessions/{sid}/messages")).await?;
        assert!(
            !messages.text.contains("one more thing"),
            "{}",
            messages.text
        );
    }
    Ok(())
}

/// Scenario 20.
async fn custom_goodbye_is_spoken(engine: Engine) -> anyhow::Result<()> {
    custom_goodbye(engine, false).await
}

/// Scenario 21.
async fn goodbye_is_not_interrupted(engine: Engine) -> anyhow::Result<()> {
    custom_goodbye(engine, true).await
}

/// `messageType: "generated"`: one more model step, with no tools, is
/// spoken, then `session.ended` after its last audio.
async fn generated_goodbye_is_spoken(engine: Engine) -> anyhow::Result<()> {
    const FAREWELL: &str = "Have a lovely evening, goodbye!";
    let llm = MockLlm::start(vec![
        MockReply::Spoken {
            text: BEFORE.to_owned(),
            calls: vec![("endConversation".to_owned(), json!({"reason": "done"}))],
            pace: Duration::ZERO,
        },
        MockReply::text(FAREWELL),
    ])
    .await?;
    let Some(srv) = server(engine, &llm).await? else {
        return Ok(());
    };
    let speech = SpeechOpenAiMock::start(Some(OPENAI_KEY), pilot_map([(2700, "unused")])).await?;
    let (_, ws) = srv.workspace("A").await?;
    openai_interfaces(&ws, &speech.base_url).await?;
    let id = voice_assistant(
        &ws,
        json!({"builtInTools": {"endConversation": {
        "description": "When the user is done", "messageType": "generated"}}}),
    )
    .await?;
    let (_, mut host) = voice_host(&srv, &ws, &id, json!({}), (16_000, 16_000)).await?;
    host.until_type("session.speech_ready").await?;
    host.send(json!({"type": "user.message", "text": "That's all, thanks."}))
        .await?;
    let ended = host.until_type("session.ended").await?;
    assert_eq!(ended["reason"], "done");
    // Two model steps: the second is the goodbye, offered no tools.
    let requests = llm.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    let tools = &requests[1]["tools"];
    assert!(
        tools.is_null() || tools.as_array().is_some_and(Vec::is_empty),
        "the goodbye step has no tools: {tools}"
    );
    let completed = host.of_type("message.completed");
    let farewell = completed
        .iter()
        .find(|m| m["content"] == FAREWELL)
        .copied()
        .cloned()
        .unwrap_or_default();
    assert_eq!(farewell["source"], "audio", "{farewell}");
    assert_eq!(farewell["role"], "assistant", "{farewell}");
    let item = farewell["messageId"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    // Spoken whole, before the end.
    assert_eq!(received_ms(&host, &item), tone_ms(FAREWELL));
    let said: Vec<String> = speech
        .requests_to("/audio/speech")
        .iter()
        .map(|r| r.fields["input"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert!(said.contains(&BEFORE.to_owned()), "{said:?}");
    assert!(said.contains(&FAREWELL.to_owned()), "{said:?}");
    let ended_at = host.seen.iter().position(|v| v["type"] == "session.ended");
    let last_audio = host.seen.iter().rposition(|v| v["type"] == "audio.delta");
    let last_farewell_audio = host
        .seen
        .iter()
        .rposition(|v| v["type"] == "audio.delta" && v["itemId"] == item.as_str());
    assert!(last_farewell_audio.is_some());
    assert_eq!(
        last_audio, last_farewell_audio,
        "the goodbye is spoken last"
    );
    assert!(
        last_audio < ended_at,
        "session.ended follows the last audio"
    );
    Ok(())
}

crate::harness::both!(custom_goodbye_is_spoken);
crate::harness::both!(generated_goodbye_is_spoken);
crate::harness::both!(goodbye_is_not_interrupted);
