//! `createLoop {prompt, interval_seconds, max_turns=10}`.

use super::Create;
use super::LoopOp;
use crate::builtins::ArgumentError;
use crate::tool::parsed;
use rtc_core::llm::ToolSpec;
use serde_json::json;

pub const NAME: &str = "createLoop";
/// Shortest interval.
pub const MIN_INTERVAL_SECONDS: i64 = 1;
/// Longest interval: a week.
pub const MAX_INTERVAL_SECONDS: i64 = 7 * 24 * 3600;
/// Most turns one loop may run.
pub const MAX_TURNS_LIMIT: i64 = 1_000;

const DESCRIPTION: &str = "Run a prompt again and again on a schedule: every interval_seconds the prompt becomes a new turn of this conversation (e.g. \"check the build status and report changes\"). A tick that comes while the previous turn still runs is skipped, not queued. The loop stops after max_turns turns (default 10), when it expires, or when you call completeLoop from inside one of its turns.";

pub fn spec() -> ToolSpec {
    ToolSpec {
        name: NAME.to_owned(),
        description: DESCRIPTION.to_owned(),
        parameters: json!({"type": "object", "properties": {
                "prompt": {"type": "string", "minLength": 1, "maxLength": 4000, "description": "What to do on every tick, written as an instruction to yourself."},
                "interval_seconds": {"type": "integer", "minimum": MIN_INTERVAL_SECONDS, "maximum": MAX_INTERVAL_SECONDS},
                "max_turns": {"type": "integer", "minimum": 1, "maximum": MAX_TURNS_LIMIT, "default": 10}},
            "required": ["prompt", "interval_seconds"], "additionalProperties": false}),
    }
}

pub fn parse(arguments: &str) -> Result<Create, ArgumentError> {
    let c: Create = crate::builtins::parse_arguments(&spec().parameters, arguments)?;
    if c.prompt.trim().is_empty() {
        return Err("`prompt` must say what to do on every tick".into());
    }
    Ok(c)
}

crate::builtins::built_in!(CreateLoop, loops, |cx| async move {
    let op = LoopOp::Create(parsed!(parse(&cx.call.arguments)));
    super::run(cx, op).await
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loop_arguments() {
        let c = parse(r#"{"prompt": "check", "interval_seconds": 60}"#).unwrap();
        assert_eq!(c.max_turns, 10);
        assert!(
            parse(r#"{"prompt": "check", "interval_seconds": 0}"#)
                .unwrap_err()
                .contains("interval_seconds")
        );
        assert!(
            parse(r#"{"prompt": "check"}"#)
                .unwrap_err()
                .contains("interval_seconds")
        );
        assert!(
            super::super::complete::parse("{}").is_ok(),
            "reason is optional"
        );
        assert!(
            super::super::pause::parse("{}")
                .unwrap_err()
                .contains("loop_id")
        );
        assert!(super::super::list::parse(r#"{"x": 1}"#).is_err());
    }
}
