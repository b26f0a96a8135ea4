//! The one error type of validation: a stable code, the offending field's
//! path and a message naming it.

/// A rule broken by a resource; the server maps it to a 4xx.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct ValidationError {
    /// Stable machine-readable code, e.g. `unknown_variable`.
    pub code: &'static str,
    /// Path of the offending field, e.g. `toolBindings[0].toolId`.
    pub field: String,
    pub message: String,
}

impl ValidationError {
    pub fn new(code: &'static str, field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            code,
            field: field.into(),
            message: message.into(),
        }
    }
}

/// Shorthand for rule results.
pub type Rule<T = ()> = Result<T, ValidationError>;
