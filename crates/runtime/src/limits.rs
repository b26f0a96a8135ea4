//! R-SEC-6 bounds on what one workspace can make the server hold: active
//! sessions, the text of a message (user or human agent), an end reason and
//! the tool result one `tool.completed` event records.

use rtc_core::ValidationError;

use crate::RuntimeError;

/// Most bytes of one message's text (a user's or a human agent's).
pub const MAX_MESSAGE_BYTES: usize = 100_000;

/// Most characters of a session's end reason.
pub const MAX_END_REASON_CHARS: usize = 1_000;

/// The configurable bounds.
#[derive(Debug, Clone, Copy)]
pub struct SessionLimits {
    /// Most active (not ended) sessions of one workspace; creating one more
    /// is refused (`too_many_sessions`).
    pub max_active_sessions: u64,
    /// Most bytes of the JSON of a tool result recorded in one
    /// `tool.completed` event; a longer one is cut (`truncated: true`),
    /// while the model still reads the whole result.
    pub max_event_result_bytes: usize,
}

impl Default for SessionLimits {
    fn default() -> Self {
        Self {
            max_active_sessions: 10_000,
            max_event_result_bytes: 256 * 1024,
        }
    }
}

/// A message's text: not blank, at most [`MAX_MESSAGE_BYTES`].
pub(crate) fn check_text(text: &str) -> Result<(), RuntimeError> {
    if text.trim().is_empty() || text.len() > MAX_MESSAGE_BYTES {
        return Err(ValidationError::new(
            "invalid_text",
            "text",
            format!("`text` must be 1 to {MAX_MESSAGE_BYTES} bytes"),
        )
        .into());
    }
    Ok(())
}

/// An end reason: at most [`MAX_END_REASON_CHARS`] characters.
pub(crate) fn check_end_reason(reason: Option<&str>) -> Result<(), RuntimeError> {
    if reason.is_some_and(|r| r.chars().count() > MAX_END_REASON_CHARS) {
        return Err(ValidationError::new(
            "invalid_reason",
            "reason",
            format!("`reason` must be at most {MAX_END_REASON_CHARS} characters"),
        )
        .into());
    }
    Ok(())
}
