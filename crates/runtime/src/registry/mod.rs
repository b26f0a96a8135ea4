//! The tool registry: one door for every function a model may call.
//! Bound tool resources (HTTP, MCP, client), the platform built-ins
//! (`endConversation`, `updateState`, `skipTurn`, `requestHumanHandoff`)
//! and the LLM's built-ins all implement [`ToolHandler`]: what the model
//! sees, whether a session offers it, and running a call, whose outcome
//! is a result for the model, an error the model can read (both
//! [`CallOutcome`]), or a fatal [`RuntimeError`] that fails the turn.
//! [`SessionTools`] is what one session offers; reserved names come from
//! here, so no tool resource can take a built-in's name.

pub(crate) mod bound;
pub(crate) mod platform;

use std::collections::BTreeSet;
use std::sync::{Arc, LazyLock};

use futures::future::BoxFuture;
use rtc_core::llm::{ToolCall, ToolSpec};
use rtc_core::model_tools::{ToolTarget, model_tools};
use rtc_protocol::{Assistant, BuiltInToolName};
use serde_json::{Value, json};

use crate::session::{SessionConfig, SessionCtx};
use crate::{Inner, RuntimeConfig, RuntimeError};

/// The call's parsed arguments, or (from a function answering
/// `Result<CallOutcome, _>`) the parse error handed back to the model.
macro_rules! parsed {
    ($parse:expr) => {
        match $parse {
            Ok(args) => args,
            Err(e) => return Ok($crate::registry::CallOutcome::error(e)),
        }
    };
}
pub(crate) use parsed;

/// What a call runs with: the runtime, the calling session and the call.
#[derive(Clone, Copy)]
pub(crate) struct ToolCx<'a> {
    pub rt: &'a Arc<Inner>,
    pub session: &'a Arc<SessionCtx>,
    pub call: &'a ToolCall,
}

/// What decides whether a session offers a tool: its assistant and the
/// server's configuration.
pub(crate) struct Offer<'a> {
    pub assistant: &'a Assistant,
    pub config: &'a RuntimeConfig,
}

/// A function the model may call.
pub(crate) trait ToolHandler: Send + Sync {
    /// What the model sees: name, description, parameter schema.
    fn spec(&self) -> ToolSpec;

    /// Whether a session of this assistant on this server offers it.
    fn offered(&self, _offer: &Offer<'_>) -> bool {
        true
    }

    /// Run one call: `Ok` is told to the model (a result, or an error it
    /// can react to); `Err` fails the turn.
    fn call<'a>(&'a self, cx: ToolCx<'a>) -> BoxFuture<'a, Result<CallOutcome, RuntimeError>>;
}

/// Names no tool resource may take: every built-in's, and those of the
/// task-backend tools to come.
const RESERVED_FOR_LATER: &[&str] = &["delegate_task", "get_task_status", "cancel_task"];

/// The LLM's built-ins with their specs, built once.
static BUILT_INS: LazyLock<Vec<(ToolSpec, Arc<dyn ToolHandler>)>> = LazyLock::new(|| {
    crate::builtins::all()
        .into_iter()
        .map(|h| (h.spec(), h))
        .collect()
});

/// Whether `name` belongs to the platform (R-TR-1).
pub(crate) fn is_reserved(name: &str) -> bool {
    reserved_names().contains(name)
}

/// Every reserved tool name.
pub(crate) fn reserved_names() -> BTreeSet<&'static str> {
    BUILT_INS
        .iter()
        .map(|(s, _)| s.name.as_str())
        .chain(BuiltInToolName::ALL.iter().map(|b| b.as_str()))
        .chain(RESERVED_FOR_LATER.iter().copied())
        .collect()
}

/// The functions one session offers, each with its handler.
pub(crate) struct SessionTools {
    tools: Vec<(ToolSpec, Arc<dyn ToolHandler>)>,
}

impl SessionTools {
    /// The assistant's platform built-ins and bindings (see
    /// `rtc_core::model_tools`), then the LLM built-ins it offers.
    pub fn for_session(config: &RuntimeConfig, session: &SessionConfig) -> Self {
        let assistant = &session.assistant;
        let offer = Offer { assistant, config };
        let mut tools: Vec<(ToolSpec, Arc<dyn ToolHandler>)> = Vec::new();
        for (spec, target) in model_tools(assistant, &session.tools) {
            let handler: Arc<dyn ToolHandler> = match target {
                ToolTarget::BuiltIn(name) => Arc::new(platform::PlatformTool {
                    name,
                    spec: spec.clone(),
                }),
                // Saved tools never carry a reserved name; a stored one
                // that does (from before a name was reserved) is not offered.
                ToolTarget::Binding(_) if is_reserved(&spec.name) => continue,
                ToolTarget::Binding(index) => Arc::new(bound::BoundTool {
                    index,
                    spec: spec.clone(),
                }),
            };
            tools.push((spec, handler));
        }
        for (spec, handler) in BUILT_INS.iter() {
            if handler.offered(&offer) {
                tools.push((spec.clone(), handler.clone()));
            }
        }
        Self { tools }
    }

    /// What the model is offered.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools.iter().map(|(s, _)| s.clone()).collect()
    }

    /// The handler of the function named `name`.
    pub fn find(&self, name: &str) -> Option<&Arc<dyn ToolHandler>> {
        self.tools
            .iter()
            .find(|(s, _)| s.name == name)
            .map(|(_, h)| h)
    }
}

/// A tool call that stops the turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Interrupt {
    End,
    Skip,
    Handoff,
    /// askUser: the session waits for the user's answers.
    Ask,
    /// subAgent in sync mode: the session waits for the sub-agent's report.
    AwaitSubAgent,
}

/// What the model is told, and whether the turn stops.
pub(crate) struct CallOutcome {
    pub content: String,
    pub is_error: bool,
    pub interrupt: Option<Interrupt>,
    /// The result for the `tool.completed` event (already filtered).
    pub shown: Value,
    /// No result now: it is recorded when it arrives (askUser's answers).
    pub deferred: bool,
}

impl CallOutcome {
    pub(crate) fn ok(shown: Value) -> Self {
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
        }
    }

    pub(crate) fn error(message: impl Into<String>) -> Self {
        let message = message.into();
        Self {
            content: format!("Error: {message}"),
            is_error: true,
            interrupt: None,
            shown: json!({"error": message}),
            deferred: false,
        }
    }

    pub(crate) fn interrupt(mut self, i: Interrupt) -> Self {
        self.interrupt = Some(i);
        self
    }
}

#[cfg(test)]
#[path = "registry_tests.rs"]
mod tests;
