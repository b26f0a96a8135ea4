//! Realtime sessions end to end (design `realtime.md` §5d scenarios 5–8):
//! barge-in during audio and during a slow tool, the gate before any
//! connection, ending, handing off, and a provider that goes away.

use std::time::Duration;

use rtc_testkit::{Engine, RealtimeFlavor};
use serde_json::json;

use crate::harness::both;
use crate::realtime_support::{order_stub, order_tool, order_variables, stage, utterance};

const SECOND: Duration = Duration::from_secs(20);

/// Scenario 5 (GA): the user speaks over a long answer; the host reports
/// what it played, the item is truncated there, no more of its audio
/// arrives, and the stored message is marked interrupted. Under Qwen no
/// truncate is sent.
async fn barge_in_during_audio(engine: Engine) -> anyhow::Result<()> {
    for flavor in [RealtimeFlavor::OpenaiGa, RealtimeFlavor::Qwen] {
        let script = json!({"userTranscripts": ["tell me a story", "stop"], "responses": [
            {"steps": [{"transcript": {"text": "Once upon a time there was a long story."}}, {"audio": {"ms": 4000, "pace": 1.0}}, "done"]},
            {"steps": [{"transcript": {"text": "Stopped."}}, {"audio": {"ms": 100}}, "done"]}]});
        let Some(st) = stage(engine, flavor, script).await? else {
            return Ok(());
        };
        let id = st.assistant(json!({})).await?;
        let (sid, mut host) = st.open(&id, json!({}), json!([])).await?;
        host.until_type("session.realtime_ready").await?;
        host.speak(&utterance(500)).await?;
        let first = host.until_type("audio.delta").await?;
        let item = first["itemId"].as_str().unwrap().to_owned();
        // Let some of it play, then speak over it.
        host.drain(Duration::from_millis(800)).await?;
        host.speak(&utterance(400)).await?;
        host.until_type("speech.started").await?;
        host.send(json!({"type": "playback.interrupted", "itemId": item, "playedMs": 500}))
            .await?;
        let interrupted = host
            .until(SECOND, |v| {
                v["type"] == "turn.completed" && v["interrupted"] == true
            })
            .await?;
        assert_eq!(interrupted["status"], "cancelled");
        let before = host.audio_ms(Some(&item));
        host.until(SECOND, |v| {
            v["type"] == "message.completed" && v["content"] == "Stopped."
        })
        .await?;
        host.drain(Duration::from_millis(300)).await?;
        assert_eq!(
            host.audio_ms(Some(&item)),
            before,
            "no audio of the cancelled answer after it ended"
        );
        assert!(before < 4000, "the cancelled answer was cut: {before} ms");
        let truncates = st.mock.frames_of_type("conversation.item.truncate");
        if flavor == RealtimeFlavor::OpenaiGa {
            assert_eq!(truncates.len(), 1, "{truncates:#?}");
            assert_eq!(truncates[0]["item_id"], item.as_str());
            assert_eq!(truncates[0]["audio_end_ms"], 500);
        } else {
            assert!(truncates.is_empty(), "Qwen has no truncate: {truncates:#?}");
        }
        assert!(
            host.of_type("error").is_empty(),
            "no provider error: {:?}",
            host.of_type("error")
        );
        let messages = st.messages(&sid).await?;
        let story = messages
            .iter()
            .find(|m| {
                m["content"]
                    .as_str()
                    .is_some_and(|c| c.starts_with("Once upon"))
            })
            .expect("the interrupted answer is stored");
        assert_eq!(story["interrupted"], true, "{story}");
    }
    Ok(())
}
both!(barge_in_during_audio);

