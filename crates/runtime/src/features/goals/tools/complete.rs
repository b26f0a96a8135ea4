//! `completeGoal {goal_id}`.

use crate::builtins::ArgumentError;
use rtc_core::llm::ToolSpec;

use super::GoalOp;
use super::GoalRef;
use crate::tool::parsed;

pub const NAME: &str = "completeGoal";

const DESCRIPTION: &str = "Mark your goal as reached when its condition clearly holds; the session then stops continuing on its own.";

pub fn spec() -> ToolSpec {
    ToolSpec {
        name: NAME.to_owned(),
        description: DESCRIPTION.to_owned(),
        parameters: super::goal_id_parameters(),
    }
}

pub fn parse(arguments: &str) -> Result<GoalRef, ArgumentError> {
    crate::builtins::parse_arguments(&super::goal_id_parameters(), arguments)
}

crate::builtins::built_in!(CompleteGoal, goals, |cx| async move {
    let op = GoalOp::Complete(parsed!(parse(&cx.call.arguments)).goal_id);
    super::run(cx, op).await
});
