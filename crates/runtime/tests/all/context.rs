//! Context windows (R-RN-8): a long session in a small window keeps
//! working with its requests inside the window and its tool pairs whole;
//! a provider's `context_length_exceeded` compacts and retries; a message
//! too long for any request fails its turn and the next short one is
//! answered; a stored summary is used again after a restart.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rtc_core::model_caps::CapsOverride;
use rtc_llm::{OpenAiClient, ProviderConfig};
use rtc_protocol::CreateSessionParams;
use rtc_runtime::{Runtime, RuntimeConfig};
use rtc_testkit::{MockLlm, MockReply, request_tokens};
use serde_json::{Value, json};

use crate::harness::{Harness, WS, config};

/// What the summarizer is told (the start of its system message).
const SUMMARIZER: &str = "You summarize the older part of a conversation";

fn is_summary_request(req: &Value) -> bool {
    req["messages"][0]["content"]
        .as_str()
        .is_some_and(|s| s.starts_with(SUMMARIZER))
}

/// A model that looks things up when asked, answers in a few sentences,
/// and summarizes when the platform asks it to.
async fn chatty_model(summaries: Arc<AtomicU64>) -> MockLlm {
    MockLlm::with_recorded_responder(move |req| {
        if is_summary_request(req) {
            let n = summaries.fetch_add(1, Ordering::SeqCst) + 1;
            return MockReply::text(&format!(
                "Summary {n}: the user asks numbered questions; lookups returned reports."
            ));
        }
        let messages = req["messages"].as_array().unwrap();
        let last = messages.last().unwrap();
        if last["role"] == "user" && last["content"].as_str().unwrap().contains("look up") {
            return MockReply::call("lookup", json!({"q": "status"}));
        }
        MockReply::text(&"The answer, in a few plain sentences of text. ".repeat(6))
    })
    .await
    .unwrap()
}

