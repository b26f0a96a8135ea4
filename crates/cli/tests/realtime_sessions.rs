//! Realtime sessions end to end (design `realtime.md` §5d scenarios 1–4):
//! the real binary bridged to the mock realtime provider, driven as a host
//! application drives it, over the session WebSocket and REST.

use std::time::Duration;

use rtc_testkit::{Engine, RealtimeFlavor};
use serde_json::{Value, json};

use crate::realtime_support::{order_stub, order_tool, order_variables, stage, utterance};

use crate::harness::both;

const SECOND: Duration = Duration::from_secs(20);

/// Scenario 1 and 2: one nested `session.update` with only model-sourced
/// parameters, the ready frame, then an audio turn with transcripts and
/// audio, resumable without the audio.
async fn configure_and_talk(engine: Engine) -> anyhow::Result<()> {
    let script = json!({"userTranscripts": ["where is my order"],
        "responses": [{"steps": [{"transcript": {"text": "Let me look."}}, {"audio": {"ms": 600}}, "done"]}]});
    let Some(st) = stage(engine, RealtimeFlavor::Qwen, script).await? else {
        return Ok(());
    };
    let (base, _) = order_stub(Duration::ZERO).await?;
    let binding = order_tool(&st.ws, &base).await?;
    let id = st
        .assistant(
            json!({"dynamicVariables": order_variables(), "toolBindings": [binding],
            "builtInTools": {"endConversation": {"messageType": "none"}}}),
        )
        .await?;
    let (sid, mut host) = st
        .open(&id, json!({"tenant_id": "acme"}), json!([]))
        .await?;
    let ready = host.until_type("session.realtime_ready").await?;
    assert_eq!(
        (ready["inputRate"].as_u64(), ready["outputRate"].as_u64()),
        (Some(16_000), Some(24_000))
    );
    assert_eq!(ready["dialect"], "qwen");

    let updates = st.mock.frames_of_type("session.update");
    assert_eq!(updates.len(), 1, "one session.update: {updates:#?}");
    let session = &updates[0]["session"];
    assert_eq!(session["input_audio_format"], "pcm");
    assert_eq!(session["modalities"], json!(["text", "audio"]));
    assert_eq!(session["voice"], "Cherry");
    let tools = session["tools"].as_array().unwrap();
    let names: Vec<&str> = tools
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["endConversation", "lookup_order"],
        "nested shape, no skipTurn"
    );
    let lookup = &tools[1]["function"];
    assert_eq!(
        lookup["parameters"]["properties"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["order_id"],
        "only the model-sourced argument: {lookup}"
    );
    assert!(st.mock.connections()[0].model.as_deref() == Some("test-model"));

    // 1 s of speech, then silence.
    host.speak(&utterance(1000)).await?;
    host.until_type("speech.started").await?;
    let user = host
        .until(SECOND, |v| {
            v["type"] == "message.completed" && v["role"] == "user"
        })
        .await?;
    assert_eq!(
        (user["content"].as_str(), user["source"].as_str()),
        (Some("where is my order"), Some("audio"))
    );
    let done = host.until_type("turn.completed").await?;
    assert_eq!(done["status"], "completed");
    assert_eq!(done["interrupted"], false);
    let said = host
        .of_type("message.completed")
        .into_iter()
        .find(|v| v["role"] == "assistant")
        .cloned()
        .expect("the assistant's transcript is a message");
    assert_eq!(said["content"], "Let me look.");
    assert_eq!(said["source"], "audio");
    let deltas: String = host
        .of_type("message.delta")
        .iter()
        .map(|v| {
            assert_eq!(
                (v["source"].as_str(), v["role"].as_str()),
                (Some("audio"), Some("assistant"))
            );
            v["delta"].as_str().unwrap_or_default().to_owned()
        })
        .collect();
    assert_eq!(deltas.trim(), "Let me look.");
    // Audio frames travel beside the stored events: the last ones may
    // reach the host just after `turn.completed`.
    host.drain(Duration::from_millis(300)).await?;
    let ms = host.audio_ms(None);
    assert!(
        (580..=620).contains(&ms),
        "600 ms of audio at the host's rate, got {ms}"
    );
    assert!(
        host.of_type("audio.delta")
            .iter()
            .all(|v| v.get("seq").is_none() && v["rate"] == 24_000)
    );
    // The silence after the speech may still be on its way.
    let deadline = std::time::Instant::now() + SECOND;
    while st.mock.audio_ms_received() < 1400 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        st.mock.audio_ms_received() >= 1400,
        "the speech reached the provider"
    );

    // Stored: the two transcripts; a new socket replays every event but audio.
    let messages = st.messages(&sid).await?;
    let texts: Vec<(&str, &str)> = messages
        .iter()
        .map(|m| (m["role"].as_str().unwrap(), m["content"].as_str().unwrap()))
        .collect();
    assert_eq!(
        texts,
        [("user", "where is my order"), ("assistant", "Let me look.")]
    );
    let mut again = host.reconnect().await?;
    again.send(json!({"type": "resume", "afterSeq": 0})).await?;
    again
        .until(SECOND, |v| v["type"] == "turn.completed")
        .await?;
    assert!(
        again.of_type("audio.delta").is_empty(),
        "audio is never replayed"
    );
    let stored: Vec<&str> = again
        .seen
        .iter()
        .filter_map(|v| v["type"].as_str())
        .collect();
    for kind in [
        "session.started",
        "session.realtime_ready",
        "speech.started",
        "message.delta",
        "turn.started",
    ] {
        assert!(stored.contains(&kind), "{kind} is stored: {stored:?}");
    }
    Ok(())
}
both!(configure_and_talk);

