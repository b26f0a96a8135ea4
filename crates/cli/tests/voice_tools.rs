//! Tools in a voice turn (design `voice-pipeline.md` §4(f), scenario 16):
//! the text a model writes before its call is spoken while the call runs;
//! a slow tool gets the configured filler once, which never enters the
//! model's context; the tool runs once and the answer is spoken.

use std::time::Duration;

use rtc_testkit::{Engine, MockLlm, MockReply, PilotMap, SpeechOpenAiMock, pilot_map};
use serde_json::json;

use crate::conversation::server;
use crate::realtime_support::{order_stub, order_tool, order_variables};
use crate::voice::{
    OPENAI_KEY, openai_interfaces, received_ms, tone_ms, voice_assistant, voice_host,
};
use crate::voice_audio::{speak, utterance};

const BEFORE: &str = "Let me check that.";
const FILLER: &str = "One moment, please.";
const AFTER: &str = "It has shipped.";
const STOP: &str = "stop please";

async fn tools_and_filler(engine: Engine) -> anyhow::Result<()> {
    let speech = json!({"sttInterfaceId": "oa-stt", "ttsInterfaceId": "oa-tts",
        "toolFiller": {"afterMs": 500, "text": FILLER}});
    let Some(ToolStage {
        llm,
        mut host,
        calls,
        _keep,
        ..
    }) = tool_stage(engine, BEFORE, Duration::from_millis(1_500), speech).await?
    else {
        return Ok(());
    };
    host.until(Duration::from_secs(20), |v| {
        v["type"] == "turn.completed" && v["latency"].is_object()
    })
    .await?;

    let position = |pred: &dyn Fn(&serde_json::Value) -> bool| host.seen.iter().position(pred);
    let before = host
        .of_type("message.completed")
        .into_iter()
        .find(|m| m["content"] == BEFORE)
        .and_then(|m| m["messageId"].as_str().map(str::to_owned))
        .unwrap_or_default();
    // The text before the call was spoken whole, before the tool's result.
    assert_eq!(received_ms(&host, &before), tone_ms(BEFORE));
    let first_audio = position(&|v| v["type"] == "audio.delta" && v["itemId"] == before.as_str());
    let tool_done = position(&|v| v["type"] == "tool.completed");
    assert!(
        first_audio.is_some() && first_audio < tool_done,
        "{first_audio:?} {tool_done:?}"
    );

    // The filler was said once, while the tool ran, outside the history.
    let fillers = host.of_type("speech.filler");
    assert_eq!(fillers.len(), 1, "{fillers:?}");
    assert_eq!(fillers[0]["text"], FILLER);
    let filler_item = fillers[0]["itemId"].as_str().unwrap_or_default().to_owned();
    assert_eq!(received_ms(&host, &filler_item), tone_ms(FILLER));
    let filler_at = position(&|v| v["type"] == "speech.filler");
    assert!(filler_at < tool_done, "the filler came while the tool ran");
    let requests = llm.requests();
    assert_eq!(requests.len(), 2);
    assert!(
        !requests[1].to_string().contains(FILLER),
        "the model never hears the filler"
    );

    // The tool ran once; the answer was spoken.
    assert_eq!(calls.lock().map(|c| c.len()).unwrap_or_default(), 1);
    let after = host
        .of_type("message.completed")
        .into_iter()
        .find(|m| m["content"] == AFTER)
        .and_then(|m| m["messageId"].as_str().map(str::to_owned))
        .unwrap_or_default();
    assert_eq!(received_ms(&host, &after), tone_ms(AFTER));
    Ok(())
}

/// A voice session whose model speaks `before` and calls `lookup_order`
/// (a tool taking `tool_time`), answers the tool's output with [`AFTER`]
/// and the spoken [`STOP`] with "Alright."; its assistant's `speech`
/// block is `speech_block` (`{}`: the default one); "Where is A1?" was typed.
struct ToolStage {
    llm: MockLlm,
    ws: crate::harness::Api,
    sid: String,
    host: crate::realtime_support::Host,
    calls: std::sync::Arc<std::sync::Mutex<Vec<serde_json::Value>>>,
    _keep: (crate::harness::Server, SpeechOpenAiMock),
}