/// Scenario 6: the user speaks while a slow tool runs: it runs once, its
/// output is delivered, nothing deadlocks, the next turn is answered; two
/// parallel calls lead to one `response.create`.
async fn barge_in_during_a_slow_tool(engine: Engine) -> anyhow::Result<()> {
    let script = json!({"userTranscripts": ["where is A-1", "hello again", "both please"], "responses": [
        {"when": "where is A-1", "steps": [{"tool_call": {"name": "lookup_order", "args": {"order_id": "A-1"}}}, "done"]},
        {"when": "hello again", "steps": [{"transcript": {"text": "Hello!"}}, {"audio": {"ms": 100}}, "done"]},
        {"when": "both please", "steps": [
            {"tool_call": {"name": "lookup_order", "args": {"order_id": "B-2"}}},
            {"tool_call": {"name": "lookup_order", "args": {"order_id": "C-3"}}}, "done"]},
        {"steps": [{"transcript": {"text": "Both ship tomorrow."}}, "done"]}]});
    let Some(st) = stage(engine, RealtimeFlavor::OpenaiGa, script).await? else {
        return Ok(());
    };
    let (base, seen) = order_stub(Duration::from_secs(1)).await?;
    let binding = order_tool(&st.ws, &base).await?;
    let id = st
        .assistant(json!({"dynamicVariables": order_variables(), "toolBindings": [binding]}))
        .await?;
    let (_, mut host) = st
        .open(&id, json!({"tenant_id": "acme"}), json!([]))
        .await?;
    host.until_type("session.realtime_ready").await?;
    host.speak(&utterance(400)).await?;
    host.until_type("tool.called").await?;
    tokio::time::sleep(Duration::from_millis(200)).await;
    host.speak(&utterance(400)).await?;
    host.until(SECOND, |v| {
        v["type"] == "message.completed" && v["content"] == "Hello!"
    })
    .await?;
    host.until_type("tool.completed").await?;
    st.mock
        .wait_for(
            |log| {
                log.iter()
                    .any(|f| f.frame["item"]["type"] == "function_call_output")
            },
            SECOND,
        )
        .await?;
    assert_eq!(
        seen.lock().unwrap().len(),
        1,
        "the tool ran once, not cancelled"
    );

    // Two calls in one response: one response.create once both are in.
    host.speak(&utterance(400)).await?;
    host.until(SECOND, |v| {
        v["type"] == "message.completed" && v["content"] == "Both ship tomorrow."
    })
    .await?;
    let frames: Vec<_> = st.mock.log().into_iter().map(|f| f.frame).collect();
    let outputs = frames
        .iter()
        .filter(|f| f["item"]["type"] == "function_call_output")
        .count();
    let creates = frames
        .iter()
        .filter(|f| f["type"] == "response.create")
        .count();
    assert_eq!(
        (outputs, creates),
        (3, 1),
        "the barged call's output came without a response.create; the pair got one"
    );
    assert!(
        host.of_type("error").iter().all(|e| !e["message"]
            .as_str()
            .unwrap_or("")
            .contains("active_response")),
        "no conversation_already_has_active_response: {:?}",
        host.of_type("error")
    );
    Ok(())
}
both!(barge_in_during_a_slow_tool);

/// Scenario 7: what the interface does not declare fails at save or at
/// session start, and the provider is never connected.
async fn the_gate_opens_no_connection(engine: Engine) -> anyhow::Result<()> {
    let Some(st) = stage(engine, RealtimeFlavor::Stepfun, json!({})).await? else {
        return Ok(());
    };
    let (base, _) = order_stub(Duration::ZERO).await?;
    let binding = order_tool(&st.ws, &base).await?;
    let id = st
        .assistant(
            json!({"dynamicVariables": order_variables(), "toolBindings": [binding.clone()]}),
        )
        .await?;
    let mut none = crate::realtime::interface("rt", "stepfun", &st.mock.url());
    none["fieldSchema"]["features"]["realtimePromptTools"] =
        json!({"toolTypes": [], "builtInTools": []});
    st.ws
        .put("/v1/realtime-interfaces/rt", none)
        .await?
        .assert_status(200);
    st.ws
        .post("/v1/sessions", json!({"assistantId": id}))
        .await?
        .assert_error(422, "realtime_capability", Some("toolBindings[0]"));
    st.ws
        .post(
            "/v1/assistants",
            json!({"name": "again", "runMode": "realtime", "realtimeInterfaceId": "rt",
            "dynamicVariables": order_variables(), "toolBindings": [binding]}),
        )
        .await?
        .assert_error(422, "realtime_incompatible", Some("toolBindings[0]"));
    st.ws
        .post("/v1/assistants", json!({"name": "skip", "runMode": "realtime", "realtimeInterfaceId": "qwen-audio-realtime",
            "builtInTools": {"skipTurn": {}}}))
        .await?
        .assert_error(422, "realtime_incompatible", Some("builtInTools.skipTurn"));
    assert!(
        st.mock.connections().is_empty(),
        "no provider connection was opened"
    );
    Ok(())
}
both!(the_gate_opens_no_connection);

