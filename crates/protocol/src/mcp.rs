//! MCP server resources (R-TR-2) and the tools discovered on them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct McpServer {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(read_only)]
    pub id: Option<String>,
    #[schema(min_length = 1, max_length = 200, pattern = r"\S")]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schema(max_length = 4096)]
    pub description: String,
    pub transport: McpTransport,
    /// Longest wait for one tool call of this server, in seconds (1 to
    /// 600); the server's default (`60`) when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1, maximum = 600)]
    pub timeout_seconds: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(read_only)]
    pub created_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(read_only)]
    pub updated_at: Option<String>,
}

/// How to reach the server. `stdio` starts a local process and may only be
/// registered with the admin token (R-SEC-4).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "camelCase", deny_unknown_fields)]
pub enum McpTransport {
    Stdio {
        #[schema(min_length = 1, max_length = 1024, pattern = r"\S")]
        command: String,
        #[serde(default)]
        #[schema(max_items = 64)]
        args: Vec<String>,
        #[serde(default)]
        env: BTreeMap<String, String>,
    },
    StreamableHttp {
        url: String,
        /// Header values may reference secrets as `{{secret__name}}`.
        #[serde(default)]
        headers: BTreeMap<String, String>,
    },
}

/// A tool offered by an MCP server, as discovered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpToolInfo {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[schema(value_type = Object)]
    pub input_schema: Value,
    /// The schema of the tool's structured results, if it declares one:
    /// a structured result that does not match is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub output_schema: Option<Value>,
}