async fn tool_stage(
    engine: Engine,
    before: &'static str,
    tool_time: Duration,
    speech_block: serde_json::Value,
) -> anyhow::Result<Option<ToolStage>> {
    let llm = MockLlm::with_recorded_responder(move |req| {
        let messages = req["messages"].as_array().cloned().unwrap_or_default();
        match messages.last() {
            Some(m) if m["role"] == "user" && m["content"] == STOP => MockReply::text("Alright."),
            Some(m) if m["role"] == "tool" => MockReply::text(AFTER),
            _ => MockReply::Spoken {
                text: before.to_owned(),
                calls: vec![("lookup_order".to_owned(), json!({"order_id": "A1"}))],
                pace: Duration::ZERO,
            },
        }
    })
    .await?;
    let Some(srv) = server(engine, &llm).await? else {
        return Ok(None);
    };
    let speech = SpeechOpenAiMock::start(Some(OPENAI_KEY), pilot_map([(2700, STOP)])).await?;
    let (stub, calls) = order_stub(tool_time).await?;
    let (_, ws) = srv.workspace("A").await?;
    openai_interfaces(&ws, &speech.base_url).await?;
    let binding = order_tool(&ws, &stub).await?;
    let mut assistant = json!({"toolBindings": [binding], "dynamicVariables": order_variables()});
    if speech_block.as_object().is_some_and(|o| !o.is_empty()) {
        assistant["speech"] = speech_block;
    }
    let id = voice_assistant(&ws, assistant).await?;
    let (sid, mut host) = voice_host(
        &srv,
        &ws,
        &id,
        json!({"dynamicVariables": {"tenant_id": "t1"}}),
        (16_000, 16_000),
    )
    .await?;
    host.until_type("session.speech_ready").await?;
    host.send(json!({"type": "user.message", "text": "Where is A1?"}))
        .await?;
    Ok(Some(ToolStage {
        llm,
        ws,
        sid,
        host,
        calls,
        _keep: (srv, speech),
    }))
}

/// Scenario 17: the user speaks while a slow tool runs; the tool runs
/// once, its output is stored, and the model's next request (answering
/// the user) carries it.
async fn barge_in_during_a_tool(engine: Engine) -> anyhow::Result<()> {
    let Some(ToolStage {
        llm,
        mut host,
        calls,
        _keep,
        ..
    }) = tool_stage(
        engine,
        "Let me check.",
        Duration::from_millis(1_500),
        json!({}),
    )
    .await?
    else {
        return Ok(());
    };
    host.until_type("tool.called").await?;
    tokio::time::sleep(Duration::from_millis(600)).await;
    speak(
        &mut host,
        &utterance("Stop please.", 16_000, 2700).await?,
        16_000,
    )
    .await?;
    host.until_type("speech.started").await?;
    host.until(Duration::from_secs(20), |v| {
        v["type"] == "message.completed" && v["content"] == "Alright."
    })
    .await?;
    host.until_type("turn.completed").await?;
    assert_eq!(
        calls.lock().map(|c| c.len()).unwrap_or_default(),
        1,
        "the tool ran once"
    );
    let done = host.of_type("tool.completed");
    assert_eq!(done.len(), 1, "{done:?}");
    assert!(done[0].to_string().contains("shipped"), "{}", done[0]);
    let last = llm
        .requests()
        .last()
        .cloned()
        .unwrap_or_default()
        .to_string();
    assert!(last.contains("shipped") && last.contains(STOP), "{last}");
    Ok(())
}

/// Scenario 18: a declared client tool goes to the voice host over the
/// same socket and its result leads to a spoken answer; an undeclared one
/// fails at once.
async fn client_tools(engine: Engine) -> anyhow::Result<()> {
    let llm = MockLlm::with_recorded_responder(|req| {
        let messages = req["messages"].as_array().cloned().unwrap_or_default();
        match messages.last() {
            Some(m) if m["role"] == "tool" && m["content"].to_string().contains("shown") => {
                MockReply::text("The photo is on screen.")
            }
            Some(m) if m["role"] == "tool" => MockReply::text("I cannot vibrate."),
            Some(m) if m["content"] == "vibrate" => MockReply::call("vibrate", json!({})),
            _ => MockReply::call("show_photo", json!({"visible": true})),
        }
    })
    .await?;
    let Some(srv) = server(engine, &llm).await? else {
        return Ok(());
    };
    let speech = SpeechOpenAiMock::start(Some(OPENAI_KEY), PilotMap::new()).await?;
    let (_, ws) = srv.workspace("A").await?;
    openai_interfaces(&ws, &speech.base_url).await?;
    for (id, function) in [("vibrate", "vibrate"), ("show_photo", "showPhoto")] {
        ws.create(
            "/v1/tools",
            json!({"id": id, "name": id, "type": "client",
            "parameters": {"type": "object", "properties": {"visible": {"type": "boolean"}}},
            "client": {"functionName": function, "waitForResponse": true, "timeoutMs": 5000}}),
        )
        .await?;
    }
    let id = voice_assistant(
        &ws,
        json!({"toolBindings": [{"toolId": "vibrate"},
        {"toolId": "show_photo", "argumentBindings": {"visible": {"source": "model"}}}]}),
    )
    .await?;
    let s = ws
        .create("/v1/sessions", json!({"assistantId": id}))
        .await?;
    let sid = s["id"].as_str().unwrap_or_default();
    let mut host = crate::realtime_support::Host::connect(
        &srv,
        sid,
        s["clientToken"].as_str().unwrap_or_default(),
    )
    .await?;
    host.send(json!({"type": "client.hello", "clientTools": ["showPhoto"],
        "audio": {"inputRate": 16000, "outputRate": 16000}}))
        .await?;
    host.until_type("session.speech_ready").await?;

    // Not declared by the host: an error output at once.
    host.send(json!({"type": "user.message", "text": "vibrate"}))
        .await?;
    let refused = host.until_type("tool.completed").await?;
    assert_eq!(refused["isError"], true, "{refused}");
    host.until(Duration::from_secs(20), |v| {
        v["type"] == "message.completed" && v["content"] == "I cannot vibrate."
    })
    .await?;
    host.until_type("turn.completed").await?;

    // Declared: the host runs it, and the answer is spoken.
    host.send(json!({"type": "user.message", "text": "show the photo"}))
        .await?;
    let call = host.until_type("client_tool.call").await?;
    assert_eq!(call["functionName"], "showPhoto");
    host.send(
        json!({"type": "client_tool.result", "callId": call["callId"], "result": {"shown": true}}),
    )
    .await?;
    let answer = host
        .until(Duration::from_secs(20), |v| {
            v["type"] == "message.completed" && v["content"] == "The photo is on screen."
        })
        .await?;
    let item = answer["messageId"].as_str().unwrap_or_default().to_owned();
    host.until_type("turn.completed").await?;
    assert_eq!(
        received_ms(&host, &item),
        tone_ms("The photo is on screen.")
    );
    Ok(())
}

