//! Real providers misbehave (R-RN-6): cut streams, `length` and
//! `content_filter` endings, refusals, missing and repeated tool-call ids.
//! The session stays usable, and no later request carries what a strict
//! provider refuses.

use rtc_testkit::{Misbehaviour as M, MockReply};
use serde_json::{Value, json};

use rtc_runtime::RuntimeError;

use crate::harness::{Harness, WS};

fn misbehave(m: M) -> MockReply {
    MockReply::Misbehave(m)
}

/// An assistant with an HTTP tool `lookup` on a closed port (the call
/// errors at once, which is all these tests need), its provider retrying
/// as in production (a cut before any output is sent again).
async fn harness(script: Vec<MockReply>) -> (Harness, String) {
    rtc_testkit::init_tls();
    let mock = rtc_testkit::MockLlm::start(script).await.unwrap();
    let mut provider = rtc_llm::ProviderConfig::new(&mock.base_url, None);
    provider.backoff = std::time::Duration::from_millis(5);
    let client = rtc_llm::OpenAiClient::new(provider, reqwest::Client::new());
    let h = Harness::on(mock, move |c| {
        c.kernel.default_provider.client = std::sync::Arc::new(client);
    })
    .await;
    let tool: rtc_protocol::Tool = serde_json::from_value(json!({"name": "lookup",
        "type": "http", "description": "Look something up.",
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
        "http": {"method": "GET", "url": "http://127.0.0.1:9/lookup"}}))
    .unwrap();
    h.store.insert(WS, Some("t1".into()), tool).await.unwrap();
    h.assistant(
        "a",
        json!({"name": "a", "systemPrompt": "Help.", "toolBindings": [{"toolId": "t1"}]}),
    )
    .await;
    let s = h.session("a").await;
    (h, s)
}

fn value(e: rtc_protocol::SessionEvent) -> Value {
    serde_json::to_value(e).unwrap()
}

/// Every request's tool-call arguments are JSON objects and its call ids
/// are unique.
fn assert_requests_are_clean(requests: &[Value]) {
    for r in requests {
        let mut ids = std::collections::HashSet::new();
        for m in r["messages"].as_array().unwrap() {
            assert_ne!(m["content"], "", "no empty content: {m}");
            for c in m["tool_calls"].as_array().into_iter().flatten() {
                let args = c["function"]["arguments"].as_str().unwrap();
                let parsed: Value = serde_json::from_str(args).unwrap_or(Value::Null);
                assert!(parsed.is_object(), "arguments sent as JSON: {args}");
                assert!(
                    ids.insert(c["id"].as_str().unwrap().to_owned()),
                    "unique ids: {r}"
                );
            }
        }
    }
}

#[tokio::test]
async fn a_cut_stream_keeps_what_was_shown_and_the_session_goes_on() {
    let (h, s) = harness(vec![
        misbehave(M::CutText("The answer is forty two and then".into())),
        MockReply::text("Sorry, again: 42."),
    ])
    .await;
    let mut events = h.events(&s).await;
    h.rt.send_user_message(WS, &s, "what is it?").await.unwrap();
    let cut = value(
        events
            .until("message.completed", |v| v["role"] == "assistant")
            .await,
    );
    assert_eq!(cut["interrupted"], true, "{cut}");
    assert!(
        cut["content"].as_str().unwrap().starts_with("The answer"),
        "{cut}"
    );
    let error = value(events.next_of("error").await);
    assert_eq!(error["code"], "stream_cut", "{error}");
    let done = value(events.next_of("turn.completed").await);
    assert_eq!(done["interrupted"], true, "{done}");
    assert_eq!(done["reason"], "stream_cut", "{done}");
    assert_eq!(h.mock.calls(), 1, "shown output is not asked for again");
    h.rt.send_user_message(WS, &s, "again?").await.unwrap();
    let done = value(events.next_of("turn.completed").await);
    assert_eq!(done["interrupted"], false, "{done}");
    assert_eq!(done["finishReason"], "stop", "{done}");
    let messages = h.rt.messages(WS, &s).await.unwrap();
    assert!(
        messages
            .iter()
            .any(|m| m.interrupted && m.content.starts_with("The answer"))
    );
    assert_requests_are_clean(&h.mock.requests());
}

