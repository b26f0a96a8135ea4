//! `delegate_task {title, instruction}`: hand a long task to the
//! assistant's task backend; answers at once with the task's id.

use crate::builtins::ArgumentError;
use rtc_core::llm::ToolSpec;
use serde::Deserialize;
use serde_json::json;

use crate::features::tasks::TaskService;
use crate::tool::parsed;

pub const NAME: &str = "delegate_task";

const DESCRIPTION: &str = "Hand a long task (research, coding, anything that takes a while) to your task backend, which works on it in the background. Answers at once with {task_id, status: \"running\"}; keep talking with the user meanwhile. When the task ends, its result arrives as a message starting with [Task report]. Give a short title and a complete, self-contained instruction: the backend does not see this conversation.";

/// Longest title, in characters.
pub const MAX_TITLE: usize = 200;
/// Longest instruction, in characters.
pub const MAX_INSTRUCTION: usize = 100_000;

#[derive(Debug, Deserialize)]
pub struct Delegate {
    pub title: String,
    pub instruction: String,
}

pub fn spec() -> ToolSpec {
    ToolSpec {
        name: NAME.to_owned(),
        description: DESCRIPTION.to_owned(),
        parameters: json!({
            "type": "object",
            "properties": {
                "title": {"type": "string", "minLength": 1, "maxLength": MAX_TITLE,
                    "description": "A few words naming the task."},
                "instruction": {"type": "string", "minLength": 1, "maxLength": MAX_INSTRUCTION,
                    "description": "Everything the backend needs to do the task."}
            },
            "required": ["title", "instruction"],
            "additionalProperties": false
        }),
    }
}

pub fn parse(arguments: &str) -> Result<Delegate, ArgumentError> {
    let args: Delegate = crate::builtins::parse_arguments(&spec().parameters, arguments)?;
    if args.title.trim().is_empty() || args.instruction.trim().is_empty() {
        return Err("title and instruction must not be blank".into());
    }
    Ok(args)
}

crate::builtins::built_in!(
    DelegateTask,
    offered = |offer| super::offered(offer),
    run = |cx| async move {
        let args = parsed!(parse(&cx.call.arguments));
        TaskService::of(cx.rt)
            .delegate_task(cx.session, cx.assistant, args)
            .await
    }
);
