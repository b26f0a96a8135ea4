//! A scripted OpenAI-compatible chat-completions server for tests and
//! benchmarks: each request takes the next scripted reply (or asks a
//! responder), answers streaming or not as the request asks, and is
//! recorded for inspection. Besides well-behaved answers it misbehaves the
//! way real providers do (`misbehaving.rs`): streams cut mid-text and
//! mid-arguments, `length` and `content_filter` endings, refusals, tool
//! calls without ids, errors with every form of `Retry-After`.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};

pub use crate::misbehaving::Misbehaviour;

/// One scripted answer.
#[derive(Debug, Clone)]
pub enum MockReply {
    /// Plain assistant text.
    Text(String),
    /// Tool calls `(name, arguments)`; ids are `call_<n>`, unique in the process.
    ToolCalls(Vec<(String, Value)>),
    /// An HTTP error status with a message.
    Error(u16, String),
    /// Wait, then give the inner reply (for timeouts and interruptions).
    Delayed(Duration, Box<MockReply>),
    /// Misbehaviour of real providers (see [`Misbehaviour`]).
    Misbehave(Misbehaviour),
    /// Text streamed three words at a time, `pace` apart, then these
    /// tool calls in the same answer (none: `stop`): a model that speaks
    /// before it calls, or speaks slowly.
    Spoken {
        text: String,
        calls: Vec<(String, Value)>,
        pace: Duration,
    },
}

impl MockReply {
    pub fn text(t: &str) -> Self {
        Self::Text(t.to_owned())
    }

    pub fn call(name: &str, args: Value) -> Self {
        Self::ToolCalls(vec![(name.to_owned(), args)])
    }
}

type Responder = Arc<dyn Fn(&Value) -> MockReply + Send + Sync>;

#[derive(Default)]
struct Inner {
    script: VecDeque<MockReply>,
    requests: Vec<Value>,
    calls_made: u64,
}

#[derive(Clone)]
struct Shared {
    inner: Arc<Mutex<Inner>>,
    responder: Option<Responder>,
    record: bool,
    /// Answer with a whole JSON completion even to streaming requests.
    whole: Arc<std::sync::atomic::AtomicBool>,
    /// The model's context window in tokens as the mock counts them
    /// ([`request_tokens`]); 0: none.
    window: Arc<std::sync::atomic::AtomicU32>,
}

