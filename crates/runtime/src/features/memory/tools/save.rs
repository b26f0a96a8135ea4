//! `saveMemory {content, tags?}`.

use super::MemoryOp;
use crate::builtins::ArgumentError;
use crate::tool::parsed;
use rtc_core::llm::ToolSpec;
use serde::Deserialize;
use serde_json::json;

pub const NAME: &str = "saveMemory";

const DESCRIPTION: &str = "Remember a fact about the user for future conversations (preferences, circumstances, decisions they told you). Save one fact per call, in a sentence that stands on its own. Do not save secrets such as passwords or card numbers. Search first (searchMemory) to update an existing memory instead of saving a duplicate.";

pub fn spec() -> ToolSpec {
    ToolSpec {
        name: NAME.to_owned(),
        description: DESCRIPTION.to_owned(),
        parameters: json!({"type": "object", "properties": {"content": super::content_schema(), "tags": super::tags_schema()},
            "required": ["content"], "additionalProperties": false}),
    }
}

#[derive(Debug, Deserialize)]
pub struct Save {
    pub content: String,
    #[serde(default)]
    pub tags: Vec<String>,
}

pub fn parse(arguments: &str) -> Result<Save, ArgumentError> {
    let save: Save = crate::builtins::parse_arguments(&spec().parameters, arguments)?;
    super::check_content(&save.content)?;
    Ok(save)
}

crate::builtins::built_in!(
    SaveMemory,
    offered = |offer| super::offered(offer),
    run = |cx| async move {
        let op = MemoryOp::Save(parsed!(parse(&cx.call.arguments)));
        let memory = crate::features::memory::service::MemoryCx {
            store: &cx.rt.store,
            session: cx.session,
        };
        memory.run(op).await
    }
);
