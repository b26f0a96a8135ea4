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
