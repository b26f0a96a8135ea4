//! Sessions, their messages and events (R-API-4..6).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateSessionParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assistant_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_id: Option<String>,
    /// The end user (for memories and `system__user_id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 256)]
    pub user_id: Option<String>,
    /// Initial values of declared dynamic variables.
    #[serde(default)]
    #[schema(value_type = Object)]
    pub dynamic_variables: BTreeMap<String, Value>,
    /// Test mode (R-BX-10): every HTTP, MCP and client tool answers from
    /// its `mockResponse` without an outbound request, webSearch and
    /// webFetch are refused, a task backend's OpenCode task is not started;
    /// only model calls leave the server. Every event carries `testMode`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub test_mode: bool,
    /// A conversation test's scripted tool results (set by the test
    /// runner, never read from a request).
    #[serde(skip)]
    #[schema(ignore)]
    pub scripted_results: BTreeMap<String, Vec<crate::ScriptedResult>>,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreateSessionResponse {
    pub id: String,
    /// A token valid for this session only (for browsers and devices).
    pub client_token: String,
    pub status: SessionStatus,
    pub root_session_id: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub enum SessionStatus {
    /// The model drives the conversation.
    Active,
    /// A human agent has taken over.
    Handoff,
    /// Ended; no more turns.
    Ended,
}

impl SessionStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Handoff => "handoff",
            Self::Ended => "ended",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [Self::Active, Self::Handoff, Self::Ended]
            .into_iter()
            .find(|v| v.as_str() == s)
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Session {
    pub id: String,
    /// The assistant the session runs; for a workflow session, the
    /// workflow's id (see `workflowId`).
    pub assistant_id: String,
    /// Set for a workflow session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_id: Option<String>,
    /// A workflow session's position: current node, visits, path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow: Option<crate::WorkflowPosition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    pub status: SessionStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_session_id: Option<String>,
    pub root_session_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[schema(value_type = Object)]
    pub variables: Map<String, Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_by: Option<String>,
    /// A test-mode session (R-BX-10).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub test_mode: bool,
    /// What its model calls cost (its own; a sub-agent's are its own
    /// session's). Shown by `GET /v1/sessions/{id}`, not in lists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<crate::UsageTotals>,
    pub created_at: String,
    pub updated_at: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum MessageRole {
    User,
    Assistant,
    Tool,
    HumanAgent,
}

impl MessageRole {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Assistant => "assistant",
            Self::Tool => "tool",
            Self::HumanAgent => "human_agent",
        }
    }
}

/// One message of a session's history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    pub id: String,
    pub role: MessageRole,
    #[serde(default)]
    pub content: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<MessageToolCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `audio`: a realtime session's transcript of speech.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The user spoke over this answer before it was played to its end.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
    /// Images a tool returned (an MCP tool's), shown to models that see
    /// images; `content` describes them for the others.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<MessageImage>,
    pub created_at: String,
}

/// An image of a message: its media type and base64 data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MessageImage {
    pub mime_type: String,
    pub data: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MessageToolCall {
    pub id: String,
    pub name: String,
    /// The arguments as the model wrote them (JSON text).
    pub arguments: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SendMessageParams {
    /// Not blank; at most `RTC_MAX_MESSAGE_BYTES` bytes of UTF-8 (100,000
    /// by default).
    #[schema(min_length = 1, pattern = r"\S")]
    pub text: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageResponse {
    pub message_id: String,
    pub accepted: bool,
}
