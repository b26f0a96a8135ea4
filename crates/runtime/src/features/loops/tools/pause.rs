//! `pauseLoop {loop_id}`.

use crate::builtins::ArgumentError;
use rtc_core::llm::ToolSpec;

use super::LoopOp;
use super::LoopRef;
use crate::tool::parsed;

pub const NAME: &str = "pauseLoop";

const DESCRIPTION: &str = "Pause a loop: no ticks until resumeLoop.";

pub fn spec() -> ToolSpec {
    ToolSpec {
        name: NAME.to_owned(),
        description: DESCRIPTION.to_owned(),
        parameters: super::loop_id_parameters(),
    }
}

pub fn parse(arguments: &str) -> Result<LoopRef, ArgumentError> {
    super::parse_ref(arguments)
}

crate::builtins::built_in!(PauseLoop, loops, |cx| async move {
    let op = LoopOp::Pause(parsed!(parse(&cx.call.arguments)).loop_id);
    super::run(cx, op).await
});
