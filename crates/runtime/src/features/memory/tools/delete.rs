//! `deleteMemory {memory_id}`.

use super::MemoryOp;
use crate::builtins::ArgumentError;
use crate::tool::parsed;
use rtc_core::llm::ToolSpec;
use serde::Deserialize;
use serde_json::json;

pub const NAME: &str = "deleteMemory";

const DESCRIPTION: &str =
    "Forget a memory: when the user asks you to, or when it is wrong or no longer true.";

pub fn spec() -> ToolSpec {
    ToolSpec {
        name: NAME.to_owned(),
        description: DESCRIPTION.to_owned(),
        parameters: json!({"type": "object", "properties": {"memory_id": {"type": "string", "minLength": 1}},
            "required": ["memory_id"], "additionalProperties": false}),
    }
}

#[derive(Debug, Deserialize)]
pub struct Delete {
    pub memory_id: String,
}

pub fn parse(arguments: &str) -> Result<Delete, ArgumentError> {
    crate::builtins::parse_arguments(&spec().parameters, arguments)
}

crate::builtins::built_in!(
    DeleteMemory,
    offered = |offer| super::offered(offer),
    run = |cx| async move {
        let op = MemoryOp::Delete(parsed!(parse(&cx.call.arguments)));
        let memory = crate::features::memory::service::MemoryCx {
            store: &cx.rt.store,
            session: cx.session,
        };
        memory.run(op).await
    }
);
