//! Stand-ins for workflow tests: a script for the mock model that serves
//! stage turns from a queue, answers the edge judge (`json_schema`) with
//! one truth for every edge and `llm` leaves (`json_object`) with one
//! value; and the order service the design's example workflow calls.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::{MockLlm, MockReply};

/// What the mock model answers (see the module doc).
pub struct StageScript {
    replies: Arc<Mutex<VecDeque<MockReply>>>,
    truth: Arc<AtomicBool>,
}

impl StageScript {
    /// A recording mock following a new script; leaves answer `leaf`,
    /// the judge `false` until [`Self::set_truth`], stage turns "ok" when
    /// nothing is queued.
    pub async fn start(leaf: &'static str) -> anyhow::Result<(MockLlm, Self)> {
        let replies: Arc<Mutex<VecDeque<MockReply>>> = Arc::default();
        let truth = Arc::new(AtomicBool::new(false));
        let (r, t) = (replies.clone(), truth.clone());
        let mock = MockLlm::with_recorded_responder(move |req| {
            match req.pointer("/response_format/type").and_then(Value::as_str) {
                Some("json_schema") => {
                    let keys = req
                        .pointer("/response_format/json_schema/schema/properties")
                        .and_then(Value::as_object);
                    let verdicts: Map<String, Value> = keys
                        .into_iter()
                        .flatten()
                        .map(|(k, _)| (k.clone(), json!(t.load(Ordering::SeqCst))))
                        .collect();
                    MockReply::Text(Value::Object(verdicts).to_string())
                }
                Some(_) => MockReply::Text(json!({ "value": leaf }).to_string()),
                None => r
                    .lock()
                    .ok()
                    .and_then(|mut q| q.pop_front())
                    .unwrap_or_else(|| MockReply::text("ok")),
            }
        })
        .await?;
        Ok((mock, Self { replies, truth }))
    }

    /// Queue the answer of a coming stage turn.
    pub fn then(&self, reply: MockReply) {
        if let Ok(mut q) = self.replies.lock() {
            q.push_back(reply);
        }
    }

    /// What the judge says of every edge from now on.
    pub fn set_truth(&self, holds: bool) {
        self.truth.store(holds, Ordering::SeqCst);
    }
}

/// The requests of stage turns (not the judge's or a leaf's).
pub fn stage_requests(mock: &MockLlm) -> Vec<Value> {
    mock.requests()
        .into_iter()
        .filter(|r| r.get("response_format").is_none())
        .collect()
}

/// The edge judge's requests.
pub fn judge_requests(mock: &MockLlm) -> Vec<Value> {
    mock.requests()
        .into_iter()
        .filter(|r| r.pointer("/response_format/type") == Some(&json!("json_schema")))
        .collect()
}

/// `GET /orders/{id}?…`: `{"status": …}` after a delay, or an error
/// status; records each request as `id?query`.
pub struct OrderService {
    pub base_url: String,
    seen: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for OrderService {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl OrderService {
    pub async fn start(answer: Result<&'static str, u16>, delay: Duration) -> anyhow::Result<Self> {
        let seen: Arc<Mutex<Vec<String>>> = Arc::default();
        let log = seen.clone();
        let app = axum::Router::new().route(
            "/orders/{id}",
            axum::routing::get(
                move |axum::extract::Path(id): axum::extract::Path<String>,
                      q: axum::extract::RawQuery| async move {
                    if let Ok(mut log) = log.lock() {
                        log.push(format!("{id}?{}", q.0.unwrap_or_default()));
                    }
                    tokio::time::sleep(delay).await;
                    match answer {
                        Ok(status) => (
                            axum::http::StatusCode::OK,
                            axum::Json(json!({"status": status})),
                        ),
                        Err(code) => (
                            axum::http::StatusCode::from_u16(code)
                                .unwrap_or(axum::http::StatusCode::INTERNAL_SERVER_ERROR),
                            axum::Json(json!({"error": "boom"})),
                        ),
                    }
                },
            ),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(Self {
            base_url: format!("http://{addr}"),
            seen,
            task,
        })
    }

    /// Every request so far, as `id?query`.
    pub fn requests(&self) -> Vec<String> {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }
}
