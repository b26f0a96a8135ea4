//! The chat's side of the public API: open a session, send messages and
//! askUser answers, end the session, find the assistant's client tools,
//! and follow the session's events over SSE (reconnecting after the last
//! event seen when the stream drops).

use std::time::Duration;

use anyhow::{Context, bail};
use futures::StreamExt;
use rtc_protocol::{AnswerValue, EventBody, SessionEvent};
use serde_json::{Value, json};
use tokio::sync::mpsc;

/// What the event follower hands the conversation.
pub enum Feed {
    Event(Box<SessionEvent>),
    /// The stream dropped; the follower reconnects by itself.
    Lost(String),
    /// The stream cannot be read at all (a refused key, a deleted session).
    Fatal(String),
}

/// What the server did with askUser answers.
pub enum Answered {
    Accepted,
    /// An answer does not fit its question (422): ask again.
    Invalid(String),
    /// No such question waits any more (409: answered elsewhere, stale,
    /// or the session ended), or another refusal.
    Refused(String),
}

/// A workspace-key client of one server.
#[derive(Clone)]
pub struct Api {
    http: reqwest::Client,
    base: String,
    key: String,
}

/// The message of an API error body, or `fallback`.
fn message(body: &Value, fallback: &str) -> String {
    body["error"]["message"]
        .as_str()
        .unwrap_or(fallback)
        .to_owned()
}

impl Api {
    pub fn new(url: &str, key: &str) -> Self {
        Self {
            http: crate::http::api_client(),
            base: url.trim_end_matches('/').to_owned(),
            key: key.to_owned(),
        }
    }

    /// Send a request; a non-success status becomes an error naming the
    /// server's message.
    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> anyhow::Result<Value> {
        let url = format!("{}{path}", self.base);
        let mut req = self.http.request(method, &url).bearer_auth(&self.key);
        if let Some(body) = body {
            req = req.json(&body);
        }
        let resp = req
            .send()
            .await
            .with_context(|| format!("cannot reach {url}"))?;
        let status = resp.status();
        let body: Value = resp.json().await.unwrap_or(Value::Null);
        if !status.is_success() {
            bail!(
                "{}",
                message(&body, &format!("the server answered {status}"))
            );
        }
        Ok(body)
    }

    /// Open a session; its id.
    pub async fn create_session(&self, body: Value) -> anyhow::Result<String> {
        let created = self
            .call(reqwest::Method::POST, "/v1/sessions", Some(body))
            .await
            .context("could not open a session")?;
        Ok(created["id"].as_str().unwrap_or_default().to_owned())
    }

    /// Send a user message; the stored message's id.
    pub async fn send(&self, session: &str, text: &str) -> anyhow::Result<String> {
        let sent = self
            .call(
                reqwest::Method::POST,
                &format!("/v1/sessions/{session}/messages"),
                Some(json!({"text": text})),
            )
            .await?;
        Ok(sent["messageId"].as_str().unwrap_or_default().to_owned())
    }

    /// Answer the askUser call `call_id`, one answer per question.
    pub async fn answer(
        &self,
        session: &str,
        call_id: &str,
        answers: &[AnswerValue],
    ) -> anyhow::Result<Answered> {
        let url = format!("{}/v1/sessions/{session}/answers", self.base);
        let resp = self
            .http
            .post(&url)
            .bearer_auth(&self.key)
            .json(&json!({"callId": call_id, "answers": answers}))
            .send()
            .await
            .with_context(|| format!("cannot reach {url}"))?;
        let status = resp.status();
        if status.is_success() {
            return Ok(Answered::Accepted);
        }
        let body: Value = resp.json().await.unwrap_or(Value::Null);
        let m = message(&body, &format!("the server answered {status}"));
        Ok(if status == reqwest::StatusCode::UNPROCESSABLE_ENTITY {
            Answered::Invalid(m)
        } else {
            Answered::Refused(m)
        })
    }

    /// End the session (the host leaves).
    pub async fn end(&self, session: &str, reason: &str) -> anyhow::Result<()> {
        let url = format!("{}/v1/sessions/{session}/end", self.base);
        let resp = self
            .http
            .post(&url)
            .bearer_auth(&self.key)
            .json(&json!({"reason": reason}))
            .send()
            .await
            .with_context(|| format!("cannot reach {url}"))?;
        let status = resp.status();
        if !status.is_success() {
            let body: Value = resp.json().await.unwrap_or(Value::Null);
            bail!(
                "{}",
                message(&body, &format!("the server answered {status}"))
            );
        }
        Ok(())
    }

