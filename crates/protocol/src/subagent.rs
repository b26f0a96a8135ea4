//! The sub-agent tree of a session (R-SA-1, `GET /v1/sessions/{id}/tree`).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::SessionStatus;

/// One session of a tree with the sub-agents it started.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionTreeNode {
    pub session_id: String,
    /// The sub-agent's title; none for the root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    pub status: SessionStatus,
    /// `async` or `sync`; none for the root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// A sub-agent working on its task (false once it reported); a root
    /// session is never "running" here.
    pub running: bool,
    /// 0 for the root.
    pub depth: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_reason: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    #[schema(no_recursion)]
    pub children: Vec<SessionTreeNode>,
}
