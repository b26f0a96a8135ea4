//! The loop tools (R-LP-1..4, R-BX-1): a prompt that runs as a turn of the
//! session every interval, durably, until it completes, is cancelled or
//! runs out of turns or time. One tool per file.

pub mod cancel;
pub mod complete;
pub mod create;
pub mod list;
pub mod pause;
pub mod resume;

use crate::builtins::ArgumentError;
use serde::Deserialize;

/// `createLoop`'s arguments.
#[derive(Debug, Deserialize)]
pub struct Create {
    pub prompt: String,
    pub interval_seconds: i64,
    #[serde(default = "default_turns")]
    pub max_turns: i64,
}

fn default_turns() -> i64 {
    10
}

/// A loop tool's call, parsed, for the loop service (`super::super::service`).
pub(crate) enum LoopOp {
    Create(Create),
    Cancel(String),
    Complete(complete::Complete),
    List,
    Pause(String),
    Resume(String),
}
use serde_json::{Value, json};

fn loop_id_parameters() -> Value {
    json!({"type": "object", "properties": {"loop_id": {"type": "string", "minLength": 1}},
        "required": ["loop_id"], "additionalProperties": false})
}

/// Run one loop tool's call through the loop service.
async fn run(
    cx: crate::tool::ToolCx<'_>,
    op: LoopOp,
) -> Result<crate::tool::CallOutcome, crate::RuntimeError> {
    let loops = super::service::LoopCx {
        store: &cx.rt.store,
        settings: &cx.rt.config.loops,
        session: cx.session,
    };
    loops.run(op).await
}

/// `{loop_id}` of cancelLoop, pauseLoop and resumeLoop.
#[derive(Debug, Deserialize)]
pub struct LoopRef {
    pub loop_id: String,
}

pub(crate) fn parse_ref(arguments: &str) -> Result<LoopRef, ArgumentError> {
    crate::builtins::parse_arguments(&loop_id_parameters(), arguments)
}
