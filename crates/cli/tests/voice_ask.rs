//! askUser by voice (design `voice-pipeline.md` §4(f), scenario 19): the
//! questions are spoken one at a time with their option labels, and the
//! next transcripts answer them ("the second one" is option 2), with no
//! user turn for them.

use std::time::Duration;

use rtc_testkit::{Engine, MockLlm, MockReply, SpeechOpenAiMock, pilot_map};
use serde_json::json;

use crate::conversation::server;
use crate::voice::{
    OPENAI_KEY, openai_interfaces, received_ms, tone_ms, voice_assistant, voice_host,
};
use crate::voice_audio::{speak, utterance};

const FIRST: &str = "Which delivery do you want? Standard, Express.";
const SECOND: &str = "Which day suits you? Monday, Friday.";

async fn ask_by_voice(engine: Engine) -> anyhow::Result<()> {
    let question = |q: &str, a: &str, b: &str| {
        json!({"question": q, "header": "Pick", "options": [
            {"label": a, "description": "one"}, {"label": b, "description": "two"}]})
    };
    let llm = MockLlm::start(vec![
        MockReply::call(
            "askUser",
            json!({"questions": [
            question("Which delivery do you want?", "Standard", "Express"),
            question("Which day suits you?", "Monday", "Friday")]}),
        ),
        MockReply::text("Express on Friday it is."),
    ])
    .await?;
    let Some(srv) = server(engine, &llm).await? else {
        return Ok(());
    };
    let speech = SpeechOpenAiMock::start(
        Some(OPENAI_KEY),
        pilot_map([(2700, "the second one"), (3100, "friday please")]),
    )
    .await?;
    let (_, ws) = srv.workspace("A").await?;
    openai_interfaces(&ws, &speech.base_url).await?;
    let id = voice_assistant(&ws, json!({"features": {"askUser": true}})).await?;
    let (_, mut host) = voice_host(&srv, &ws, &id, json!({}), (16_000, 16_000)).await?;
    host.until_type("session.speech_ready").await?;
    host.send(json!({"type": "user.message", "text": "Change my delivery."}))
        .await?;
    let asked = host.until_type("ask_user.question").await?;
    assert_eq!(asked["spoken"], true, "{asked}");
    let item = asked["itemId"].as_str().unwrap_or_default().to_owned();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while received_ms(&host, &item) < tone_ms(FIRST) && tokio::time::Instant::now() < deadline {
        host.drain(Duration::from_millis(100)).await?;
    }
    assert_eq!(received_ms(&host, &item), tone_ms(FIRST));

    // "The second one" answers the first question; the second is asked.
    speak(
        &mut host,
        &utterance("The second one.", 16_000, 2700).await?,
        16_000,
    )
    .await?;
    speech
        .wait_for(
            |r| r.iter().any(|r| r.fields["input"] == "Monday, Friday."),
            Duration::from_secs(10),
        )
        .await?;
    host.drain(Duration::from_millis(1_000)).await?;
    speak(
        &mut host,
        &utterance("Friday, please.", 16_000, 3100).await?,
        16_000,
    )
    .await?;
    let answered = host.until_type("ask_user.answered").await?;
    assert_eq!(
        answered["answers"],
        json!(["Express", "Friday"]),
        "{answered}"
    );
    host.until(Duration::from_secs(20), |v| {
        v["type"] == "message.completed" && v["content"] == "Express on Friday it is."
    })
    .await?;
    // The TTS got each question with every label.
    let said: Vec<String> = speech
        .requests_to("/audio/speech")
        .iter()
        .map(|r| r.fields["input"].as_str().unwrap_or_default().to_owned())
        .collect();
    // (The chunker releases question and labels as two pieces, spoken
    // by two requests in flight at once.)
    for piece in FIRST
        .split_inclusive("? ")
        .chain(SECOND.split_inclusive("? "))
    {
        assert!(said.contains(&piece.trim().to_owned()), "{piece}: {said:?}");
    }
    // No user turn for the answers.
    assert!(
        !host
            .of_type("message.completed")
            .iter()
            .any(|m| m["role"] == "user" && m["source"] == "audio"),
        "the answers are no user messages"
    );
    assert_eq!(llm.requests().len(), 2);
    Ok(())
}

crate::harness::both!(ask_by_voice);