/// The function-call output and every `response.create` of the mock log,
/// in order, with the `response.done`s the host saw in between.
fn provider_calls(st: &crate::realtime_support::Stage) -> Vec<Value> {
    st.mock
        .log()
        .into_iter()
        .map(|f| f.frame)
        .filter(|f| f["type"] == "response.create" || f["item"]["type"] == "function_call_output")
        .collect()
}

/// Scenario 3: arguments in three deltas, the stub called once with the
/// bound variable, the result assigned, the output returned under the same
/// call id and exactly one `response.create` after `response.done`.
async fn http_tool_round_trip(engine: Engine) -> anyhow::Result<()> {
    let script = json!({"userTranscripts": ["where is A-1"], "responses": [
        {"steps": [{"tool_call": {"name": "lookup_order", "args": {"order_id": "A-1"}, "split": 3}}, "done"]},
        {"steps": [{"transcript": {"text": "It ships tomorrow."}}, {"audio": {"ms": 200}}, "done"]}]});
    let Some(st) = stage(engine, RealtimeFlavor::Qwen, script).await? else {
        return Ok(());
    };
    let (base, seen) = order_stub(Duration::ZERO).await?;
    let binding = order_tool(&st.ws, &base).await?;
    let id = st
        .assistant(json!({"dynamicVariables": order_variables(), "toolBindings": [binding]}))
        .await?;
    let (sid, mut host) = st
        .open(&id, json!({"tenant_id": "acme"}), json!([]))
        .await?;
    host.until_type("session.realtime_ready").await?;
    host.speak(&utterance(600)).await?;
    let called = host.until_type("tool.called").await?;
    assert_eq!(called["name"], "lookup_order");
    let call_id = called["callId"].as_str().unwrap().to_owned();
    let completed = host.until_type("tool.completed").await?;
    assert_eq!(
        (completed["callId"].as_str(), completed["isError"].as_bool()),
        (Some(call_id.as_str()), Some(false))
    );
    let state = host
        .seen
        .iter()
        .find(|v| v["type"] == "state.updated" && v["changes"].get("order_status").is_some())
        .expect("the result is assigned before the call completes");
    assert_eq!(state["variables"]["order_status"], "shipped");
    // The answer to the result: a second turn.
    host.until(SECOND, |v| {
        v["type"] == "message.completed" && v["content"] == "It ships tomorrow."
    })
    .await?;
    host.until_type("turn.completed").await?;
    assert_eq!(
        seen.lock().unwrap().clone(),
        vec![json!({"id": "A-1", "tenant": "acme"})],
        "called once, with the bound variable"
    );
    let calls = provider_calls(&st);
    assert_eq!(calls.len(), 2, "{calls:#?}");
    assert_eq!(calls[0]["item"]["call_id"], call_id.as_str());
    assert!(
        calls[0]["item"]["output"]
            .as_str()
            .unwrap()
            .contains("shipped")
    );
    assert_eq!(
        calls[1]["type"], "response.create",
        "one response.create, after the output"
    );
    assert!(
        host.of_type("error").is_empty(),
        "no provider error: {:?}",
        host.of_type("error")
    );
    let roles: Vec<String> = st
        .messages(&sid)
        .await?
        .iter()
        .map(|m| m["role"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(roles, ["user", "assistant", "tool", "assistant"]);
    Ok(())
}
both!(http_tool_round_trip);

/// Scenario 4: a declared client tool is forwarded and its result
/// returned; an undeclared one is answered at once with an error, and no
/// response is created for it.
async fn client_tools(engine: Engine) -> anyhow::Result<()> {
    let script = json!({"userTranscripts": ["vibrate", "show the photo"], "responses": [
        {"when": "vibrate", "steps": [{"tool_call": {"name": "vibrate", "args": {}}}, "done"]},
        {"when": "show the photo", "steps": [{"tool_call": {"name": "show_photo", "args": {"visible": true}}}, "done"]},
        {"steps": [{"transcript": {"text": "Done."}}, "done"]}]});
    let Some(st) = stage(engine, RealtimeFlavor::Qwen, script).await? else {
        return Ok(());
    };
    for (id, function) in [("vibrate", "vibrate"), ("show_photo", "showPhoto")] {
        st.ws
            .create(
                "/v1/tools",
                json!({"id": id, "name": id, "type": "client",
            "parameters": {"type": "object", "properties": {"visible": {"type": "boolean"}}},
            "client": {"functionName": function, "waitForResponse": true, "timeoutMs": 5000}}),
            )
            .await?;
    }
    let id = st
        .assistant(json!({"toolBindings": [
            {"toolId": "vibrate"}, {"toolId": "show_photo", "argumentBindings": {"visible": {"source": "model"}}}]}))
        .await?;
    let (_, mut host) = st.open(&id, json!({}), json!(["showPhoto"])).await?;
    host.until_type("session.realtime_ready").await?;

    // Not declared by the host: an error output at once, no response.
    host.speak(&utterance(400)).await?;
    let refused = host.until_type("tool.completed").await?;
    assert_eq!(refused["isError"], true);
    assert!(
        refused["result"]["error"]
            .as_str()
            .unwrap()
            .contains("no connected client supports `vibrate`")
    );
    host.until_type("turn.completed").await?;
    host.drain(Duration::from_millis(300)).await?;
    let calls = provider_calls(&st);
    assert_eq!(
        calls.len(),
        1,
        "the error output, and no response.create: {calls:#?}"
    );

    // Declared: the host runs it and its result goes back to the provider.
    host.speak(&utterance(400)).await?;
    let call = host.until_type("client_tool.call").await?;
    assert_eq!(call["functionName"], "showPhoto");
    assert_eq!(call["arguments"], json!({"visible": true}));
    host.send(
        json!({"type": "client_tool.result", "callId": call["callId"], "result": {"shown": true}}),
    )
    .await?;
    host.until(SECOND, |v| {
        v["type"] == "message.completed" && v["content"] == "Done."
    })
    .await?;
    let calls = provider_calls(&st);
    assert_eq!(calls.len(), 3, "{calls:#?}");
    assert_eq!(calls[1]["item"]["call_id"], call["callId"]);
    assert!(
        calls[1]["item"]["output"]
            .as_str()
            .unwrap()
            .contains("shown")
    );
    assert_eq!(calls[2]["type"], "response.create");
    Ok(())
}
both!(client_tools);

/// Typed messages reach a connected provider (and only then); a provider
/// refusing the key is a clear error that never shows a key.
async fn typed_messages_and_a_refused_key(engine: Engine) -> anyhow::Result<()> {
    let script = json!({"responses": [{"steps": [{"transcript": {"text": "Hello there."}}, {"audio": {"ms": 100}}, "done"]}]});
    let Some(st) = stage(engine, RealtimeFlavor::OpenaiGa, script).await? else {
        return Ok(());
    };
    let id = st.assistant(json!({})).await?;
    let s = st
        .ws
        .create("/v1/sessions", json!({"assistantId": id}))
        .await?;
    let sid = s["id"].as_str().unwrap();
    let send = format!("/v1/sessions/{sid}/messages");
    st.ws
        .post(&send, json!({"text": "hi"}))
        .await?
        .assert_error(409, "realtime_not_connected", None);
    let mut host =
        crate::realtime_support::Host::connect(&st.srv, sid, s["clientToken"].as_str().unwrap())
            .await?;
    host.until_type("session.realtime_ready").await?;
    st.ws
        .post(&send, json!({"text": "hi"}))
        .await?
        .assert_status(202);
    host.until(SECOND, |v| {
        v["type"] == "message.completed" && v["content"] == "Hello there."
    })
    .await?;
    let frames: Vec<Value> = st.mock.log().into_iter().map(|f| f.frame).collect();
    let typed = frames
        .iter()
        .position(|f| {
            f["type"] == "conversation.item.create" && f["item"]["content"][0]["text"] == "hi"
        })
        .expect("the text reached the provider");
    assert!(
        frames[typed..]
            .iter()
            .any(|f| f["type"] == "response.create")
    );
    let roles: Vec<String> = st
        .messages(sid)
        .await?
        .iter()
        .map(|m| m["role"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(roles, ["user", "assistant"]);

    // A key the provider refuses.
    st.ws
        .put(
            "/v1/secrets/secret__rt_key",
            json!({"value": "sk-wrong-key-0000000000"}),
        )
        .await?
        .assert_status(200);
    let (_, mut refused) = st.open(&id, json!({}), json!([])).await?;
    let error = refused.until_type("error").await?;
    assert_eq!(error["code"], "realtime_connect_failed", "{error}");
    assert!(
        error["message"].as_str().unwrap().contains("credentials"),
        "{error}"
    );
    let everything = format!("{:?}{:?}{}", host.seen, refused.seen, st.srv.process.log());
    for key in [crate::realtime_support::MOCK_KEY, "sk-wrong-key-0000000000"] {
        assert!(
            !everything.contains(key),
            "a key leaked into an event or the log"
        );
    }
    Ok(())
}
both!(typed_messages_and_a_refused_key);