/// The running mock; stops when dropped.
pub struct MockLlm {
    /// Base URL to configure as the provider, e.g. `http://127.0.0.1:PORT/v1`.
    pub base_url: String,
    shared: Shared,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for MockLlm {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl MockLlm {
    /// A mock answering from a script, in order.
    pub async fn start(script: Vec<MockReply>) -> anyhow::Result<Self> {
        Self::spawn(Shared {
            inner: Arc::new(Mutex::new(Inner {
                script: script.into(),
                ..Inner::default()
            })),
            responder: None,
            record: true,
            whole: Arc::default(),
            window: Arc::default(),
        })
        .await
    }

    /// A mock computing each answer from the request (no recording, for load).
    pub async fn with_responder(
        f: impl Fn(&Value) -> MockReply + Send + Sync + 'static,
    ) -> anyhow::Result<Self> {
        Self::spawn(Shared {
            inner: Arc::default(),
            responder: Some(Arc::new(f)),
            record: false,
            whole: Arc::default(),
            window: Arc::default(),
        })
        .await
    }

    /// A mock computing each answer from the request, recording requests
    /// (for conversations whose order is not fixed, like sub-agents).
    pub async fn with_recorded_responder(
        f: impl Fn(&Value) -> MockReply + Send + Sync + 'static,
    ) -> anyhow::Result<Self> {
        Self::spawn(Shared {
            inner: Arc::default(),
            responder: Some(Arc::new(f)),
            record: true,
            whole: Arc::default(),
            window: Arc::default(),
        })
        .await
    }

    /// The app of [`MockLlm::with_responder`] (no recording), for a caller
    /// that serves it itself (over TLS and HTTP/2, say); its base URL is
    /// the server's with `/v1`.
    pub fn responder_app(f: impl Fn(&Value) -> MockReply + Send + Sync + 'static) -> Router {
        app(Shared {
            inner: Arc::default(),
            responder: Some(Arc::new(f)),
            record: false,
            whole: Arc::default(),
            window: Arc::default(),
        })
    }

    async fn spawn(shared: Shared) -> anyhow::Result<Self> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let app = app(shared.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(Self {
            base_url: format!("http://{addr}/v1"),
            shared,
            task,
        })
    }

    /// Answer streaming requests with whole (non-streamed) completions.
    pub fn set_whole_answers(&self, whole: bool) {
        self.shared
            .whole
            .store(whole, std::sync::atomic::Ordering::Relaxed);
    }

    /// Refuse requests longer than `tokens` (as the mock counts them,
    /// [`request_tokens`]) as OpenAI does: 400 `context_length_exceeded`.
    pub fn set_context_window(&self, tokens: u32) {
        self.shared
            .window
            .store(tokens, std::sync::atomic::Ordering::Relaxed);
    }

    /// Append replies to the script.
    pub fn push(&self, replies: impl IntoIterator<Item = MockReply>) {
        if let Ok(mut i) = self.shared.inner.lock() {
            i.script.extend(replies);
        }
    }

    /// The request bodies received so far.
    pub fn requests(&self) -> Vec<Value> {
        self.shared
            .inner
            .lock()
            .map(|i| i.requests.clone())
            .unwrap_or_default()
    }

    /// How many requests were answered.
    pub fn calls(&self) -> u64 {
        self.shared
            .inner
            .lock()
            .map(|i| i.calls_made)
            .unwrap_or_default()
    }
}

fn app(shared: Shared) -> Router {
    Router::new()
        .route("/v1/chat/completions", post(complete))
        .with_state(shared)
}

async fn complete(State(shared): State<Shared>, body: axum::Json<Value>) -> Response {
    let request = body.0;
    // Too long for the window: refused before any reply is taken.
    let window = shared.window.load(std::sync::atomic::Ordering::Relaxed);
    let used = if window > 0 {
        request_tokens(&request)
    } else {
        0
    };
    let reply = {
        let Ok(mut inner) = shared.inner.lock() else {
            return StatusCode::INTERNAL_SERVER_ERROR.into_response();
        };
        inner.calls_made += 1;
        let reply = match &shared.responder {
            _ if used > window => None,
            Some(f) => Some(f(&request)),
            None => inner.script.pop_front(),
        };
        if shared.record {
            inner.requests.push(request.clone());
        }
        reply
    };
    if used > window {
        let body = json!({"error": {"message": format!(
            "This model's maximum context length is {window} tokens. However, your messages resulted in {used} tokens. Please reduce the length of the messages."),
            "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}});
        return (StatusCode::BAD_REQUEST, axum::Json(body)).into_response();
    }
    // Refused as OpenAI would, whatever the script says (not checked by
    // a load mock, whose work would count against the server measured).
    if shared.record
        && let Some(refusal) = crate::misbehaving::openai_refusal(&request)
    {
        return refusal;
    }
    let Some(mut reply) = reply else {
        return (
            StatusCode::INTERNAL_SERVER_ERROR,
            axum::Json(json!({"error": {"message": "mock script exhausted"}})),
        )
            .into_response();
    };
    while let MockReply::Delayed(d, inner) = reply {
        tokio::time::sleep(d).await;
        reply = *inner;
    }
    let stream = request
        .get("stream")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    match reply {
        MockReply::Error(status, message) => {
            let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            (code, axum::Json(json!({"error": {"message": message}}))).into_response()
        }
        // A load mock reports a fixed usage: counting would weigh on the
        // server measured.
        MockReply::Text(text) if stream && !shared.record => sse(text_chunks(&text)),
        MockReply::ToolCalls(calls) if stream && !shared.record => sse(call_chunks(&calls)),
        MockReply::Text(text) if stream => {
            let usage = usage_of(&request, text.len());
            sse_with_usage(text_chunks(&text), &usage)
        }
        MockReply::ToolCalls(calls) if stream => {
            let usage = usage_of(&request, 20 * calls.len());
            sse_with_usage(call_chunks(&calls), &usage)
        }
        MockReply::Text(text) => axum::Json(completion(
            json!({"role": "assistant", "content": text}),
            "stop",
        ))
        .into_response(),
        MockReply::ToolCalls(calls) => {
            let msg =
                json!({"role": "assistant", "content": null, "tool_calls": tool_calls(&calls)});
            axum::Json(completion(msg, "tool_calls")).into_response()
        }
        MockReply::Misbehave(m) => m.respond(),
        MockReply::Spoken { text, calls, pace } => paced(&text, &calls, pace),
        MockReply::Delayed(..) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}

/// [`MockReply::Spoken`] as a paced event stream.
fn paced(text: &str, calls: &[(String, Value)], pace: Duration) -> Response {
    let mut chunks = text_chunks(text);
    if !calls.is_empty() {
        chunks.pop();
        chunks.extend(call_chunks(calls));
    }
    let mut lines: Vec<String> = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
    lines.push(format!(
        "data: {}\n\ndata: [DONE]\n\n",
        json!({"id": "mock", "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5}})
    ));
    let stream = futures::stream::unfold(
        (lines.into_iter(), true),
        move |(mut it, first)| async move {
            let line = it.next()?;
            if !first {
                tokio::time::sleep(pace).await;
            }
            Some((Ok::<_, std::convert::Infallible>(line), (it, false)))
        },
    );
    (
        [(header::CONTENT_TYPE, "text/event-stream")],
        Body::from_stream(stream),
    )
        .into_response()
}

/// A request's tokens as the mock counts them: a quarter of the bytes of
/// its messages' and functions' JSON plus the answer it asks room for (a
/// provider's own count, close to but not the same as the server's).
pub fn request_tokens(request: &Value) -> u32 {
    let bytes = request["messages"].to_string().len() + request["tools"].to_string().len();
    let asked = request
        .get("max_tokens")
        .or_else(|| request.get("max_completion_tokens"))
        .and_then(Value::as_u64)
        .unwrap_or(0);
    u32::try_from(bytes.div_ceil(4) as u64 + asked).unwrap_or(u32::MAX)
}

/// A call id unique in the process, as real providers give.
pub(crate) fn next_call_id() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    format!(
        "call_{}",
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    )
}

fn tool_calls(calls: &[(String, Value)]) -> Vec<Value> {
    calls
        .iter()
        .map(|(name, args)| json!({"id": next_call_id(), "type": "function", "function": {"name": name, "arguments": args.to_string()}}))
        .collect()
}

fn completion(message: Value, finish: &str) -> Value {
    json!({"id": "mock", "object": "chat.completion", "choices": [{"index": 0, "message": message, "finish_reason": finish}],
           "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
}

pub(crate) fn chunk(delta: Value, finish: Option<&str>) -> Value {
    json!({"id": "mock", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
}

pub(crate) fn text_chunks(text: &str) -> Vec<Value> {
    let mut out = vec![chunk(json!({"role": "assistant", "content": ""}), None)];
    let words: Vec<&str> = text.split_inclusive(' ').collect();
    for piece in words.chunks(3) {
        out.push(chunk(json!({"content": piece.concat()}), None));
    }
    out.push(chunk(json!({}), Some("stop")));
    out
}

fn call_chunks(calls: &[(String, Value)]) -> Vec<Value> {
    let mut out = Vec::new();
    for (i, (name, args)) in calls.iter().enumerate() {
        out.push(chunk(json!({"tool_calls": [{"index": i, "id": next_call_id(), "type": "function", "function": {"name": name, "arguments": ""}}]}), None));
        let text = args.to_string();
        let mid = text
            .char_indices()
            .nth(text.chars().count() / 2)
            .map_or(0, |(b, _)| b);
        for part in [&text[..mid], &text[mid..]] {
            out.push(chunk(
                json!({"tool_calls": [{"index": i, "function": {"arguments": part}}]}),
                None,
            ));
        }
    }
    out.push(chunk(json!({}), Some("tool_calls")));
    out
}

/// The usage a streamed answer reports: the request's tokens as the mock
/// counts them (half of them from the prompt cache, in whole blocks of
/// 128 as OpenAI reports), and a quarter token per byte of the answer.
fn usage_of(request: &Value, answer_bytes: usize) -> Value {
    let prompt = u64::from(request_tokens(request));
    let completion = (answer_bytes as u64).div_ceil(4).max(1);
    json!({"prompt_tokens": prompt, "completion_tokens": completion,
           "total_tokens": prompt + completion,
           "prompt_tokens_details": {"cached_tokens": prompt / 2 / 128 * 128}})
}

pub(crate) fn sse(chunks: Vec<Value>) -> Response {
    sse_with_usage(
        chunks,
        &json!({"prompt_tokens": 10, "completion_tokens": 5}),
    )
}

fn sse_with_usage(chunks: Vec<Value>, usage: &Value) -> Response {
    let mut body = String::new();
    for c in chunks {
        body.push_str("data: ");
        body.push_str(&c.to_string());
        body.push_str("\n\n");
    }
    body.push_str(&format!(
        "data: {}\n\ndata: [DONE]\n\n",
        json!({"id": "mock", "choices": [], "usage": usage})
    ));
    (
        [(header::CONTENT_TYPE, "text/event-stream")],
        Body::from(body),
    )
        .into_response()
}
