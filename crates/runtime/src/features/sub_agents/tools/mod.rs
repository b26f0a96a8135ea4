//! The sub-agent tools (R-SA-1..7): a session starts child sessions with a
//! blank context, follows them, talks to them and stops them. One tool per
//! file; the runtime owns the tree and its limits.

pub mod get_message;
pub mod list;
pub mod send_message;
pub mod stop;
pub mod sub_agent;

use serde::Deserialize;
use serde_json::{Value, json};

/// A sub-agent tool's call, parsed, for the sub-agent service
/// (`super::super::service`).
pub(crate) enum SubAgentOp {
    Start(sub_agent::SubAgent),
    List,
    GetMessage(String),
    Stop(String),
    SendMessage(send_message::SendMessage),
}

/// The `sub_session_id` parameter shared by the tools that name a sub-agent.
fn sub_session_id_property() -> Value {
    json!({"type": "string", "minLength": 1, "maxLength": 200,
        "description": "The sub-session's server id; listSubAgent gives the ids you may use."})
}

fn sub_session_parameters() -> Value {
    json!({"type": "object", "properties": {"sub_session_id": sub_session_id_property()},
        "required": ["sub_session_id"], "additionalProperties": false})
}

/// `{sub_session_id}` of getSubAgentMessage and stopSubAgent.
#[derive(Debug, Deserialize)]
pub struct SubSessionRef {
    pub sub_session_id: String,
}
