//! `listMemories {limit?, offset?}`.

use super::MemoryOp;
use crate::builtins::ArgumentError;
use crate::tool::parsed;
use rtc_core::llm::ToolSpec;
use serde::Deserialize;
use serde_json::json;

pub const NAME: &str = "listMemories";

const DESCRIPTION: &str = "List what you remember about the user, newest first (20 at a time by default; use offset for more). Prefer searchMemory when you look for something specific.";

pub fn spec() -> ToolSpec {
    ToolSpec {
        name: NAME.to_owned(),
        description: DESCRIPTION.to_owned(),
        parameters: json!({"type": "object", "properties": {
                "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20},
                "offset": {"type": "integer", "minimum": 0, "default": 0}},
            "additionalProperties": false}),
    }
}

#[derive(Debug, Deserialize)]
pub struct List {
    #[serde(default = "default_limit")]
    pub limit: i64,
    #[serde(default)]
    pub offset: i64,
}

fn default_limit() -> i64 {
    20
}

pub fn parse(arguments: &str) -> Result<List, ArgumentError> {
    crate::builtins::parse_arguments(&spec().parameters, arguments)
}

crate::builtins::built_in!(
    ListMemories,
    offered = |offer| super::offered(offer),
    run = |cx| async move {
        let op = MemoryOp::List(parsed!(parse(&cx.call.arguments)));
        let memory = crate::features::memory::service::MemoryCx {
            store: &cx.rt.store,
            session: cx.session,
        };
        memory.run(op).await
    }
);
