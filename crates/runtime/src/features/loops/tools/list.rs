//! `listLoops {}`.

use super::LoopOp;
use crate::builtins::ArgumentError;
use crate::tool::parsed;
use rtc_core::llm::ToolSpec;
use serde_json::{Value, json};

pub const NAME: &str = "listLoops";

const DESCRIPTION: &str =
    "List this conversation's loops with their status, turns done, skipped ticks and next tick.";

pub fn spec() -> ToolSpec {
    ToolSpec {
        name: NAME.to_owned(),
        description: DESCRIPTION.to_owned(),
        parameters: json!({"type": "object", "properties": {}, "additionalProperties": false}),
    }
}

pub fn parse(arguments: &str) -> Result<Value, ArgumentError> {
    crate::builtins::parse_arguments(&spec().parameters, arguments)
}

crate::builtins::built_in!(ListLoops, loops, |cx| async move {
    let op = {
        parsed!(parse(&cx.call.arguments));
        LoopOp::List
    };
    super::run(cx, op).await
});
