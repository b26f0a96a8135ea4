//! `cancelLoop {loop_id}`.

use crate::builtins::ArgumentError;
use rtc_core::llm::ToolSpec;

use super::LoopOp;
use super::LoopRef;
use crate::tool::parsed;

pub const NAME: &str = "cancelLoop";

const DESCRIPTION: &str = "Stop a loop for good.";

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

crate::builtins::built_in!(CancelLoop, loops, |cx| async move {
    let op = LoopOp::Cancel(parsed!(parse(&cx.call.arguments)).loop_id);
    super::run(cx, op).await
});
