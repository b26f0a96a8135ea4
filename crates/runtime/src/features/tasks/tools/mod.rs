//! The task tools (R-TK-2): offered by the platform when the assistant
//! names a task backend, never configured by the operator. They run
//! through the task service (`crate::features::tasks`).

pub mod cancel;
pub mod delegate;
pub mod status;

use rtc_protocol::RunMode;
use serde::Deserialize;
use serde_json::{Value, json};

/// Whether a session of this assistant has the task tools: a pipeline
/// assistant with a task backend.
pub(crate) fn offered(offer: &crate::tool::Offer<'_>) -> bool {
    offer.assistant.task_backend_id.is_some() && offer.assistant.run_mode == RunMode::Pipeline
}

/// The arguments of `get_task_status` and `cancel_task`.
#[derive(Debug, Deserialize)]
pub struct TaskRef {
    pub task_id: String,
}

pub(crate) fn task_ref_parameters() -> Value {
    json!({
        "type": "object",
        "properties": {"task_id": {"type": "string", "minLength": 1, "maxLength": 200,
            "description": "The id delegate_task answered."}},
        "required": ["task_id"],
        "additionalProperties": false
    })
}
