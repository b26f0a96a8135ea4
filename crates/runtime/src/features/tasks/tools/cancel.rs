//! `cancel_task {task_id}`: stop one of this session's running tasks.

use crate::builtins::ArgumentError;
use rtc_core::llm::ToolSpec;

use super::{TaskRef, task_ref_parameters};
use crate::features::tasks::TaskService;
use crate::tool::parsed;

pub const NAME: &str = "cancel_task";

const DESCRIPTION: &str = "Cancel a running task you delegated (the backend stops working on it; no report will come). Cancelling a task that already ended changes nothing.";

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
    CancelTask,
    offered = |offer| super::offered(offer),
    run = |cx| async move {
        let args = parsed!(parse(&cx.call.arguments));
        TaskService::of(cx.rt)
            .cancel_task_tool(cx.session, &args.task_id)
            .await
    }
);
