//! One module per resource family; each exposes `router()`.

pub mod assistants;
pub mod health;
pub mod mcp_servers;
pub mod realtime;
pub mod secrets;
pub mod tools;
pub mod workspaces;

use crate::ApiError;

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
