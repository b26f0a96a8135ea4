//! R-SEC-6 bounds on what one workspace can make the server hold: active
//! sessions, the text of a message (user or human agent), an end reason and
//! the tool result one `tool.completed` event records.

use rtc_core::ValidationError;

use crate::RuntimeError;

/// The bounds, each configurable.
#[derive(Debug, Clone, Copy)]
pub struct SessionLimits {
    /// Most active (not ended) sessions of one workspace; creating one more
    /// is refused (`too_many_sessions`).
    pub max_active_sessions: u64,
    /// Most bytes of one message's text (a user's or a human agent's).
    pub max_message_bytes: usize,
    /// Most characters of a session's end reason.
    pub max_end_reason_chars: usize,
    /// Most bytes of the JSON of a tool result recorded in one
    /// `tool.completed` event; a longer one is cut (`truncated: true`),
    /// while the model still reads the whole result.
    pub max_event_result_bytes: usize,
}

impl Default for SessionLimits {
    fn default() -> Self {
        Self {
            max_active_sessions: 10_000,
            max_message_bytes: 100_000,
            max_end_reason_chars: 1_000,
            max_event_result_bytes: 256 * 1024,
        }
    }
}

impl SessionLimits {
    /// A message's text: not blank, at most `max_message_bytes`.
    pub(crate) fn check_text(&self, text: &str) -> Result<(), RuntimeError> {
        let max = self.max_message_bytes;
        if text.trim().is_empty() || text.len() > max {
            return Err(ValidationError::new(
                "invalid_text",
                "text",
                format!("`text` must be 1 to {max} bytes"),
            )
            .into());
        }
        Ok(())
    }

    /// An end reason: at most `max_end_reason_chars` characters.
    pub(crate) fn check_end_reason(&self, reason: Option<&str>) -> Result<(), RuntimeError> {
        let max = self.max_end_reason_chars;
        if reason.is_some_and(|r| r.chars().count() > max) {
            return Err(ValidationError::new(
                "invalid_reason",
                "reason",
                format!("`reason` must be at most {max} characters"),
            )
            .into());
        }
        Ok(())
    }
}