/// An HTTP tool answering 2,000 bytes.
async fn lookup_tool(h: &Harness) {
    let app = axum::Router::new().route(
        "/lookup",
        axum::routing::post(|| async { axum::Json(json!({"report": "r".repeat(2_000)})) }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let tool: rtc_protocol::Tool = serde_json::from_value(json!({"name": "lookup",
        "type": "http", "description": "Look something up.",
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
        "http": {"method": "POST", "url": format!("http://{addr}/lookup")}}))
    .unwrap();
    h.store.insert(WS, Some("t1".into()), tool).await.unwrap();
}

/// Every call of a request is answered right after it, and every result
/// follows its call.
fn assert_pairs_whole(req: &Value) {
    let messages = req["messages"].as_array().unwrap();
    let mut open: Vec<String> = Vec::new();
    for m in messages {
        if m["role"] == "tool" {
            let id = m["tool_call_id"].as_str().unwrap().to_owned();
            assert!(open.contains(&id), "a result without its call: {req}");
            open.retain(|o| *o != id);
            continue;
        }
        assert!(open.is_empty(), "a call without its result: {req}");
        for c in m["tool_calls"].as_array().into_iter().flatten() {
            open.push(c["id"].as_str().unwrap().to_owned());
        }
    }
}

#[tokio::test]
async fn two_hundred_turns_in_a_small_window() {
    let summaries = Arc::new(AtomicU64::new(0));
    let mock = chatty_model(summaries.clone()).await;
    mock.set_context_window(8_192);
    let h = Harness::on(mock, |c| with_window_of(c, 8_192)).await;
    let rt = &h.rt;
    lookup_tool(&h).await;
    h.assistant(
        "a",
        json!({"name": "a", "systemPrompt": "Answer the user's numbered questions.",
               "toolBindings": [{"toolId": "t1"}]}),
    )
    .await;
    let params = CreateSessionParams {
        assistant_id: Some("a".into()),
        ..Default::default()
    };
    let s = rt.create_session(WS, params).await.unwrap().id;
    let mut events = h.events(&s).await;
    let filler = "with some words of context around it ".repeat(8);
    for i in 0..200 {
        let ask = if i % 4 == 0 {
            "look up the status"
        } else {
            "tell me"
        };
        let text = format!("Question {i}: {ask}, {filler}");
        rt.send_user_message(WS, &s, &text).await.unwrap();
        events.next_of("turn.completed").await;
    }
    let stored = rt_events(&h, &s).await;
    assert!(stored.iter().all(|e| e["type"] != "error"), "no errors");
    let requests = h.mock.requests();
    let turns: Vec<&Value> = requests.iter().filter(|r| !is_summary_request(r)).collect();
    let mut most = 0;
    let mut total = 0u64;
    for r in &turns {
        let used = request_tokens(r);
        total += u64::from(used);
        assert!(used <= 8_192, "a request passed the window: {used}");
        most = most.max(used);
        assert_pairs_whole(r);
    }
    let summarized = summaries.load(Ordering::SeqCst);
    // Compacted now and then, not on every request.
    assert!(
        (5..100).contains(&summarized),
        "compacted {summarized} times"
    );
    // The stored history is whole: every question is still there.
    let stored = rt.messages(WS, &s).await.unwrap();
    assert!(stored.iter().any(|m| m.content.starts_with("Question 0:")));
    assert!(
        stored
            .iter()
            .any(|m| m.content.starts_with("Question 199:"))
    );
    // The latest request carries the summary and the latest question.
    let last = turns.last().unwrap();
    let system = last["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("Summary "), "{system}");
    eprintln!(
        "200 turns, {} model requests, {summarized} summaries, largest request {most} tokens, mean {} (mock count)",
        turns.len(),
        total / turns.len() as u64
    );
}

#[tokio::test]
async fn a_refused_request_is_compacted_and_retried() {
    let summaries = Arc::new(AtomicU64::new(0));
    let mock = chatty_model(summaries.clone()).await;
    // The provider's window is smaller than the table says for `mock`
    // (room for the built-ins' functions, ~2,600 tokens, and a few turns).
    mock.set_context_window(4_500);
    let h = Harness::on(mock, |_| {}).await;
    h.assistant("a", json!({"name": "a", "systemPrompt": "Answer."}))
        .await;
    let s = h.session("a").await;
    let mut events = h.events(&s).await;
    let filler = "a longer message with words ".repeat(50);
    for i in 0..16 {
        h.rt.send_user_message(WS, &s, &format!("Message {i}: {filler}"))
            .await
            .unwrap();
        events.next_of("turn.completed").await;
    }
    let stored = rt_events(&h, &s).await;
    assert!(stored.iter().all(|e| e["type"] != "error"), "no errors");
    let requests = h.mock.requests();
    let refused = requests
        .iter()
        .filter(|r| request_tokens(r) > 4_500)
        .count();
    assert_eq!(refused, 1, "one refusal, then the learned window holds");
    // Every answered call is counted, the summaries' (small model) too.
    let usage = h.rt.session_usage(WS, &s).await.unwrap();
    assert_eq!(usage.calls, requests.len() as i64 - 1);
    let by_day = h.rt.usage(WS, None, None).await.unwrap();
    assert_eq!(by_day.total, usage);
    let compacted: Vec<Value> = rt_events(&h, &s)
        .await
        .into_iter()
        .filter(|e| e["type"] == "context.compacted")
        .collect();
    assert_eq!(compacted[0]["reason"], "context_length_exceeded");
    assert_eq!(compacted[0]["contextWindow"], 4_500);
    assert!(
        compacted[0]["tokensAfter"].as_u64() < compacted[0]["tokensBefore"].as_u64(),
        "{compacted:?}"
    );
    // Every message got its answer.
    let answers =
        h.rt.messages(WS, &s)
            .await
            .unwrap()
            .into_iter()
            .filter(|m| m.role == rtc_protocol::MessageRole::Assistant)
            .count();
    assert_eq!(answers, 16);
}

#[tokio::test]
async fn a_message_too_long_for_any_request_fails_its_turn_only() {
    let summaries = Arc::new(AtomicU64::new(0));
    let mock = chatty_model(summaries.clone()).await;
    // Room for the built-ins' functions and a short exchange.
    mock.set_context_window(4_000);
    let h = Harness::on(mock, |_| {}).await;
    h.assistant("a", json!({"name": "a", "systemPrompt": "Answer."}))
        .await;
    let s = h.session("a").await;
    let mut events = h.events(&s).await;
    h.rt.send_user_message(WS, &s, &"far too long ".repeat(1_000))
        .await
        .unwrap();
    let error = events.next_of("error").await;
    let error = serde_json::to_value(error).unwrap();
    assert_eq!(error["code"], "context_length_exceeded", "{error}");
    events.next_of("turn.completed").await;
    h.rt.send_user_message(WS, &s, "hi").await.unwrap();
    let answer = events
        .until("message.completed", |v| v["role"] == "assistant")
        .await;
    let answer = serde_json::to_value(answer).unwrap();
    assert!(
        answer["content"]
            .as_str()
            .unwrap()
            .starts_with("The answer")
    );
    assert_eq!(summaries.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_stored_summary_is_used_again_after_a_restart() {
    let summaries = Arc::new(AtomicU64::new(0));
    let mock = chatty_model(summaries.clone()).await;
    let h = Harness::on(mock, |c| with_window_of(c, 8_000)).await;
    h.assistant("a", json!({"name": "a", "systemPrompt": "Answer."}))
        .await;
    let s = h.session("a").await;
    let mut events = h.events(&s).await;
    let filler = "words of a message ".repeat(40);
    while summaries.load(Ordering::SeqCst) == 0 {
        h.rt.send_user_message(WS, &s, &format!("Go on: {filler}"))
            .await
            .unwrap();
        events.next_of("turn.completed").await;
    }
    h.rt.shutdown(Duration::from_secs(5)).await;
    // A new runtime on the same store: the summary is read, not written again.
    let mut cfg = config(&h.mock);
    with_window_of(&mut cfg, 8_000);
    let rt = Runtime::new(h.store.clone(), cfg);
    rt.recover().await.unwrap();
    let before = h.mock.requests().len();
    let mut events = crate::harness::Events::of(&rt, &s).await;
    events.collect_for(Duration::from_millis(200)).await;
    rt.send_user_message(WS, &s, "and now?").await.unwrap();
    events
        .until("turn.completed", |v| v["interrupted"] == false)
        .await;
    assert_eq!(summaries.load(Ordering::SeqCst), 1, "not summarized again");
    let after = &h.mock.requests()[before..];
    assert_eq!(after.len(), 1);
    let system = after[0]["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("Summary 1:"), "{system}");
}

/// `c`'s default provider with a `window`-token context window.
fn with_window_of(c: &mut RuntimeConfig, window: u32) {
    let url = c
        .kernel
        .default_provider
        .client
        .endpoint()
        .unwrap()
        .base_url;
    let mut cfg = ProviderConfig::new(&url, None);
    cfg.max_retries = 0;
    cfg.caps = CapsOverride {
        context_window: Some(window),
        ..CapsOverride::default()
    };
    c.kernel.default_provider.client = Arc::new(OpenAiClient::new(cfg, reqwest::Client::new()));
}

/// The session's stored events as JSON.
async fn rt_events(h: &Harness, s: &str) -> Vec<Value> {
    let mut events = h.events(s).await;
    events
        .collect_for(Duration::from_millis(200))
        .await
        .into_iter()
        .map(|e| serde_json::to_value(e).unwrap())
        .collect()
}

#[tokio::test]
async fn open_todos_stay_in_a_compacted_request() {
    let summaries = Arc::new(AtomicU64::new(0));
    let counter = summaries.clone();
    let mock = MockLlm::with_recorded_responder(move |req| {
        if is_summary_request(req) {
            counter.fetch_add(1, Ordering::SeqCst);
            return MockReply::text("Summary: planning a trip.");
        }
        let last = req["messages"].as_array().unwrap().last().unwrap().clone();
        if last["role"] == "user" && last["content"].as_str().unwrap().starts_with("plan") {
            return MockReply::call(
                "todoWrite",
                json!({"todos": [{"content": "Book the Lisbon hotel", "status": "in_progress"},
                                 {"content": "Compare three flights", "status": "completed"}]}),
            );
        }
        MockReply::text("Noted.")
    })
    .await
    .unwrap();
    let h = Harness::on(mock, |c| with_window_of(c, 8_000)).await;
    h.assistant("a", json!({"name": "a", "systemPrompt": "Plan trips."}))
        .await;
    let s = h.session("a").await;
    let mut events = h.events(&s).await;
    h.rt.send_user_message(WS, &s, "plan my trip")
        .await
        .unwrap();
    events.next_of("turn.completed").await;
    let filler = "details of the trip ".repeat(60);
    while summaries.load(Ordering::SeqCst) == 0 {
        h.rt.send_user_message(WS, &s, &format!("More: {filler}"))
            .await
            .unwrap();
        events.next_of("turn.completed").await;
    }
    let last = h.mock.requests().last().unwrap().clone();
    let system = last["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains("Summary: planning a trip.")
            && system.contains("- [in progress] Book the Lisbon hotel"),
        "{system}"
    );
}
