//! `stopSubAgent {sub_session_id}`.

use crate::builtins::ArgumentError;
use rtc_core::llm::ToolSpec;

use super::SubAgentOp;
use super::{SubSessionRef, sub_session_parameters};
use crate::features::sub_agents::SubAgentService;
use crate::tool::parsed;

pub const NAME: &str = "stopSubAgent";

const DESCRIPTION: &str = "Stop one of your sub-agents and every sub-agent it started, leaves first. Its work in progress is abandoned and no report will come. Returns stopped_sessions [{sub_session_id, title}] and total_stopped. Use it when a sub-agent is no longer needed or went the wrong way.";

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

crate::builtins::built_in!(StopSubAgent, sub_agents, |cx| async move {
    let op = SubAgentOp::Stop(parsed!(parse(&cx.call.arguments)).sub_session_id);
    SubAgentService::of(cx.rt)
        .sub_agent_tool(cx.session, op, &cx.call.id)
        .await
});