    /// The names of the assistant's client tools (run by an app connected
    /// over the WebSocket, never by the terminal); empty when they cannot
    /// be read.
    pub async fn client_tools(&self, assistant: &str) -> Vec<String> {
        let Ok(a) = self
            .call(
                reqwest::Method::GET,
                &format!("/v1/assistants/{assistant}"),
                None,
            )
            .await
        else {
            return Vec::new();
        };
        let mut names = Vec::new();
        for binding in a["toolBindings"].as_array().into_iter().flatten() {
            let Some(id) = binding["toolId"].as_str() else {
                continue;
            };
            if let Ok(tool) = self
                .call(reqwest::Method::GET, &format!("/v1/tools/{id}"), None)
                .await
                && tool["type"] == "client"
                && let Some(name) = tool["name"].as_str()
            {
                names.push(name.to_owned());
            }
        }
        names
    }

    /// Follow the session's events from the start, in order, until it ends
    /// or the receiver is dropped.
    pub fn follow(&self, session: &str) -> mpsc::UnboundedReceiver<Feed> {
        let (tx, rx) = mpsc::unbounded_channel();
        let api = self.clone();
        let session = session.to_owned();
        tokio::spawn(async move {
            let mut after = 0;
            let mut lost = false;
            loop {
                match api.stream(&session, &mut after, &tx, &mut lost).await {
                    Ok(Stop::Ended) | Ok(Stop::Closed) => return,
                    Ok(Stop::Dropped) => {}
                    Err(Refused(m)) => {
                        let _ = tx.send(Feed::Fatal(m));
                        return;
                    }
                }
                if !lost {
                    lost = true;
                    if tx
                        .send(Feed::Lost("the event stream dropped; reconnecting".into()))
                        .is_err()
                    {
                        return;
                    }
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        });
        rx
    }

    /// One SSE connection: forward its events after `after`, moving it on.
    async fn stream(
        &self,
        session: &str,
        after: &mut i64,
        tx: &mpsc::UnboundedSender<Feed>,
        lost: &mut bool,
    ) -> Result<Stop, Refused> {
        let url = format!("{}/v1/sessions/{session}/events?after={after}", self.base);
        let Ok(resp) = self.http.get(&url).bearer_auth(&self.key).send().await else {
            return Ok(Stop::Dropped);
        };
        let status = resp.status();
        if status.is_client_error() {
            let body: Value = resp.json().await.unwrap_or(Value::Null);
            return Err(Refused(message(
                &body,
                &format!("the event stream answered {status}"),
            )));
        }
        if !status.is_success() {
            return Ok(Stop::Dropped);
        }
        *lost = false;
        let mut body = resp.bytes_stream();
        let mut buf = String::new();
        while let Some(chunk) = body.next().await {
            let Ok(chunk) = chunk else {
                return Ok(Stop::Dropped);
            };
            buf.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = buf.find("\n\n") {
                let block: String = buf.drain(..end + 2).collect();
                let data: String = block
                    .lines()
                    .filter_map(|l| l.strip_prefix("data:"))
                    .map(str::trim_start)
                    .collect::<Vec<_>>()
                    .join("\n");
                if data.is_empty() {
                    continue; // a keep-alive comment
                }
                let Ok(raw) = serde_json::from_str::<Value>(&data) else {
                    continue;
                };
                *after = raw["seq"].as_i64().unwrap_or(*after);
                // A kind this client does not know is skipped.
                let Ok(event) = serde_json::from_value::<SessionEvent>(raw) else {
                    continue;
                };
                let ended = matches!(event.body, EventBody::SessionEnded(_));
                if tx.send(Feed::Event(Box::new(event))).is_err() {
                    return Ok(Stop::Closed);
                }
                if ended {
                    return Ok(Stop::Ended);
                }
            }
        }
        Ok(Stop::Dropped)
    }
}

/// Why a stream stopped.
enum Stop {
    Ended,
    /// Nobody listens any more.
    Closed,
    Dropped,
}

/// The server refused the stream (4xx), with its message.
struct Refused(String);
