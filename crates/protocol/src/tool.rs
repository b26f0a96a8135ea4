//! Tool resources (R-TR-1..5): reusable HTTP, MCP and client tools.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, ToSchema,
)]
#[serde(rename_all = "camelCase")]
pub enum ToolKind {
    Http,
    Mcp,
    Client,
}

impl ToolKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Http => "http",
            Self::Mcp => "mcp",
            Self::Client => "client",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Tool {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(read_only)]
    pub id: Option<String>,
    /// The function name the model calls: letters, digits, `_`, `-`, at most
    /// 64, and not the name of a platform built-in (422 `reserved_name`).
    #[schema(pattern = r"^[A-Za-z0-9_-]{1,64}$")]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schema(max_length = 4096)]
    pub description: String,
    #[serde(rename = "type")]
    pub kind: ToolKind,
    /// JSON Schema (an object schema) of the tool's parameters. For `mcp`
    /// tools it is taken from the server's discovery and may be omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub parameters: Option<Value>,
    #[serde(default)]
    pub template_inputs: Vec<TemplateInput>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<HttpToolConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp: Option<McpToolConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<ClientToolConfig>,
    /// What the tool answers in a test-mode session (R-BX-10): any JSON value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mock_response: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(read_only)]
    pub created_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(read_only)]
    pub updated_at: Option<String>,
    /// What the save that answered this noticed (absent when nothing;
    /// never stored, so reads do not carry it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(read_only)]
    pub warnings: Vec<crate::SaveWarning>,
}

/// A per-use placeholder `{{input__name}}` that each binding fills.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TemplateInput {
    #[schema(pattern = r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    #[serde(default = "yes")]
    pub required: bool,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum HttpMethod {
    Get,
    Post,
    Put,
    Patch,
    Delete,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HttpToolConfig {
    pub method: HttpMethod,
    /// May contain `{{param}}` and `{{input__name}}` placeholders.
    pub url: String,
    /// Values may contain `{{param}}`, `{{input__name}}` and `{{secret__name}}`.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// The request body structure; strings in it may contain `{{param}}` and
    /// `{{input__name}}` placeholders.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<Value>,
    #[serde(default = "default_http_timeout_ms")]
    #[schema(minimum = 1, maximum = 120000)]
    pub timeout_ms: u64,
}

pub fn default_http_timeout_ms() -> u64 {
    10_000
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct McpToolConfig {
    #[schema(min_length = 1, max_length = 128, pattern = r"\S")]
    pub server_id: String,
    #[schema(min_length = 1, max_length = 256, pattern = r"\S")]
    pub remote_tool_name: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClientToolConfig {
    pub function_name: String,
    #[serde(default = "yes")]
    pub wait_for_response: bool,
    #[serde(default = "default_client_timeout_ms")]
    #[schema(minimum = 1, maximum = 600000)]
    pub timeout_ms: u64,
}

pub fn default_client_timeout_ms() -> u64 {
    30_000
}

/// `POST /v1/tools/{id}/test`: run an HTTP or MCP tool once with sample
/// arguments, as a session would (the outbound guard, the secrets it
/// names, their values scrubbed from the answer).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolTestRequest {
    /// The call's arguments, checked against the tool's `parameters`.
    #[serde(default)]
    #[schema(value_type = Object)]
    pub arguments: serde_json::Map<String, Value>,
    /// Values of the tool's `templateInputs` (a binding gives them in a
    /// session); strings, or values written as JSON.
    #[serde(default)]
    #[schema(value_type = Object)]
    pub inputs: serde_json::Map<String, Value>,
}

/// What a tool test gave: the result, or the error a session's model
/// would have read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolTestResult {
    pub ok: bool,
    /// The tool's result (when `ok`): any JSON value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// Why the call failed (when not `ok`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ToolTestError>,
    /// Images the tool returned (an MCP tool's), counted, not sent.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub images: usize,
    pub duration_ms: u64,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// A failed tool test: `tool_error` (the tool answered an error or could
/// not be reached, e.g. refused by the outbound guard).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ToolTestError {
    pub code: String,
    pub message: String,
}
