//! `completeLoop {reason}`: called from inside one of the loop's own turns.

use super::LoopOp;
use crate::builtins::ArgumentError;
use crate::tool::parsed;
use rtc_core::llm::ToolSpec;
use serde::Deserialize;
use serde_json::json;

pub const NAME: &str = "completeLoop";

const DESCRIPTION: &str = "End the loop whose turn you are in, because its work is done (say why in reason). Only works inside a loop's turn.";

pub fn spec() -> ToolSpec {
    ToolSpec {
        name: NAME.to_owned(),
        description: DESCRIPTION.to_owned(),
        parameters: json!({"type": "object", "properties": {"reason": {"type": "string", "maxLength": 500}},
            "additionalProperties": false}),
    }
}

#[derive(Debug, Deserialize)]
pub struct Complete {
    #[serde(default)]
    pub reason: Option<String>,
}

pub fn parse(arguments: &str) -> Result<Complete, ArgumentError> {
    crate::builtins::parse_arguments(&spec().parameters, arguments)
}

crate::builtins::built_in!(CompleteLoop, loops, |cx| async move {
    let op = LoopOp::Complete(parsed!(parse(&cx.call.arguments)));
    super::run(cx, op).await
});
