//! Prompt assistants (R-API-4): model, prompt, variables, built-ins, bindings.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::{BuiltInTools, ToolBinding, ValueType};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub enum RunMode {
    #[default]
    Pipeline,
    Realtime,
}

impl RunMode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pipeline => "pipeline",
            Self::Realtime => "realtime",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Assistant {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(read_only)]
    pub id: Option<String>,
    #[schema(min_length = 1, max_length = 200, pattern = r"\S")]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schema(max_length = 4096)]
    pub description: String,
    #[serde(default)]
    pub run_mode: RunMode,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub realtime_interface_id: Option<String>,
    /// A pipeline assistant's voice (its speech interfaces and turn
    /// taking); absent: text only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speech: Option<crate::SpeechSettings>,
    #[serde(default)]
    pub llm: LlmConfig,
    #[serde(default)]
    #[schema(max_length = 200000)]
    pub system_prompt: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 200000)]
    pub first_message: Option<String>,
    #[serde(default)]
    pub dynamic_variables: Vec<DynamicVariable>,
    #[serde(default)]
    pub built_in_tools: BuiltInTools,
    #[serde(default)]
    pub tool_bindings: Vec<ToolBinding>,
    /// Deterministic calls before the first turn; `model` sources are rejected.
    #[serde(default)]
    pub startup_actions: Vec<ToolBinding>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_backend_id: Option<String>,
    #[serde(default)]
    pub features: Features,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(read_only)]
    pub created_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(read_only)]
    pub updated_at: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LlmConfig {
    /// A named provider from the server config; absent means the default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// Absent means the provider's default model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(min_length = 1, max_length = 200, pattern = r"\S")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0, maximum = 2)]
    pub temperature: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// 1 to 1,000,000.
    #[schema(minimum = 1, maximum = 1000000)]
    pub max_tokens: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DynamicVariable {
    #[schema(pattern = r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")]
    pub name: String,
    #[serde(rename = "type")]
    pub value_type: ValueType,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
}

/// The families of the model's built-in tools. The platform registers
/// them without configuration: every family is on unless the assistant
/// switches it off (`{"askUser": false}`); webSearch and webFetch are
/// offered only where the operator configured them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Features {
    #[serde(default = "on")]
    #[schema(default = true)]
    pub sub_agents: bool,
    #[serde(default = "on")]
    #[schema(default = true)]
    pub ask_user: bool,
    #[serde(default = "on")]
    #[schema(default = true)]
    pub todo: bool,
    #[serde(default = "on")]
    #[schema(default = true)]
    pub goals: bool,
    #[serde(default = "on")]
    #[schema(default = true)]
    pub loops: bool,
    #[serde(default = "on")]
    #[schema(default = true)]
    pub web_search: bool,
    #[serde(default = "on")]
    #[schema(default = true)]
    pub web_fetch: bool,
    #[serde(default = "on")]
    #[schema(default = true)]
    pub memory: bool,
}

fn on() -> bool {
    true
}

impl Default for Features {
    fn default() -> Self {
        Self {
            sub_agents: true,
            ask_user: true,
            todo: true,
            goals: true,
            loops: true,
            web_search: true,
            web_fetch: true,
            memory: true,
        }
    }
}
