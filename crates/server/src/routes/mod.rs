//! One module per resource family; each exposes `router()`.

pub mod assistants;
pub mod conversation_tests;
pub mod health;
pub mod interaction;
pub mod live;
pub mod mcp_servers;
pub mod memories;
pub mod providers;
pub mod realtime;
mod save_warnings;
pub mod secrets;
pub mod sessions;
pub mod speech;
pub mod task_backends;
pub mod tasks;
pub mod tools;
pub mod usage;
pub mod workflows;
pub mod workspaces;

use axum::Json;
use axum::http::StatusCode;
use rtc_store::{Document, ResourceKind};

use crate::{ApiError, ApiResult, AppState};

/// An id chosen by the client on create: letters, digits, `_`, `-`, 1–64.
pub fn chosen_id(id: Option<String>) -> Result<Option<String>, ApiError> {
    match id {
        Some(id)
            if id.is_empty()
                || id.len() > 64
                || !id
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') =>
        {
            Err(ApiError::unprocessable(
                "invalid_id",
                "id",
                format!("`id` must be 1 to 64 letters, digits, `_` or `-`; got {id:?}"),
            ))
        }
        other => Ok(other),
    }
}

/// How messages name a resource kind.
fn noun(kind: ResourceKind) -> &'static str {
    match kind {
        ResourceKind::Tool => "tool",
        ResourceKind::McpServer => "MCP server",
        ResourceKind::Assistant => "assistant",
        ResourceKind::RealtimeInterface => "realtime interface",
        ResourceKind::Secret => "secret",
        ResourceKind::Workflow => "workflow",
        ResourceKind::TaskBackend => "task backend",
        ResourceKind::SpeechInterface => "speech interface",
    }
}

/// A stored document of the workspace, or 404.
pub async fn load<D: Document>(s: &AppState, workspace: &str, id: &str) -> ApiResult<D> {
    s.store
        .get(workspace, id)
        .await?
        .ok_or_else(|| ApiError::not_found(noun(D::KIND), id))
}

/// Replace a stored document, or 404.
pub async fn replace_doc<D: Document>(
    s: &AppState,
    workspace: &str,
    id: &str,
    doc: D,
) -> ApiResult<Json<D>> {
    let saved = s.store.update(workspace, id, doc).await?;
    saved
        .map(Json)
        .ok_or_else(|| ApiError::not_found(noun(D::KIND), id))
}

/// Delete a document nothing references: 204, 404 or 409 `in_use`.
pub async fn delete_doc<D: Document>(
    s: &AppState,
    workspace: &str,
    id: &str,
) -> ApiResult<StatusCode> {
    if s.store.delete::<D>(workspace, id).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::not_found(noun(D::KIND), id))
    }
}
