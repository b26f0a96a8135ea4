//! Platform built-in tools configured on an assistant (R-BI-1..5). They are
//! not tool resources and have no `toolId`.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::Expr;

/// The names of the platform built-in tools.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, ToSchema,
)]
#[serde(rename_all = "camelCase")]
pub enum BuiltInToolName {
    EndConversation,
    UpdateState,
    SkipTurn,
    RequestHumanHandoff,
}

impl BuiltInToolName {
    pub const ALL: [Self; 4] = [
        Self::EndConversation,
        Self::UpdateState,
        Self::SkipTurn,
        Self::RequestHumanHandoff,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::EndConversation => "endConversation",
            Self::UpdateState => "updateState",
            Self::SkipTurn => "skipTurn",
            Self::RequestHumanHandoff => "requestHumanHandoff",
        }
    }
}

/// Present key = enabled.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BuiltInTools {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_conversation: Option<EndConversationConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update_state: Option<UpdateStateConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skip_turn: Option<SkipTurnConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_human_handoff: Option<HumanHandoffConfig>,
}

impl BuiltInTools {
    /// The enabled built-ins, in a stable order.
    pub fn enabled(&self) -> Vec<BuiltInToolName> {
        let mut out = Vec::new();
        if self.end_conversation.is_some() {
            out.push(BuiltInToolName::EndConversation);
        }
        if self.update_state.is_some() {
            out.push(BuiltInToolName::UpdateState);
        }
        if self.skip_turn.is_some() {
            out.push(BuiltInToolName::SkipTurn);
        }
        if self.request_human_handoff.is_some() {
            out.push(BuiltInToolName::RequestHumanHandoff);
        }
        out
    }

    /// Disable one built-in.
    pub fn remove(&mut self, name: BuiltInToolName) {
        match name {
            BuiltInToolName::EndConversation => self.end_conversation = None,
            BuiltInToolName::UpdateState => self.update_state = None,
            BuiltInToolName::SkipTurn => self.skip_turn = None,
            BuiltInToolName::RequestHumanHandoff => self.request_human_handoff = None,
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub enum EndMessageType {
    /// End silently.
    None,
    /// Say `customMessage`, then end.
    Custom,
    /// The model says goodbye.
    #[default]
    Generated,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EndConversationConfig {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    #[serde(default)]
    pub message_type: EndMessageType,
    #[serde(default)]
    pub custom_message: String,
    /// Adds a required `reason` argument and records it on the session.
    #[serde(default)]
    pub capture_reason: bool,
    /// `false`: user input during the goodbye does not cancel the end.
    #[serde(default = "yes")]
    pub allow_end_interruption: bool,
}

fn yes() -> bool {
    true
}

/// `{description, rules: [{variable, expression}]}`; rules apply in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpdateStateConfig {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    pub rules: Vec<UpdateStateRule>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpdateStateRule {
    /// A declared dynamic variable.
    pub variable: String,
    /// An expression tree (R-EX-5).
    #[schema(value_type = Object)]
    pub expression: Expr,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SkipTurnConfig {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HumanHandoffConfig {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// What the model says while handing off (optional).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}
