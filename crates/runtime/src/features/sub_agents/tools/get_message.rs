//! `getSubAgentMessage {sub_session_id}`.

use crate::builtins::ArgumentError;
use rtc_core::llm::ToolSpec;

use super::SubAgentOp;
use super::{SubSessionRef, sub_session_parameters};
use crate::features::sub_agents::SubAgentService;
use crate::tool::parsed;

pub const NAME: &str = "getSubAgentMessage";

const DESCRIPTION: &str = "Read the latest message of one of your sub-agents, to check its progress or its last output. Returns sub_session_id, sub_session_title, sub_session_status, message_id, role, content and created_at (message_id, role and created_at are null when it has no message yet). The sub-agent must be below you in the session tree; you cannot query yourself.";

pub fn spec() -> ToolSpec {
    ToolSpec {
        name: NAME.to_owned(),
        description: DESCRIPTION.to_owned(),
        parameters: sub_session_parameters(),
    }
}

pub fn parse(arguments: &str) -> Result<SubSessionRef, ArgumentError> {
    crate::builtins::parse_arguments(&spec().parameters, arguments)
}

crate::builtins::built_in!(GetSubAgentMessage, sub_agents, |cx| async move {
    let op = SubAgentOp::GetMessage(parsed!(parse(&cx.call.arguments)).sub_session_id);
    SubAgentService::of(cx.rt)
        .sub_agent_tool(cx.session, op, &cx.call.id)
        .await
});
