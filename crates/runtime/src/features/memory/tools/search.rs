//! `searchMemory {query, limit?}`.

use super::MemoryOp;
use crate::builtins::ArgumentError;
use crate::tool::parsed;
use rtc_core::llm::ToolSpec;
use serde::Deserialize;
use serde_json::json;

pub const NAME: &str = "searchMemory";

const DESCRIPTION: &str = "Search what you remember about the user, most relevant first. Use a few distinctive words (\"dog name\", \"coffee preference\"); memories matching more of them rank higher.";

pub fn spec() -> ToolSpec {
    ToolSpec {
        name: NAME.to_owned(),
        description: DESCRIPTION.to_owned(),
        parameters: json!({"type": "object", "properties": {
                "query": {"type": "string", "minLength": 1, "maxLength": 500},
                "limit": {"type": "integer", "minimum": 1, "maximum": 20, "default": 5}},
            "required": ["query"], "additionalProperties": false}),
    }
}

#[derive(Debug, Deserialize)]
pub struct Search {
    pub query: String,
    #[serde(default = "default_limit")]
    pub limit: i64,
}

fn default_limit() -> i64 {
    5
}

pub fn parse(arguments: &str) -> Result<Search, ArgumentError> {
    crate::builtins::parse_arguments(&spec().parameters, arguments)
}

crate::builtins::built_in!(
    SearchMemory,
    offered = |offer| super::offered(offer),
    run = |cx| async move {
        let op = MemoryOp::Search(parsed!(parse(&cx.call.arguments)));
        let memory = crate::features::memory::service::MemoryCx {
            store: &cx.rt.store,
            session: cx.session,
        };
        memory.run(op).await
    }
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_arguments() {
        assert_eq!(parse(r#"{"query": "dog"}"#).unwrap().limit, 5);
        assert!(
            parse(r#"{"query": "dog", "limit": 50}"#)
                .unwrap_err()
                .contains("limit")
        );
        assert!(
            super::super::save::parse(r#"{"content": "  "}"#)
                .unwrap_err()
                .contains("blank")
        );
        assert!(
            super::super::save::parse(
                r#"{"content": "x", "tags": ["a","b","c","d","e","f","g","h","i","j","k"]}"#
            )
            .is_err()
        );
        assert!(
            super::super::update::parse(r#"{"memory_id": "mem_1"}"#)
                .unwrap_err()
                .contains("content")
        );
        assert_eq!(super::super::list::parse("{}").unwrap().limit, 20);
        assert!(
            super::super::delete::parse("{}")
                .unwrap_err()
                .contains("memory_id")
        );
    }
}
