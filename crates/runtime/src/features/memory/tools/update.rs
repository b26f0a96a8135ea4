//! `updateMemory {memory_id, content?, tags?}`.

use super::MemoryOp;
use crate::builtins::ArgumentError;
use crate::tool::parsed;
use rtc_core::llm::ToolSpec;
use serde::Deserialize;
use serde_json::json;

pub const NAME: &str = "updateMemory";

const DESCRIPTION: &str = "Correct or extend a memory you saved earlier (find its memory_id with searchMemory or listMemories). Give the new content, the new tags, or both.";

pub fn spec() -> ToolSpec {
    ToolSpec {
        name: NAME.to_owned(),
        description: DESCRIPTION.to_owned(),
        parameters: json!({"type": "object", "properties": {
                "memory_id": {"type": "string", "minLength": 1},
                "content": super::content_schema(), "tags": super::tags_schema()},
            "required": ["memory_id"], "additionalProperties": false}),
    }
}

#[derive(Debug, Deserialize)]
pub struct Update {
    pub memory_id: String,
    pub content: Option<String>,
    pub tags: Option<Vec<String>>,
}

pub fn parse(arguments: &str) -> Result<Update, ArgumentError> {
    let update: Update = crate::builtins::parse_arguments(&spec().parameters, arguments)?;
    if update.content.is_none() && update.tags.is_none() {
        return Err("give `content`, `tags` or both".into());
    }
    if let Some(c) = &update.content {
        super::check_content(c)?;
    }
    Ok(update)
}

crate::builtins::built_in!(
    UpdateMemory,
    offered = |offer| super::offered(offer),
    run = |cx| async move {
        let op = MemoryOp::Update(parsed!(parse(&cx.call.arguments)));
        let memory = crate::features::memory::service::MemoryCx {
            store: &cx.rt.store,
            session: cx.session,
        };
        memory.run(op).await
    }
);