/// Scenario 8: endConversation says goodbye and ends the session; a
/// handoff stops the audio until it is released; a provider dropping the
/// socket mid-answer is an `error` and the session goes on.
async fn end_handoff_and_upstream_failure(engine: Engine) -> anyhow::Result<()> {
    let script = json!({"userTranscripts": ["I need a person", "hello", "again", "bye"], "responses": [
        {"when": "I need a person", "steps": [{"tool_call": {"name": "requestHumanHandoff", "args": {"reason": "asked"}}}, "done"]},
        {"when": "hello", "steps": [{"transcript": {"text": "Hi"}}, {"audio": {"ms": 100}}, "close"]},
        {"when": "again", "steps": [{"transcript": {"text": "Back again."}}, "done"]},
        {"when": "bye", "steps": [{"tool_call": {"name": "endConversation", "args": {"reason": "user said bye"}}}, "done"]},
        {"steps": [{"transcript": {"text": "Goodbye!"}}, {"audio": {"ms": 200}}, "done"]}]});
    let Some(st) = stage(engine, RealtimeFlavor::Qwen, script).await? else {
        return Ok(());
    };
    let id = st
        .assistant(json!({"builtInTools": {
            "endConversation": {"messageType": "generated", "captureReason": true},
            "requestHumanHandoff": {}}}))
        .await?;
    let (sid, mut host) = st.open(&id, json!({}), json!([])).await?;
    host.until_type("session.realtime_ready").await?;

    // Handoff: no audio reaches the provider until the release.
    host.speak(&utterance(400)).await?;
    host.until_type("handoff.requested").await?;
    host.until_type("tool.completed").await?;
    // The first utterance's trailing silence may still be on its way.
    host.drain(Duration::from_millis(300)).await?;
    let heard = st.mock.audio_ms_received();
    host.speak(&utterance(400)).await?;
    host.drain(Duration::from_millis(300)).await?;
    assert_eq!(
        st.mock.audio_ms_received(),
        heard,
        "a human has the conversation"
    );
    st.ws
        .post(&format!("/v1/sessions/{sid}/handoff/release"), json!({}))
        .await?
        .assert_status(204);
    host.until_type("handoff.released").await?;

    // The provider drops the socket mid-answer: an error, then a new connection.
    host.speak(&utterance(400)).await?;
    let error = host.until(SECOND, |v| v["type"] == "error").await?;
    assert_eq!(error["code"], "realtime_upstream_closed", "{error}");
    host.until(SECOND, |v| {
        v["type"] == "turn.completed" && v["interrupted"] == true
    })
    .await?;
    host.speak(&utterance(400)).await?;
    host.until(SECOND, |v| {
        v["type"] == "message.completed" && v["content"] == "Back again."
    })
    .await?;
    assert_eq!(
        st.mock.connections().len(),
        2,
        "connected again for the next input"
    );

    // The goodbye: the output, the generated goodbye, then the end.
    host.speak(&utterance(400)).await?;
    let called = host.until_type("tool.called").await?;
    assert_eq!(called["name"], "endConversation");
    host.until(SECOND, |v| {
        v["type"] == "message.completed" && v["content"] == "Goodbye!"
    })
    .await?;
    let ended = host.until_type("session.ended").await?;
    assert_eq!(
        (ended["reason"].as_str(), ended["endedBy"].as_str()),
        (Some("user said bye"), Some("model"))
    );
    let session = st.ws.get(&format!("/v1/sessions/{sid}")).await?;
    assert_eq!(session.assert_status(200)["status"], "ended");
    host.drain(Duration::from_millis(300)).await?;
    let heard = st.mock.audio_ms_received();
    host.speak(&utterance(200)).await?;
    host.drain(Duration::from_millis(300)).await?;
    assert_eq!(
        st.mock.audio_ms_received(),
        heard,
        "the provider socket is closed"
    );
    Ok(())
}
both!(end_handoff_and_upstream_failure);

/// An answer generated faster than it plays is stored before the user
/// speaks over it: the host's `playback.interrupted` still truncates it and
/// marks the stored message.
async fn an_answer_heard_in_part_is_marked_once_stored(engine: Engine) -> anyhow::Result<()> {
    let script = json!({"userTranscripts": ["news please", "enough"], "responses": [
        {"steps": [{"transcript": {"text": "Here is the long news."}}, {"audio": {"ms": 3000}}, "done"]},
        {"steps": [{"transcript": {"text": "Okay."}}, "done"]}]});
    let Some(st) = stage(engine, RealtimeFlavor::OpenaiGa, script).await? else {
        return Ok(());
    };
    let id = st.assistant(json!({})).await?;
    let (sid, mut host) = st.open(&id, json!({}), json!([])).await?;
    host.until_type("session.realtime_ready").await?;
    host.speak(&utterance(400)).await?;
    let done = host.until_type("turn.completed").await?;
    assert_eq!(
        (done["status"].as_str(), done["interrupted"].as_bool()),
        (Some("completed"), Some(false))
    );
    let item = host.of_type("audio.delta")[0]["itemId"]
        .as_str()
        .unwrap()
        .to_owned();
    let stored = st.messages(&sid).await?;
    assert_eq!(
        stored[1]["interrupted"],
        serde_json::Value::Null,
        "not yet: it is playing"
    );
    host.speak(&utterance(400)).await?;
    host.until_type("speech.started").await?;
    host.send(json!({"type": "playback.interrupted", "itemId": item, "playedMs": 700}))
        .await?;
    host.until(SECOND, |v| {
        v["type"] == "message.completed" && v["content"] == "Okay."
    })
    .await?;
    // The provider answers the second utterance whether or not the
    // truncate has reached it yet: wait for the truncate, not for order.
    st.mock
        .wait_for(
            |log| {
                log.iter()
                    .any(|f| f.frame["type"] == "conversation.item.truncate")
            },
            SECOND,
        )
        .await?;
    let truncates = st.mock.frames_of_type("conversation.item.truncate");
    assert_eq!(truncates.len(), 1);
    assert_eq!(truncates[0]["audio_end_ms"], 700);
    let deadline = tokio::time::Instant::now() + SECOND;
    let news = loop {
        let messages = st.messages(&sid).await?;
        let news = messages
            .into_iter()
            .find(|m| m["content"] == "Here is the long news.")
            .unwrap();
        if news["interrupted"] == true || tokio::time::Instant::now() > deadline {
            break news;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(news["interrupted"], true, "{news}");
    assert!(
        host.of_type("error").is_empty(),
        "{:?}",
        host.of_type("error")
    );
    Ok(())
}
both!(an_answer_heard_in_part_is_marked_once_stored);
