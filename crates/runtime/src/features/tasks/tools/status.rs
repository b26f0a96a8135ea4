//! `get_task_status {task_id}`: where one of this session's tasks is.

use crate::builtins::ArgumentError;
use rtc_core::llm::ToolSpec;

use super::{TaskRef, task_ref_parameters};
use crate::features::tasks::TaskService;
use crate::tool::parsed;

pub const NAME: &str = "get_task_status";

const DESCRIPTION: &str = "Check a task you delegated: answers {task_id, title, status: running|completed|failed|cancelled, result?, error?, detail?, started_at, finished_at?}. You do not need to poll: the result arrives by itself as a [Task report] message.";

pub fn spec() -> ToolSpec {
    ToolSpec {
        name: NAME.to_owned(),
        description: DESCRIPTION.to_owned(),
        parameters: task_ref_parameters(),
    }
}

pub fn parse(arguments: &str) -> Result<TaskRef, ArgumentError> {
    crate::builtins::parse_arguments(&spec().parameters, arguments)
}

crate::builtins::built_in!(
    GetTaskStatus,
    offered = |offer| super::offered(offer),
    run = |cx| async move {
        let args = parsed!(parse(&cx.call.arguments));
        TaskService::of(cx.rt)
            .task_status_tool(cx.session, &args.task_id)
            .await
    }
);
