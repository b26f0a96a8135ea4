//! `subAgent {title, instruction, mode = "async"}`.

use super::SubAgentOp;
use crate::builtins::ArgumentError;
use crate::features::sub_agents::SubAgentService;
use crate::tool::parsed;
use rtc_core::llm::ToolSpec;
use serde::Deserialize;
use serde_json::json;

pub const NAME: &str = "subAgent";

const DESCRIPTION: &str = "Start a sub-agent: a new session that works on one self-contained task in its own context and reports back. It starts from a blank context and knows nothing of this conversation, so brief it like a colleague who just walked in.
- title: a short description of the task, 3-5 words (\"OAuth setup\", \"Fix login button\"); it names the sub-agent in lists and to the user.
- instruction: the whole task with all the context it needs: names, paths, facts the user gave, what was already tried or ruled out, and what its final report must contain. Never write vague instructions like \"handle this task\".
- mode: \"async\" (default) returns the sub-agent's id at once and you keep working; its final report arrives later as a message starting with [Sub-agent report]. \"sync\" pauses you until the sub-agent has finished and gives you its report as this call's result; use it only when you cannot go on without the result.
Use listSubAgent, getSubAgentMessage, sendMessageToSubAgent and stopSubAgent to follow and steer sub-agents.";

pub fn spec() -> ToolSpec {
    ToolSpec {
        name: NAME.to_owned(),
        description: DESCRIPTION.to_owned(),
        parameters: json!({"type": "object", "properties": {
                "title": {"type": "string", "minLength": 1, "maxLength": 80},
                "instruction": {"type": "string", "minLength": 1, "maxLength": 20000},
                "mode": {"type": "string", "enum": ["async", "sync"], "default": "async"}},
            "required": ["title", "instruction"], "additionalProperties": false}),
    }
}

/// How the parent waits for the sub-agent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    #[default]
    Async,
    Sync,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Async => "async",
            Self::Sync => "sync",
        }
    }
}

#[derive(Debug, Deserialize)]
pub struct SubAgent {
    pub title: String,
    pub instruction: String,
    #[serde(default)]
    pub mode: Mode,
}

pub fn parse(arguments: &str) -> Result<SubAgent, ArgumentError> {
    let mut s: SubAgent = crate::builtins::parse_arguments(&spec().parameters, arguments)?;
    s.title = s.title.trim().to_owned();
    if s.title.is_empty() {
        return Err("`title` must name the task in 3-5 words".into());
    }
    if s.title.split_whitespace().count() > 12 {
        return Err("`title` must be short: 3-5 words".into());
    }
    if s.instruction.trim().chars().count() < 10 {
        return Err("`instruction` must describe the whole task with its context; the sub-agent knows nothing of this conversation".into());
    }
    Ok(s)
}

crate::builtins::built_in!(StartSubAgent, sub_agents, |cx| async move {
    let op = SubAgentOp::Start(parsed!(parse(&cx.call.arguments)));
    SubAgentService::of(cx.rt)
        .sub_agent_tool(cx.session, op, &cx.call.id)
        .await
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sub_agent_arguments() {
        let s = parse(r#"{"title": " OAuth setup ", "instruction": "Configure OAuth for app X using provider Y."}"#).unwrap();
        assert_eq!((s.title.as_str(), s.mode), ("OAuth setup", Mode::Async));
        let s = parse(r#"{"title": "t", "instruction": "A task described well.", "mode": "sync"}"#)
            .unwrap();
        assert_eq!(s.mode, Mode::Sync);
        assert!(
            parse(r#"{"title": "t", "instruction": "x", "mode": "later"}"#)
                .unwrap_err()
                .contains("mode")
        );
        assert!(
            parse(r#"{"title": "t", "instruction": "do it"}"#)
                .unwrap_err()
                .contains("instruction")
        );
        assert!(
            parse(r#"{"instruction": "A task described well."}"#)
                .unwrap_err()
                .contains("title")
        );
        assert!(
            parse(r#"{"title": "   ", "instruction": "A task described well."}"#)
                .unwrap_err()
                .contains("title")
        );
    }
}
