//! Reading what an OpenCode server says about a task (design §2.1, §2.3):
//! the status map, the outcome of a session's messages (the **last**
//! assistant message decides: its text parts are the result, its `error`
//! a failure or an abort), and the few event types the backend follows.
//! Unknown event types and unknown fields are ignored: new ones appear
//! between versions.

use std::collections::BTreeMap;

use serde_json::Value;

/// The error name OpenCode gives an aborted message.
const ABORTED: &str = "MessageAbortedError";

/// What `/session/status` (or a `session.status` event) says of a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionState {
    Busy,
    /// The model call failed and is retried; `message` says why.
    Retry {
        attempt: u64,
        message: String,
    },
    Idle,
    /// A state this version does not know (taken as still working).
    Other(String),
}

impl SessionState {
    fn parse(v: &Value) -> Self {
        match v.get("type").and_then(Value::as_str).unwrap_or_default() {
            "busy" => Self::Busy,
            "idle" => Self::Idle,
            "retry" => Self::Retry {
                attempt: v.get("attempt").and_then(Value::as_u64).unwrap_or_default(),
                message: v
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
            },
            other => Self::Other(other.to_owned()),
        }
    }
}

/// `GET /session/status`: session id → state (idle sessions are absent).
/// None when the answer is not an object.
pub fn parse_status(body: &Value) -> Option<BTreeMap<String, SessionState>> {
    let map = body.as_object()?;
    Some(
        map.iter()
            .map(|(id, state)| (id.clone(), SessionState::parse(state)))
            .collect(),
    )
}

/// Where a task stands according to its session's messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskOutcome {
    /// The last assistant message finished; its text.
    Completed(String),
    /// The last assistant message carries an error; its message.
    Failed(String),
    /// The last assistant message was aborted.
    Aborted,
    /// An assistant message is under way (or stopped for tool calls).
    Working,
    /// No assistant message answers the last user message yet.
    NoReply,
}

/// The outcome of a session's messages (oldest first, as
/// `GET /session/{id}/message` lists them).
pub fn task_outcome(messages: &[Value]) -> TaskOutcome {
    let role = |m: &Value| {
        m.pointer("/info/role")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let last_user = messages.iter().rposition(|m| role(m) == "user");
    let replies = &messages[last_user.map_or(0, |i| i + 1)..];
    let Some(last) = replies.iter().rev().find(|m| role(m) == "assistant") else {
        return TaskOutcome::NoReply;
    };
    let info = &last["info"];
    if let Some(error) = info.get("error").filter(|e| !e.is_null()) {
        if error.get("name").and_then(Value::as_str) == Some(ABORTED) {
            return TaskOutcome::Aborted;
        }
        return TaskOutcome::Failed(
            error_message(error).unwrap_or_else(|| "OpenCode reported an error".to_owned()),
        );
    }
    let completed = info
        .pointer("/time/completed")
        .is_some_and(|t| !t.is_null());
    let finish = info
        .get("finish")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !completed || finish.is_empty() || finish == "tool-calls" {
        return TaskOutcome::Working;
    }
    TaskOutcome::Completed(message_text(last))
}

/// The concatenated `text` parts of a message.
fn message_text(message: &Value) -> String {
    message
        .get("parts")
        .and_then(Value::as_array)
        .map(|parts| {
            parts
                .iter()
                .filter(|p| p.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .concat()
        })
        .unwrap_or_default()
        .trim()
        .to_owned()
}

/// The message of an OpenCode error object (`{"name","data":{"message"}}`),
/// else its name.
pub fn error_message(error: &Value) -> Option<String> {
    let message = error
        .pointer("/data/message")
        .and_then(Value::as_str)
        .filter(|m| !m.trim().is_empty());
    message
        .or_else(|| error.get("name").and_then(Value::as_str))
        .map(|m| m.trim().to_owned())
}

/// One event of `GET /event` the backend acts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpencodeEvent {
    /// `server.connected`: the subscription is (again) live.
    Connected,
    /// `session.idle`: the session stopped working (done, failed or aborted).
    Idle { session: String },
    /// `session.error`: the session's run failed (or was aborted).
    Error {
        session: Option<String>,
        name: String,
        message: String,
    },
    /// `session.status`: busy, retrying or idle.
    Status {
        session: String,
        state: SessionState,
    },
}

impl OpencodeEvent {
    /// The session the event is about, if any.
    pub fn session(&self) -> Option<&str> {
        match self {
            Self::Connected => None,
            Self::Idle { session } | Self::Status { session, .. } => Some(session),
            Self::Error { session, .. } => session.as_deref(),
        }
    }
}

/// One `data:` payload of the event stream; None for types the backend
/// does not follow and for anything malformed.
pub fn parse_event(data: &str) -> Option<OpencodeEvent> {
    let event: Value = serde_json::from_str(data).ok()?;
    let props = event.get("properties").unwrap_or(&Value::Null);
    let session = props
        .get("sessionID")
        .and_then(Value::as_str)
        .map(str::to_owned);
    match event.get("type").and_then(Value::as_str)? {
        "server.connected" => Some(OpencodeEvent::Connected),
        "session.idle" => Some(OpencodeEvent::Idle { session: session? }),
        "session.status" => Some(OpencodeEvent::Status {
            session: session?,
            state: SessionState::parse(props.get("status")?),
        }),
        "session.error" => {
            let error = props.get("error").unwrap_or(&Value::Null);
            Some(OpencodeEvent::Error {
                session,
                name: error
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("UnknownError")
                    .to_owned(),
                message: error_message(error).unwrap_or_else(|| "unknown error".to_owned()),
            })
        }
        _ => None,
    }
}

#[cfg(test)]
#[path = "outcome_tests.rs"]
mod tests;