const LONG: &str = "Let me look that up for you right now. Your order history has a few entries, so this can take a moment. I will read you the details once I have them.";

/// `message.truncated`: a step with a tool call is stored whole while its
/// text is still spoken; the user cuts in and the stored answer is cut to
/// what was heard (its call kept; the model's next request has no more),
/// then to what the host reports it played.
async fn barge_in_truncates_a_stored_answer(engine: Engine) -> anyhow::Result<()> {
    let Some(ToolStage {
        llm,
        ws,
        sid,
        mut host,
        calls,
        _keep,
        ..
    }) = tool_stage(engine, LONG, Duration::from_millis(300), json!({})).await?
    else {
        return Ok(());
    };
    let first = host.until_type("audio.delta").await?;
    let item = first["itemId"].as_str().unwrap_or_default().to_owned();
    // The answer with its call is stored before its audio has played
    // (perhaps before its first audio arrived).
    let stored =
        |v: &serde_json::Value| v["type"] == "message.completed" && v["messageId"] == item.as_str();
    if !host.seen.iter().any(stored) {
        host.until(Duration::from_secs(10), stored).await?;
    }
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    speak(
        &mut host,
        &utterance("Stop please.", 16_000, 2700).await?,
        16_000,
    )
    .await?;
    host.until_type("speech.started").await?;
    host.send(json!({"type": "playback.interrupted", "itemId": item, "playedMs": 1000}))
        .await?;
    // Cut to the server's estimate at once, then to what the host says.
    let estimate = host.until_type("message.truncated").await?;
    assert_eq!(estimate["messageId"], item.as_str(), "{estimate}");
    let truncated = host
        .until(Duration::from_secs(5), |v| {
            v["type"] == "message.truncated" && v["playedMs"] == 1000
        })
        .await?;
    assert_eq!(truncated["messageId"], item.as_str(), "{truncated}");
    assert_eq!(truncated["itemId"], item.as_str(), "{truncated}");
    assert_eq!(truncated["playedMs"], 1000, "{truncated}");
    let heard = truncated["content"].as_str().unwrap_or_default().to_owned();
    assert!(LONG.starts_with(&heard) && !heard.is_empty(), "{heard}");
    // 1000 ms of 20 ms characters, cut back to a word boundary.
    let ms = tone_ms(&heard);
    assert!((700..=1_000).contains(&ms), "{ms} ms: {heard}");
    host.until(Duration::from_secs(20), |v| {
        v["type"] == "message.completed" && v["content"] == "Alright."
    })
    .await?;
    host.until_type("turn.completed").await?;
    assert_eq!(calls.lock().map(|c| c.len()).unwrap_or_default(), 1);
    let history = ws.get(&format!("/v1/sessions/{sid}/messages")).await?;
    let stored = history.body["data"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|m| m["id"] == item.as_str())
        .cloned()
        .unwrap_or_default();
    assert_eq!(stored["content"], heard.as_str(), "{stored}");
    assert_eq!(stored["interrupted"], true, "{stored}");
    assert!(stored["toolCalls"].is_array(), "the call is kept: {stored}");
    let last = llm
        .requests()
        .last()
        .cloned()
        .unwrap_or_default()
        .to_string();
    assert!(last.contains(&heard), "{last}");
    assert!(!last.contains("read you the details"), "{last}");
    Ok(())
}

crate::harness::both!(tools_and_filler);
crate::harness::both!(client_tools);
crate::harness::both!(barge_in_during_a_tool);
crate::harness::both!(barge_in_truncates_a_stored_answer);
