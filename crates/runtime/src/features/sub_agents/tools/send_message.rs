//! `sendMessageToSubAgent {sub_session_id, message}`.

use crate::builtins::ArgumentError;
use rtc_core::llm::ToolSpec;
use serde::Deserialize;
use serde_json::json;

use super::SubAgentOp;
use super::sub_session_id_property;
use crate::features::sub_agents::SubAgentService;
use crate::tool::parsed;

pub const NAME: &str = "sendMessageToSubAgent";

const DESCRIPTION: &str = "Send a message to one of your async sub-agents: extra instructions, context it lacks, an answer to its question, or a change of direction. It reads the message when its current step ends (right away if it is idle) and reports again when done.";

pub fn spec() -> ToolSpec {
    ToolSpec {
        name: NAME.to_owned(),
        description: DESCRIPTION.to_owned(),
        parameters: json!({"type": "object", "properties": {
                "sub_session_id": sub_session_id_property(),
                "message": {"type": "string", "minLength": 1, "maxLength": 20000}},
            "required": ["sub_session_id", "message"], "additionalProperties": false}),
    }
}

#[derive(Debug, Deserialize)]
pub struct SendMessage {
    pub sub_session_id: String,
    pub message: String,
}

pub fn parse(arguments: &str) -> Result<SendMessage, ArgumentError> {
    let m: SendMessage = crate::builtins::parse_arguments(&spec().parameters, arguments)?;
    if m.message.trim().is_empty() {
        return Err("`message` must not be blank".into());
    }
    Ok(m)
}

crate::builtins::built_in!(SendMessageToSubAgent, sub_agents, |cx| async move {
    let op = SubAgentOp::SendMessage(parsed!(parse(&cx.call.arguments)));
    SubAgentService::of(cx.rt)
        .sub_agent_tool(cx.session, op, &cx.call.id)
        .await
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn send_and_reference_arguments() {
        let m = parse(r#"{"sub_session_id": "sess_1", "message": "use v2"}"#).unwrap();
        assert_eq!(m.message, "use v2");
        assert!(
            parse(r#"{"sub_session_id": "sess_1", "message": "  "}"#)
                .unwrap_err()
                .contains("message")
        );
        assert!(
            parse(r#"{"message": "x"}"#)
                .unwrap_err()
                .contains("sub_session_id")
        );
        assert!(
            super::super::stop::parse("{}")
                .unwrap_err()
                .contains("sub_session_id")
        );
        assert_eq!(
            super::super::get_message::parse(r#"{"sub_session_id": "s"}"#)
                .unwrap()
                .sub_session_id,
            "s"
        );
        assert!(super::super::list::parse(r#"{"x": 1}"#).is_err());
        assert!(super::super::list::parse("").is_ok());
    }
}
