//! Realtime interfaces and the capability they declare for prompt tools
//! (R-RT-2).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

use crate::{BuiltInToolName, ToolKind};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RealtimeInterface {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[schema(min_length = 1, max_length = 200, pattern = r"\S")]
    pub name: String,
    #[serde(default)]
    pub provider: String,
    #[serde(default)]
    pub field_schema: FieldSchema,
    /// How sessions reach the provider; an interface without one cannot
    /// run sessions (`realtime_not_configured`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection: Option<RealtimeConnection>,
    /// Shipped with the platform (read-only).
    #[serde(default)]
    #[schema(read_only)]
    pub shipped: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(read_only)]
    pub created_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(read_only)]
    pub updated_at: Option<String>,
}

/// The wire protocol a provider speaks (design `realtime.md` §1–3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum RealtimeDialect {
    /// OpenAI Realtime GA: GA event names, flat tool declarations,
    /// `conversation.item.truncate`.
    Openai,
    /// DashScope Qwen Omni realtime: beta event names, nested tool
    /// declarations, no truncation.
    Qwen,
    /// StepFun realtime: beta event names, server VAD off unless asked.
    Stepfun,
}

impl RealtimeDialect {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Openai => "openai",
            Self::Qwen => "qwen",
            Self::Stepfun => "stepfun",
        }
    }

    /// The provider's PCM16 rates (input, output) when the interface
    /// names none: OpenAI 24/24 kHz, Qwen 16/24 kHz, StepFun 24/24 kHz.
    /// The PCM rates the provider takes and gives, in Hz: OpenAI GA PCM
    /// is 24 kHz only; DashScope takes 16 kHz and gives 24 kHz; StepFun's
    /// `pcm16` is 24 kHz. The server resamples the host's audio to them.
    pub fn supported_rates(self) -> (&'static [u32], &'static [u32]) {
        match self {
            Self::Openai | Self::Stepfun => (&[24_000], &[24_000]),
            Self::Qwen => (&[16_000], &[24_000]),
        }
    }

    pub fn default_rates(self) -> (u32, u32) {
        match self {
            Self::Qwen => (16_000, 24_000),
            Self::Openai | Self::Stepfun => (24_000, 24_000),
        }
    }
}

/// How a session of the interface reaches its provider.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RealtimeConnection {
    pub dialect: RealtimeDialect,
    /// `wss://…` (or `ws://` for a local provider); the model is added as
    /// the `model` query parameter.
    #[schema(min_length = 1, max_length = 2048)]
    pub url: String,
    #[schema(min_length = 1, max_length = 200)]
    pub model: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 100)]
    pub voice: Option<String>,
    /// The provider's input rate in Hz (PCM16 mono); the dialect's default
    /// when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 8000, maximum = 48000)]
    pub input_rate: Option<u32>,
    /// The provider's output rate in Hz; the dialect's default when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 8000, maximum = 48000)]
    pub output_rate: Option<u32>,
    /// Exactly one `{{secret__name}}` reference: the bearer token.
    #[schema(min_length = 1, max_length = 200)]
    pub api_key: String,
    #[serde(default)]
    pub turn_detection: TurnDetection,
    /// The model transcribing the user's audio (OpenAI, Qwen); absent for
    /// the dialect's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 200)]
    pub transcription_model: Option<String>,
}

impl RealtimeConnection {
    /// (input, output) rates in Hz.
    pub fn rates(&self) -> (u32, u32) {
        let (input, output) = self.dialect.default_rates();
        (
            self.input_rate.unwrap_or(input),
            self.output_rate.unwrap_or(output),
        )
    }
}

/// How the provider decides the user finished speaking.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum TurnDetection {
    /// The provider's voice activity detection (the default).
    #[serde(rename_all = "camelCase")]
    ServerVad {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schema(minimum = 0, maximum = 1)]
        threshold: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schema(minimum = 0, maximum = 5000)]
        prefix_padding_ms: Option<u32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schema(minimum = 100, maximum = 10000)]
        silence_duration_ms: Option<u32>,
    },
    /// The model judges the end of the turn (OpenAI; Qwen 3.5 models).
    SemanticVad {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        eagerness: Option<String>,
    },
    /// No detection: the host sends `audio.commit` when the user is done.
    None,
}

impl Default for TurnDetection {
    fn default() -> Self {
        Self::ServerVad {
            threshold: None,
            prefix_padding_ms: None,
            silence_duration_ms: None,
        }
    }
}

/// The interface's field schema; only `features` is interpreted, the rest is
/// kept as given.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FieldSchema {
    #[serde(default)]
    pub features: RealtimeFeatures,
    #[serde(flatten)]
    #[schema(value_type = Object)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RealtimeFeatures {
    #[serde(default)]
    pub realtime_prompt_tools: RealtimePromptTools,
    #[serde(flatten)]
    #[schema(value_type = Object)]
    pub extra: Map<String, Value>,
}

/// Which tool types and built-ins a prompt assistant may use with this interface.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RealtimePromptTools {
    #[serde(default)]
    pub tool_types: Vec<ToolKind>,
    #[serde(default)]
    pub built_in_tools: Vec<BuiltInToolName>,
}

/// One incompatible item of an assistant (R-RT-4).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompatibilityIssue {
    /// Path of the item, e.g. `toolBindings[1]` or `builtInTools.skipTurn`.
    pub path: String,
    pub code: String,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompatibilityReport {
    pub compatible: bool,
    pub issues: Vec<CompatibilityIssue>,
}

/// Optional body of the cleanup call: the paths the caller saw. When given,
/// cleanup refuses (409) if the current report differs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CleanupParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_paths: Option<Vec<String>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CleanupResponse {
    pub removed: Vec<CompatibilityIssue>,
    pub assistant: crate::Assistant,
}
