//! OpenTelemetry traces end to end: the real binary exports OTLP
//! (HTTP/protobuf) to a receiver built on the official OTLP protobuf
//! definitions (`opentelemetry-proto`), and a conversation with a tool
//! call shows as one trace: `invoke_agent` with its `chat` and
//! `execute_tool` children, GenAI attributes, the session and workspace,
//! a failed model call as an error; content only with
//! `RTC_OTEL_CAPTURE_CONTENT=1`, and a secret never.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use prost::Message;
use rtc_testkit::{Engine, MockLlm, MockReply};
use serde_json::json;

use crate::conversation::events_until;
use crate::harness::start;

const SECRET: &str = "otel-secret-value-42";

/// One received span: ids, name, attributes as text, status code.
#[derive(Debug, Clone)]
struct Got {
    trace: Vec<u8>,
    id: Vec<u8>,
    parent: Vec<u8>,
    name: String,
    attrs: BTreeMap<String, String>,
    /// The attributes exported as integers.
    ints: Vec<String>,
    status: i32,
}

/// An OTLP/HTTP trace receiver on a free port.
async fn receiver() -> anyhow::Result<(String, Arc<Mutex<Vec<Got>>>, Arc<Mutex<Vec<String>>>)> {
    let spans: Arc<Mutex<Vec<Got>>> = Arc::default();
    let services: Arc<Mutex<Vec<String>>> = Arc::default();
    let (s, v) = (spans.clone(), services.clone());
    let app = axum::Router::new().route(
        "/v1/traces",
        axum::routing::post(move |body: axum::body::Bytes| {
            let (s, v) = (s.clone(), v.clone());
            async move {
                let Ok(req) = ExportTraceServiceRequest::decode(body) else {
                    return (axum::http::StatusCode::BAD_REQUEST, Vec::new());
                };
                for rs in req.resource_spans {
                    for kv in rs.resource.iter().flat_map(|r| r.attributes.iter()) {
                        if kv.key == "service.name" {
                            v.lock()
                                .unwrap()
                                .push(text(kv.value.as_ref().and_then(|a| a.value.as_ref())));
                        }
                    }
                    for span in rs.scope_spans.into_iter().flat_map(|ss| ss.spans) {
                        let attrs = span
                            .attributes
                            .iter()
                            .map(|kv| {
                                (
                                    kv.key.clone(),
                                    text(kv.value.as_ref().and_then(|a| a.value.as_ref())),
                                )
                            })
                            .collect();
                        let ints = span
                            .attributes
                            .iter()
                            .filter(|kv| {
                                matches!(
                                    kv.value.as_ref().and_then(|a| a.value.as_ref()),
                                    Some(Any::IntValue(_))
                                )
                            })
                            .map(|kv| kv.key.clone())
                            .collect();
                        s.lock().unwrap().push(Got {
                            trace: span.trace_id,
                            id: span.span_id,
                            parent: span.parent_span_id,
                            name: span.name,
                            attrs,
                            ints,
                            status: span.status.map_or(0, |st| st.code),
                        });
                    }
                }
                (axum::http::StatusCode::OK, Vec::new())
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok((format!("http://{addr}"), spans, services))
}

fn text(v: Option<&Any>) -> String {
    match v {
        Some(Any::StringValue(s)) => s.clone(),
        Some(Any::IntValue(i)) => i.to_string(),
        Some(Any::BoolValue(b)) => b.to_string(),
        Some(Any::DoubleValue(d)) => d.to_string(),
        other => format!("{other:?}"),
    }
}

/// A tool endpoint that echoes the header carrying the secret.
async fn echo_tool() -> anyhow::Result<String> {
    let app = axum::Router::new().fallback(|headers: axum::http::HeaderMap| async move {
        let key = headers
            .get("x-key")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        axum::Json(json!({"status": "shipped", "echo": key}))
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(format!("http://{addr}"))
}

/// Run one conversation with a tool call (and a failing model call) on a
/// server exporting to a fresh receiver; the spans it received.
async fn conversation(capture: bool) -> anyhow::Result<(Vec<Got>, Vec<String>, String, String)> {
    let (endpoint, spans, services) = receiver().await?;
    let mock = MockLlm::start(vec![
        MockReply::call("lookup_order", json!({"order_id": "A1"})),
        MockReply::text("Order A1 has shipped."),
        MockReply::Error(400, "bad request from the mock".into()),
    ])
    .await?;
    let mut env = HashMap::from([
        ("RTC_LLM_BASE_URL".to_owned(), mock.base_url.clone()),
        ("RTC_LLM_MODEL".to_owned(), "mock-model".to_owned()),
        ("RTC_ALLOW_PRIVATE_NETWORK".to_owned(), "1".to_owned()),
        ("OTEL_EXPORTER_OTLP_ENDPOINT".to_owned(), endpoint),
        ("OTEL_BSP_SCHEDULE_DELAY".to_owned(), "100".to_owned()),
    ]);
    if capture {
        env.insert("RTC_OTEL_CAPTURE_CONTENT".to_owned(), "1".to_owned());
    }
    let srv = start(Engine::Sqlite, env).await?.unwrap();
    let (wid, ws) = srv.workspace("Traced").await?;
    ws.put("/v1/secrets/secret__otel", json!({"value": SECRET}))
        .await?
        .assert_status(201);
    let base = echo_tool().await?;
    let tool = ws
        .create("/v1/tools", json!({"name": "lookup_order", "type": "http",
            "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}},
            "http": {"method": "GET", "url": format!("{base}/orders/{{{{order_id}}}}"), "headers": {"X-Key": "{{secret__otel}}"}}}))
        .await?;
    let asst = ws
        .create("/v1/assistants", json!({"name": "Orders", "systemPrompt": "Help with orders.",
            "toolBindings": [{"toolId": tool["id"], "argumentBindings": {"order_id": {"source": "model"}}}]}))
        .await?;
    let s = ws
        .create("/v1/sessions", json!({"assistantId": asst["id"]}))
        .await?;
    let sid = s["id"].as_str().unwrap().to_owned();
    let token = s["clientToken"].as_str().unwrap().to_owned();
    for (n, text) in ["Where is A1?", "And now?"].into_iter().enumerate() {
        ws.post(
            &format!("/v1/sessions/{sid}/messages"),
            json!({"text": text}),
        )
        .await?
        .assert_status(202);
        let done = std::cell::Cell::new(0);
        events_until(&srv, &token, &sid, 0, |e| {
            if e["type"] == "turn.completed" {
                done.set(done.get() + 1);
            }
            done.get() > n
        })
        .await?;
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let got = spans.lock().unwrap().clone();
        let chats = got.iter().filter(|s| s.name.starts_with("chat ")).count();
        if chats >= 3
            && got
                .iter()
                .filter(|s| s.name.starts_with("invoke_agent"))
                .count()
                >= 2
        {
            let services = services.lock().unwrap().clone();
            return Ok((got, services, sid, wid));
        }
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "spans so far: {got:#?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_conversation_is_one_trace_per_turn_with_genai_spans() -> anyhow::Result<()> {
    let (spans, services, sid, wid) = conversation(false).await?;
    assert!(services.iter().all(|s| s == "rtc-agent"), "{services:?}");
    let turn = spans
        .iter()
        .find(|s| s.name == "invoke_agent Orders")
        .expect("a turn span");
    assert_eq!(turn.attrs["gen_ai.operation.name"], "invoke_agent");
    assert_eq!(turn.attrs["rtc.session.id"], sid);
    assert_eq!(turn.attrs["rtc.workspace.id"], wid);
    assert!(turn.parent.is_empty(), "the turn is the root of its trace");
    let children: Vec<&Got> = spans.iter().filter(|s| s.parent == turn.id).collect();
    let names: Vec<&str> = children.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names.iter().filter(|n| **n == "chat mock-model").count(),
        2,
        "two model calls in the first turn: {names:?}"
    );
    let tool = children
        .iter()
        .find(|s| s.name == "execute_tool lookup_order")
        .expect("the tool span");
    assert_eq!(tool.attrs["gen_ai.tool.name"], "lookup_order");
    assert!(
        tool.attrs["gen_ai.tool.call.id"].starts_with("call_"),
        "{tool:?}"
    );
    assert!(children.iter().all(|s| s.trace == turn.trace));
    let chat = children
        .iter()
        .find(|s| s.name == "chat mock-model")
        .unwrap();
    assert_eq!(chat.attrs["gen_ai.operation.name"], "chat");
    assert_eq!(chat.attrs["gen_ai.system"], "openai");
    assert_eq!(chat.attrs["gen_ai.request.model"], "mock-model");
    // Token counts are integers, as the GenAI conventions say.
    for key in ["gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"] {
        assert!(
            chat.ints.iter().any(|k| k == key),
            "{key} not an integer: {chat:?}"
        );
    }
    // What the provider reported (the mock counts the request's size).
    assert!(
        chat.attrs["gen_ai.usage.input_tokens"]
            .parse::<u64>()
            .is_ok_and(|n| n > 100),
        "{chat:?}"
    );
    assert!(
        chat.attrs["gen_ai.usage.output_tokens"]
            .parse::<u64>()
            .is_ok_and(|n| n > 0),
        "{chat:?}"
    );
    assert_eq!(chat.attrs["rtc.session.id"], sid);
    // The second turn's model call failed: an error span.
    let failed = spans
        .iter()
        .find(|s| {
            s.name == "chat mock-model"
                && s.attrs.get("error.type").is_some_and(|e| e == "llm_failed")
        })
        .expect("the failed model call");
    assert_eq!(failed.status, 2, "STATUS_CODE_ERROR");
    for s in &spans {
        assert!(
            !s.attrs.contains_key("gen_ai.input.messages"),
            "no content without capture: {s:?}"
        );
        assert!(!format!("{s:?}").contains(SECRET), "{s:?}");
    }
    Ok(())
}

#[tokio::test]
async fn content_is_recorded_only_when_asked_and_never_a_secret() -> anyhow::Result<()> {
    let (spans, _, _, _) = conversation(true).await?;
    let chat = spans.iter().find(|s| s.name == "chat mock-model").unwrap();
    assert!(
        chat.attrs["gen_ai.input.messages"].contains("Where is A1?"),
        "{chat:?}"
    );
    let tool = spans
        .iter()
        .find(|s| s.name == "execute_tool lookup_order")
        .unwrap();
    assert!(tool.attrs["gen_ai.tool.call.arguments"].contains("A1"));
    assert!(
        tool.attrs["gen_ai.tool.call.result"].contains("shipped"),
        "{tool:?}"
    );
    for s in &spans {
        assert!(
            !format!("{s:?}").contains(SECRET),
            "a secret in a span: {s:?}"
        );
    }
    Ok(())
}
