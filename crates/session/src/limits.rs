//! R-SEC-6 / R-SEC-7 bounds on what one workspace (or a model acting for
//! it) can make the server hold or do: active sessions, the text of a
//! message, an end reason, the tool result one event records, variable
//! values, `updateState` rules and `llm` leaves, a session's history,
//! live subscribers per session (the features' own bounds are theirs). Each is configurable
//! (README "Limits" lists the settings and their defaults) and has a
//! stable error code.

use rtc_core::ValidationError;
use rtc_core::bounds::{UpdateBounds, json_size};
use rtc_expr::EvalLimits;
use serde_json::{Map, Value};

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
    /// Rules and `llm` leaves per `updateState` (checked at save and at
    /// session start); the most bytes (as JSON) of one variable value, and
    /// of a string an expression makes (`value_too_large`), and of all of
    /// a session's variables together (`variables_too_large`; every
    /// `state.updated` carries them all), also checked on declared
    /// defaults at save.
    pub update: UpdateBounds,
    /// Most bytes of a session's stored messages; past it the session
    /// takes no new turn (`history_full`).
    pub max_history_bytes: u64,
    /// A history larger than this is not kept in memory between turns:
    /// it is read again from the store when a turn needs it.
    pub history_memory_bytes: u64,
    /// Most live subscribers (SSE streams and WebSockets) of one session
    /// (`too_many_subscribers`).
    pub max_subscribers: usize,
    /// Most bytes of a tool result that later turns' requests carry again;
    /// the rest is cut with a marker (the turn that called the tool reads
    /// it whole).
    pub max_replayed_result_bytes: usize,
    /// The share of the model's context window (percent, 10 to 95) past
    /// which a request is compacted.
    pub context_compact_percent: u8,
}

impl Default for SessionLimits {
    fn default() -> Self {
        Self {
            max_active_sessions: 10_000,
            max_message_bytes: 100_000,
            max_end_reason_chars: 1_000,
            max_event_result_bytes: 256 * 1024,
            update: UpdateBounds::default(),
            max_history_bytes: 32 * 1024 * 1024,
            history_memory_bytes: 4 * 1024 * 1024,
            max_subscribers: 16,
            max_replayed_result_bytes: 16 * 1024,
            context_compact_percent: 80,
        }
    }
}

impl SessionLimits {
    /// A message's text: not blank, at most `max_message_bytes`.
    pub fn check_text(&self, text: &str) -> Result<(), RuntimeError> {
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
    pub fn check_end_reason(&self, reason: Option<&str>) -> Result<(), RuntimeError> {
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

    /// What one evaluation of an expression may make.
    pub fn eval(&self) -> EvalLimits {
        EvalLimits {
            max_string_bytes: self.update.max_value_bytes,
            max_llm_leaves: self.update.max_llm_leaves,
        }
    }

    /// Why `value` cannot be a variable's value (`value_too_large`), if
    /// it cannot.
    pub fn value_problem(&self, name: &str, value: &Value) -> Option<VariableProblem> {
        let size = json_size(value);
        (size > self.update.max_value_bytes).then(|| VariableProblem {
            code: "value_too_large",
            message: format!(
                "`{name}` would hold {size} bytes; a value holds at most {} (value_too_large)",
                self.update.max_value_bytes
            ),
        })
    }

    /// Why variables of `total` bytes cannot be kept
    /// (`variables_too_large`), if they cannot.
    pub fn total_problem(&self, name: &str, total: usize) -> Option<VariableProblem> {
        (total > self.update.max_variables_bytes).then(|| VariableProblem {
            code: "variables_too_large",
            message: format!(
                "`{name}` unchanged: the session's variables would hold {total} bytes, at most {} (variables_too_large)",
                self.update.max_variables_bytes
            ),
        })
    }

    /// Initial values given at session start: each within the bounds.
    pub fn check_initial(&self, vars: &Map<String, Value>) -> Result<(), RuntimeError> {
        let mut total = 0;
        for (name, value) in vars {
            if let Some(p) = self.value_problem(name, value) {
                return Err(ValidationError::new(
                    p.code,
                    format!("dynamicVariables.{name}"),
                    p.message,
                )
                .into());
            }
            total += variable_size(name, value);
        }
        if let Some(p) = self.total_problem("dynamicVariables", total) {
            return Err(ValidationError::new(p.code, "dynamicVariables", p.message).into());
        }
        Ok(())
    }
}

/// A change of a variable refused by a bound.
#[derive(Debug, Clone)]
pub struct VariableProblem {
    pub code: &'static str,
    pub message: String,
}

/// What one variable adds to the session's stored variables.
pub fn variable_size(name: &str, value: &Value) -> usize {
    name.len() + json_size(value)
}

/// All variables' size, as [`SessionLimits::max_variables_bytes`] counts it.
pub fn variables_size(vars: &Map<String, Value>) -> usize {
    vars.iter().map(|(k, v)| variable_size(k, v)).sum()
}
