//! The goal tools (R-GL-1, R-BX-2): a goal keeps the session working, turn
//! after turn, until a judge finds its condition holds or a limit is
//! reached. One tool per file.

pub mod cancel;
pub mod complete;
pub mod create;

use serde::Deserialize;
use serde_json::{Value, json};

/// Run one goal tool's call through the goal service.
async fn run(
    cx: crate::tool::ToolCx<'_>,
    op: GoalOp,
) -> Result<crate::tool::CallOutcome, crate::RuntimeError> {
    let goals = super::service::GoalCx {
        store: &cx.rt.store,
        cluster: &cx.rt.settings.cluster,
        session: cx.session,
    };
    goals.run(op).await
}

/// A goal tool's call, parsed, for the goal service (`super::super::service`).
pub(crate) enum GoalOp {
    Create(create::Create),
    Complete(String),
    Cancel(String),
}

/// Most turns a goal may be given.
pub const MAX_TURNS_LIMIT: i64 = 200;

fn goal_id_parameters() -> Value {
    json!({"type": "object", "properties": {"goal_id": {"type": "string", "minLength": 1}},
        "required": ["goal_id"], "additionalProperties": false})
}

/// `{goal_id}` of completeGoal and cancelGoal.
#[derive(Debug, Deserialize)]
pub struct GoalRef {
    pub goal_id: String,
}