#[tokio::test]
async fn cut_arguments_never_run_and_never_reach_a_request() {
    let (h, s) = harness(vec![
        // Cut before anything was shown: asked again, transparently.
        misbehave(M::CutCall {
            name: "lookup".into(),
            partial: r#"{"q": "abcdefghij"#.into(),
        }),
        // Cut by the token limit: the call does not run.
        misbehave(M::LengthCall {
            name: "lookup".into(),
            partial: r#"{"q": "abcdefghij"#.into(),
        }),
        MockReply::text("I could not finish that call."),
    ])
    .await;
    let mut events = h.events(&s).await;
    h.rt.send_user_message(WS, &s, "look it up").await.unwrap();
    let called = value(events.next_of("tool.called").await);
    assert_eq!(
        called["arguments"], r#"{"q": "abcdefghij"#,
        "the host sees what the model wrote"
    );
    let completed = value(events.next_of("tool.completed").await);
    assert_eq!(completed["isError"], true, "{completed}");
    assert!(
        completed["result"]["error"]
            .as_str()
            .unwrap()
            .contains("token limit"),
        "{completed}"
    );
    let done = value(events.next_of("turn.completed").await);
    assert_eq!(done["finishReason"], "stop", "{done}");
    assert_eq!(h.mock.calls(), 3);
    assert_requests_are_clean(&h.mock.requests());
    let stored = h.rt.messages(WS, &s).await.unwrap();
    let call = stored.iter().flat_map(|m| &m.tool_calls).next().unwrap();
    assert_eq!(call.arguments, "{}");
}

#[tokio::test]
async fn content_filters_and_refusals_reach_the_host_as_such() {
    let (h, s) = harness(vec![
        misbehave(M::Finish {
            text: "Here is how to".into(),
            reason: "content_filter".into(),
        }),
        misbehave(M::Refusal("I can't help with that.".into())),
        MockReply::text("ok"),
    ])
    .await;
    let mut events = h.events(&s).await;
    h.rt.send_user_message(WS, &s, "one").await.unwrap();
    let error = value(events.next_of("error").await);
    assert_eq!(error["code"], "content_filter", "{error}");
    let done = value(events.next_of("turn.completed").await);
    assert_eq!(done["finishReason"], "content_filter", "{done}");
    h.rt.send_user_message(WS, &s, "two").await.unwrap();
    let refusal = value(
        events
            .until("message.completed", |v| v["role"] == "assistant")
            .await,
    );
    assert_eq!(refusal["refusal"], true, "{refusal}");
    assert_eq!(refusal["content"], "I can't help with that.");
    events.next_of("turn.completed").await;
    h.rt.send_user_message(WS, &s, "three").await.unwrap();
    events.next_of("turn.completed").await;
    let last = h.mock.requests().pop().unwrap();
    let said: Vec<&Value> = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "assistant")
        .map(|m| &m["content"])
        .collect();
    assert!(
        said.contains(&&json!("I can't help with that.")),
        "{said:?}"
    );
    assert_requests_are_clean(&h.mock.requests());
}

#[tokio::test]
async fn call_ids_are_unique_whatever_the_provider_sends() {
    let (h, s) = harness(vec![
        misbehave(M::CallsWithoutIds(vec![
            ("lookup".into(), json!({"q": "a"})),
            ("lookup".into(), json!({"q": "b"})),
        ])),
        misbehave(M::SameId("lookup".into(), json!({"q": "c"}))),
        misbehave(M::SameId("lookup".into(), json!({"q": "d"}))),
        MockReply::text("done"),
    ])
    .await;
    let mut events = h.events(&s).await;
    h.rt.send_user_message(WS, &s, "look up four things")
        .await
        .unwrap();
    events.next_of("turn.completed").await;
    assert_eq!(h.mock.calls(), 4);
    assert_requests_are_clean(&h.mock.requests());
    let last = h.mock.requests().pop().unwrap();
    let results = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .count();
    assert_eq!(results, 4, "every call has its own result");
    assert!(
        !last.to_string().contains("Cancelled"),
        "no call that ran is told cancelled"
    );
}

/// An assistant that could offer more functions than its provider takes
/// is refused at save, naming the count; within the bound it is saved.
#[tokio::test]
async fn more_functions_than_the_provider_takes_are_refused_at_save() {
    let h = Harness::start(vec![]).await;
    let mut bindings = Vec::new();
    for i in 0..120 {
        let tool: rtc_protocol::Tool = serde_json::from_value(json!({"name": format!("tool_{i}"),
            "type": "client", "description": "A tool.", "client": {"functionName": format!("f{i}")}}))
        .unwrap();
        h.store
            .insert(WS, Some(format!("t{i}")), tool)
            .await
            .unwrap();
        bindings.push(json!({"toolId": format!("t{i}")}));
    }
    let assistant: rtc_protocol::Assistant =
        serde_json::from_value(json!({"name": "big", "toolBindings": bindings})).unwrap();
    let e =
        h.rt.validate_assistant(WS, &assistant, None)
            .await
            .unwrap_err();
    let text = e.to_string();
    assert!(text.contains("at most 128"), "{text}");
    let RuntimeError::Invalid(v) = e else {
        panic!("{text}")
    };
    assert_eq!(v.code, "too_many_functions");
    assert_eq!(v.field, "toolBindings");
    // Without the built-in families it fits.
    let lean: rtc_protocol::Assistant = serde_json::from_value(json!({"name": "lean",
        "toolBindings": bindings, "features": {"subAgents": false, "askUser": false, "todo": false,
        "webSearch": false, "webFetch": false, "goals": false, "loops": false, "memory": false}}))
    .unwrap();
    h.rt.validate_assistant(WS, &lean, None).await.unwrap();
}

