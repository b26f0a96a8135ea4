//! `listSubAgent {}`.

use super::SubAgentOp;
use crate::builtins::ArgumentError;
use crate::features::sub_agents::SubAgentService;
use crate::tool::parsed;
use rtc_core::llm::ToolSpec;
use serde_json::json;

pub const NAME: &str = "listSubAgent";

const DESCRIPTION: &str = "List the active sub-agents below you in the session tree (ended and stopped ones are left out). Each entry has sub_session_id, title, status, created_at and updated_at (RFC 3339), plus running: true while it is working and false once it has reported and waits for a message. Use it to find the id for getSubAgentMessage, sendMessageToSubAgent or stopSubAgent.";

pub fn spec() -> ToolSpec {
    ToolSpec {
        name: NAME.to_owned(),
        description: DESCRIPTION.to_owned(),
        parameters: json!({"type": "object", "properties": {}, "additionalProperties": false}),
    }
}

/// listSubAgent takes no arguments; anything else is named back.
pub fn parse(arguments: &str) -> Result<(), ArgumentError> {
    crate::builtins::parse_arguments::<serde_json::Value>(&spec().parameters, arguments).map(|_| ())
}

crate::builtins::built_in!(ListSubAgent, sub_agents, |cx| async move {
    let op = {
        parsed!(parse(&cx.call.arguments));
        SubAgentOp::List
    };
    SubAgentService::of(cx.rt)
        .sub_agent_tool(cx.session, op, &cx.call.id)
        .await
});
