//! The OpenCode task backend's outbound side (R-TK, design
//! `task-backends.md` §0.2–§6): a client of an OpenCode server's V1 HTTP
//! API (health, task sessions, `prompt_async`, status, messages, abort),
//! the readers of its answers (a task's outcome from the last assistant
//! message), one shared SSE event subscription per server, and the
//! supervisor of a server the platform starts itself. Built on
//! `opencode-ai` 1.18.33, the pinned version.
//!
//! The server's password is sent as HTTP Basic credentials (user
//! `opencode`) and never appears in an error, a log line or a `Debug`.

mod client;
mod events;
mod outcome;
mod supervisor;

pub use client::{OpencodeClient, Password, TaskPrompt};
pub use events::{EventHub, HubEvent};
pub use outcome::{
    OpencodeEvent, SessionState, TaskOutcome, error_message, parse_event, parse_status,
    task_outcome,
};
pub use supervisor::{SupervisedServer, SupervisorSettings, hermetic_config};

/// The OpenCode version the backend is built and tested against; a server
/// answering another version works but is warned about.
pub const PINNED_VERSION: &str = "1.18.33";

/// How long connecting to a server may take before it counts as down.
pub const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// What went wrong talking to an OpenCode server. No variant carries the
/// password; texts quoted from the server are scrubbed of it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpencodeError {
    /// Nothing answers at the address (refused, timed out, no route).
    #[error("task backend \"opencode\" unreachable at {url}: {reason}")]
    Unreachable { url: String, reason: String },
    /// The server refused the credentials (HTTP 401).
    #[error("task backend \"opencode\" at {url}: authentication failed (check its password)")]
    AuthenticationFailed { url: String },
    /// The session (or route) does not exist on the server (HTTP 404).
    #[error("task backend \"opencode\" at {url}: not found: {message}")]
    NotFound { url: String, message: String },
    /// Any other HTTP error status.
    #[error("task backend \"opencode\" at {url} answered HTTP {status}: {message}")]
    Http {
        url: String,
        status: u16,
        message: String,
    },
    /// The server answered, but not with what the API promises.
    #[error("task backend \"opencode\" at {url} gave an unexpected answer: {detail}")]
    BadAnswer { url: String, detail: String },
    /// The outbound guard refused the address (R-SEC-2).
    #[error("task backend \"opencode\" at {url} is refused: {reason}")]
    Blocked { url: String, reason: String },
    /// The configured address is not a usable URL.
    #[error("task backend \"opencode\": the base URL {url:?} is invalid: {reason}")]
    InvalidUrl { url: String, reason: String },
    /// A server the platform starts could not be started or never became
    /// healthy.
    #[error("task backend \"opencode\": the server could not be started: {0}")]
    Start(String),
}

impl OpencodeError {
    /// Whether the server could not be reached at all (as opposed to
    /// answering with an error).
    pub fn is_unreachable(&self) -> bool {
        matches!(self, Self::Unreachable { .. })
    }
}
