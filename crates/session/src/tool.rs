//! What every tool a model may call implements ([`ToolHandler`]), what a
//! call runs with ([`ToolCx`]), and its outcome: a result for the model,
//! an error the model can read (both [`CallOutcome`]), or a fatal
//! [`RuntimeError`] that fails the turn. The registry (`crate::registry`)
//! decides what a session offers.

use std::sync::Arc;

use futures::future::BoxFuture;
use rtc_core::llm::{ToolCall, ToolSpec};
use rtc_protocol::Assistant;
use serde_json::{Value, json};

use crate::RuntimeError;
use crate::context::SessionCtx;

/// The call's parsed arguments, or (from a function answering
/// `Result<CallOutcome, _>`) the parse error handed back to the model.
#[macro_export]
macro_rules! parsed {
    ($parse:expr) => {
        match $parse {
            Ok(args) => args,
            Err(e) => return Ok($crate::tool::CallOutcome::error(e)),
        }
    };
}

/// What a call runs with: the kernel's host, the calling session, the
/// assistant whose turn made the call (a workflow's stage) and the call.
pub struct ToolCx<'a, H> {
    pub rt: &'a Arc<H>,
    pub session: &'a Arc<SessionCtx>,
    pub assistant: &'a Assistant,
    pub call: &'a ToolCall,
}

impl<H> Clone for ToolCx<'_, H> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<H> Copy for ToolCx<'_, H> {}

/// What decides whether a session offers a tool: its assistant, the host
/// (the server's configuration) and the session (`None`: any session of
/// the assistant, as when counting at save what it could offer).
pub struct Offer<'a, H> {
    pub assistant: &'a Assistant,
    pub host: &'a H,
    pub session: Option<&'a SessionCtx>,
}

/// A function the model may call.
pub trait ToolHandler<H>: Send + Sync {
    /// What the model sees: name, description, parameter schema.
    fn spec(&self) -> ToolSpec;

    /// Whether a session of this assistant on this server offers it.
    fn offered(&self, _offer: &Offer<'_, H>) -> bool {
        true
    }

    /// Run one call: `Ok` is told to the model (a result, or an error it
    /// can react to); `Err` fails the turn.
    fn call<'a>(&'a self, cx: ToolCx<'a, H>) -> BoxFuture<'a, Result<CallOutcome, RuntimeError>>;
}

/// Why a call of a bound tool has no result.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// The tool failed: the model and the session's events are told this
    /// (scrubbed of the secrets revealed for the call).
    #[error("{0}")]
    Tool(String),
    /// The platform failed (the store, a secret that cannot be opened):
    /// not the model's to read.
    #[error(transparent)]
    Platform(#[from] RuntimeError),
}

impl From<rtc_store::StoreError> for CallError {
    fn from(e: rtc_store::StoreError) -> Self {
        Self::Platform(e.into())
    }
}

impl CallError {
    /// A tool's failure.
    pub fn tool(message: impl Into<String>) -> Self {
        Self::Tool(message.into())
    }

    /// The message the model is told, or the platform's failure.
    pub fn for_model(self) -> Result<String, RuntimeError> {
        match self {
            Self::Tool(message) => Ok(message),
            Self::Platform(e) => Err(e),
        }
    }
}

/// A tool call that stops the turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interrupt {
    End,
    Skip,
    Handoff,
    /// The session waits on someone before it goes on (the user's answers
    /// to a question, a sync sub-agent's report); the feature that waits
    /// holds back the runtime's own turns meanwhile (`Feature::holds_turns`).
    Wait,
}

/// What the model is told, and whether the turn stops.
pub struct CallOutcome {
    pub content: String,
    pub is_error: bool,
    pub interrupt: Option<Interrupt>,
    /// The result for the `tool.completed` event (already filtered).
    pub shown: Value,
    /// No result now: it is recorded when it arrives (askUser's answers).
    pub deferred: bool,
    /// Images the tool returned, kept with its result for models that
    /// see images.
    pub images: Vec<rtc_protocol::MessageImage>,
}

impl CallOutcome {
    pub fn ok(shown: Value) -> Self {
        let content = match &shown {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        Self {
            content,
            is_error: false,
            interrupt: None,
            shown,
            deferred: false,
            images: Vec::new(),
        }
    }

    pub fn error(message: impl Into<String>) -> Self {
        let message = message.into();
        Self {
            content: format!("Error: {message}"),
            is_error: true,
            interrupt: None,
            shown: json!({"error": message}),
            deferred: false,
            images: Vec::new(),
        }
    }

    pub fn interrupt(mut self, i: Interrupt) -> Self {
        self.interrupt = Some(i);
        self
    }
}
