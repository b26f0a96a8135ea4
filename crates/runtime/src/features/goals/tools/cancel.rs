//! `cancelGoal {goal_id}`.

use crate::builtins::ArgumentError;
use rtc_core::llm::ToolSpec;

use super::GoalOp;
use super::GoalRef;
use crate::tool::parsed;

pub const NAME: &str = "cancelGoal";

const DESCRIPTION: &str =
    "Give up a goal: when the user asks you to stop, or when it cannot be reached.";

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

crate::builtins::built_in!(CancelGoal, goals, |cx| async move {
    let op = GoalOp::Cancel(parsed!(parse(&cx.call.arguments)).goal_id);
    super::run(cx, op).await
});
