//! A voice session on two instances (design `voice-pipeline.md` §4(b),
//! R-ST-2): its turns run where its voice host's socket is, so a message
//! posted on the other instance is answered aloud by the instance holding
//! the socket; once the host has left, the other instance answers it as
//! text.

use std::collections::HashMap;
use std::time::Duration;

use rtc_testkit::{MockLlm, MockReply, PilotMap, SpeechOpenAiMock};
use serde_json::json;

use crate::instances::{Pair, two_instances};
use crate::voice::{
    OPENAI_KEY, openai_interfaces, received_ms, tone_ms, voice_assistant, voice_host,
};

const SPOKEN: &str = "It is spoken on the first instance.";
const TYPED: &str = "Now nobody listens.";

#[tokio::test]
async fn a_message_posted_elsewhere_is_spoken_where_the_host_is() -> anyhow::Result<()> {
    let llm = MockLlm::start(vec![MockReply::text(SPOKEN), MockReply::text(TYPED)]).await?;
    let env = HashMap::from([
        ("RTC_LLM_BASE_URL".to_owned(), llm.base_url.clone()),
        ("RTC_LLM_MODEL".to_owned(), "mock-model".to_owned()),
        ("RTC_ALLOW_PRIVATE_NETWORK".to_owned(), "1".to_owned()),
    ]);
    let Some(Pair {
        a,
        b: _b,
        ws_a,
        ws_b,
    }) = two_instances(
        env,
        &[("RTC_INSTANCE_ID", "inst_a")],
        &[("RTC_INSTANCE_ID", "inst_b")],
    )
    .await?
    else {
        return Ok(());
    };
    let speech = SpeechOpenAiMock::start(Some(OPENAI_KEY), PilotMap::new()).await?;
    openai_interfaces(&ws_a, &speech.base_url).await?;
    let id = voice_assistant(&ws_a, json!({})).await?;
    let (sid, mut host) =
        voice_host(&a, &ws_a, &id, json!({"testMode": true}), (16_000, 16_000)).await?;
    host.until_type("session.speech_ready").await?;

    // Posted on B: A runs the turn and its host hears the answer.
    let posted = ws_b
        .post(
            &format!("/v1/sessions/{sid}/messages"),
            json!({"text": "Where is my order?"}),
        )
        .await?;
    assert!(posted.status.is_success(), "{}", posted.body);
    let done = host
        .until(Duration::from_secs(20), |v| {
            v["type"] == "message.completed" && v["content"] == SPOKEN
        })
        .await?;
    assert_eq!(done["source"], "audio", "{done}");
    let item = done["messageId"].as_str().unwrap_or_default().to_owned();
    let completed = host.until_type("turn.completed").await?;
    assert!(completed["latency"].is_object(), "{completed}");
    assert_eq!(received_ms(&host, &item), tone_ms(SPOKEN));

    // The host leaves: B answers the next message itself, as text.
    drop(host);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let posted = ws_b
        .post(
            &format!("/v1/sessions/{sid}/messages"),
            json!({"text": "Still there?"}),
        )
        .await?;
    assert!(posted.status.is_success(), "{}", posted.body);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let history = ws_b.get(&format!("/v1/sessions/{sid}/messages")).await?;
        let answer = history.body["data"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|m| m["content"] == TYPED)
            .cloned();
        if let Some(answer) = answer {
            assert!(answer["source"].is_null(), "answered as text: {answer}");
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{}", history.body);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}
