//! Errors of runtime operations, for the server to map to HTTP.

use rtc_core::ValidationError;
use rtc_store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error("{what} `{id}` does not exist")]
    NotFound { what: &'static str, id: String },
    #[error(transparent)]
    Invalid(#[from] ValidationError),
    #[error("{message}")]
    Conflict { code: &'static str, message: String },
    /// A bound of R-SEC-6 is reached (429).
    #[error("{message}")]
    TooMany { code: &'static str, message: String },
    /// A workspace's quota is spent (429 with `Retry-After`).
    #[error("{message}")]
    Limited {
        code: &'static str,
        message: String,
        retry_after_secs: u64,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("internal error: {0}")]
    Internal(String),
}

impl RuntimeError {
    pub fn not_found(what: &'static str, id: &str) -> Self {
        Self::NotFound {
            what,
            id: id.to_owned(),
        }
    }

    /// 409 `session_ended`: the session takes nothing more.
    pub fn session_ended() -> Self {
        Self::Conflict {
            code: "session_ended",
            message: "the session has ended".into(),
        }
    }
}