/// A reasoning model gets `max_completion_tokens` and no `temperature`,
/// the small model included; a classic one keeps `max_tokens`.
#[tokio::test]
async fn parameters_follow_the_models_capabilities() {
    let h = Harness::start(vec![MockReply::text("one"), MockReply::text("two")]).await;
    h.assistant(
        "o",
        json!({"name": "o", "systemPrompt": "Help.",
            "llm": {"model": "o3-mini", "temperature": 0.2, "maxTokens": 300}}),
    )
    .await;
    h.assistant(
        "c",
        json!({"name": "c", "systemPrompt": "Help.",
            "llm": {"model": "gpt-4o-mini", "temperature": 0.2, "maxTokens": 300}}),
    )
    .await;
    for a in ["o", "c"] {
        let s = h.session(a).await;
        let mut events = h.events(&s).await;
        h.rt.send_user_message(WS, &s, "hi").await.unwrap();
        events.next_of("turn.completed").await;
    }
    let requests = h.mock.requests();
    assert_eq!(requests[0]["model"], "o3-mini");
    assert_eq!(requests[0]["max_completion_tokens"], 300);
    assert!(requests[0].get("temperature").is_none() && requests[0].get("max_tokens").is_none());
    assert_eq!(requests[1]["max_tokens"], 300);
    assert_eq!(requests[1]["temperature"], 0.2);
}

/// An MCP tool's image reaches a model that sees images as an image part
/// after the tool results; a model that does not reads its description
/// (the Python SDK's server, `picture`).
#[tokio::test]
async fn tool_images_reach_models_that_see_them() {
    let Some(mcp) = rtc_testkit::McpHttpServer::start_python().await.unwrap() else {
        eprintln!("RTC_TEST_PYTHON_MCP is not set (scripts/test sets it): skipped");
        return;
    };
    let h = Harness::start(vec![
        MockReply::call("picture", json!({})),
        MockReply::text("A red dot."),
        MockReply::call("picture", json!({})),
        MockReply::text("Something small."),
    ])
    .await;
    let server: rtc_protocol::McpServer = serde_json::from_value(json!({"name": "rich",
        "transport": {"type": "streamableHttp", "url": mcp.url}}))
    .unwrap();
    let server = h
        .store
        .insert(WS, Some("mcp_rich".into()), server)
        .await
        .unwrap();
    let server_id = server.id.clone().unwrap();
    let listed = h.rt.mcp_server_tools(WS, &server).await.unwrap();
    let picture = listed.iter().find(|t| t.name == "picture").unwrap();
    let tool: rtc_protocol::Tool = serde_json::from_value(json!({"name": "picture", "type": "mcp",
        "description": "A picture.", "parameters": picture.input_schema,
        "mcp": {"serverId": server_id, "remoteToolName": "picture"}}))
    .unwrap();
    h.store
        .insert(WS, Some("t_pic".into()), tool)
        .await
        .unwrap();
    for (id, model) in [("seeing", "gpt-4o-mini"), ("blind", "mock")] {
        h.assistant(
            id,
            json!({"name": id, "systemPrompt": "Look.", "llm": {"model": model},
                "toolBindings": [{"toolId": "t_pic"}]}),
        )
        .await;
        let s = h.session(id).await;
        let mut events = h.events(&s).await;
        h.rt.send_user_message(WS, &s, "show me").await.unwrap();
        events.next_of("turn.completed").await;
    }
    let requests = h.mock.requests();
    let parts = |r: &Value| -> Vec<Value> {
        r["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["content"].is_array())
            .flat_map(|m| m["content"].as_array().unwrap().clone())
            .collect()
    };
    let seeing = parts(&requests[1]);
    let url = seeing
        .iter()
        .find(|p| p["type"] == "image_url")
        .map(|p| p["image_url"]["url"].as_str().unwrap().to_owned())
        .expect("an image part");
    assert!(url.starts_with("data:image/png;base64,iVBOR"), "{url}");
    assert!(
        parts(&requests[3]).is_empty(),
        "no image for a model that does not see them"
    );
    let described = requests[3]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()["content"]
        .clone();
    assert_eq!(described, "[image: image/png, 70 bytes]");
    assert_requests_are_clean(&requests);
    mcp.stop().await;
}
