//! Task backends (R-TK, design `task-backends.md`): the resource a prompt
//! pipeline assistant hands long tasks to (the built-in `reasoner`, or an
//! `opencode` server), and the tasks themselves as the API shows them. A
//! task backend is not a tool resource.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::{LlmConfig, ToolBinding};

/// Which kind of backend runs the tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub enum TaskBackendType {
    /// A background agent of the platform with its own model and the
    /// HTTP/MCP tools bound to the backend.
    Reasoner,
    /// An OpenCode server driven over its HTTP API.
    Opencode,
}

impl TaskBackendType {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Reasoner => "reasoner",
            Self::Opencode => "opencode",
        }
    }

    /// The type [`Self::as_str`] names.
    pub fn parse(name: &str) -> Option<Self> {
        [Self::Reasoner, Self::Opencode]
            .into_iter()
            .find(|t| t.as_str() == name)
    }
}

/// A task backend resource (`/v1/task-backends`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TaskBackend {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(read_only)]
    pub id: Option<String>,
    #[schema(min_length = 1, max_length = 200, pattern = r"\S")]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schema(max_length = 4096)]
    pub description: String,
    #[serde(rename = "type")]
    pub backend_type: TaskBackendType,
    /// Required when `type` is `reasoner`, refused otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoner: Option<ReasonerSettings>,
    /// Required when `type` is `opencode`, refused otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opencode: Option<OpencodeSettings>,
    /// A task's overall time limit, 1 to 86,400 s (default 900).
    #[serde(default = "default_timeout")]
    #[schema(minimum = 1, maximum = 86400, default = 900)]
    pub timeout_seconds: u32,
    /// Most tasks of this backend running at once in the workspace, 1 to 64
    /// (default 4).
    #[serde(default = "default_concurrency")]
    #[schema(minimum = 1, maximum = 64, default = 4)]
    pub max_concurrent_tasks: u32,
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

fn default_timeout() -> u32 {
    900
}

fn default_concurrency() -> u32 {
    4
}

fn default_max_steps() -> u32 {
    40
}

/// The built-in reasoner: a background agent with its own model and
/// prompt that may use only the HTTP/MCP tools bound here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReasonerSettings {
    /// Absent fields take the delegating assistant's.
    #[serde(default)]
    pub llm: LlmConfig,
    #[serde(default)]
    #[schema(max_length = 200000)]
    pub system_prompt: String,
    /// Most model calls of one task, 1 to 200 (default 40).
    #[serde(default = "default_max_steps")]
    #[schema(minimum = 1, maximum = 200, default = 40)]
    pub max_steps: u32,
    /// HTTP and MCP tools only; `variable` sources read the delegating
    /// session's variables when the task is delegated; no
    /// `resultAssignments`.
    #[serde(default)]
    pub tool_bindings: Vec<ToolBinding>,
}

/// An OpenCode server: one the operator runs (`baseUrl`, `password`) or one
/// the platform starts and supervises (`command`, admin token only).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OpencodeSettings {
    /// An operator-run server, e.g. `http://127.0.0.1:4096`; exactly one of
    /// `baseUrl` and `command`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 2048)]
    pub base_url: Option<String>,
    /// The server's password as a `{{secret__name}}` reference (HTTP Basic,
    /// user `opencode`); only with `baseUrl`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 200)]
    pub password: Option<String>,
    /// The `opencode` executable the platform starts (`opencode serve` on a
    /// loopback port with its own HOME and a random password).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(min_length = 1, max_length = 1024, pattern = r"\S")]
    pub command: Option<String>,
    /// The OpenCode configuration of a started server (passed as
    /// `OPENCODE_CONFIG_CONTENT`); string values may reference secrets as
    /// `{{secret__name}}`. Only with `command`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Object)]
    pub config: Option<Value>,
    /// The model OpenCode runs the task with.
    pub model: OpencodeModel,
    /// The project directory on the OpenCode server (`?directory=`), an
    /// absolute path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 1024)]
    pub directory: Option<String>,
    /// The OpenCode agent (e.g. `build`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 200)]
    pub agent: Option<String>,
}

/// A model as OpenCode names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OpencodeModel {
    #[serde(rename = "providerID")]
    #[schema(min_length = 1, max_length = 200, pattern = r"\S")]
    pub provider_id: String,
    #[serde(rename = "modelID")]
    #[schema(min_length = 1, max_length = 200, pattern = r"\S")]
    pub model_id: String,
}

/// Where a task is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub enum TaskStatus {
    Running,
    Completed,
    Failed,
    Cancelled,
}

impl TaskStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [
            Self::Running,
            Self::Completed,
            Self::Failed,
            Self::Cancelled,
        ]
        .into_iter()
        .find(|k| k.as_str() == s)
    }
}

/// A delegated task (`GET /v1/sessions/{id}/tasks`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    pub id: String,
    pub session_id: String,
    pub backend_id: String,
    pub backend_type: TaskBackendType,
    pub title: String,
    pub instruction: String,
    pub status: TaskStatus,
    /// The backend's final answer (completed tasks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    /// Why the task failed, or how it was cancelled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The latest progress note of a running task (a reasoner's step, an
    /// OpenCode server retrying its model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The OpenCode session id of an `opencode` task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_id: Option<String>,
    /// Model calls a reasoner task made so far.
    pub steps: u32,
    pub started_at: String,
    pub updated_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
    /// A reasoner task's transcript (`GET …/tasks/{taskId}` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript: Option<Vec<TaskMessage>>,
}

/// One message of a reasoner's transcript.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskMessage {
    /// `system`, `user`, `assistant` or `tool`.
    pub role: String,
    #[serde(default)]
    pub content: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<TaskToolCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// The tool a `tool` message answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// A tool call of a reasoner's model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskToolCall {
    pub id: String,
    pub name: String,
    /// The arguments as the model wrote them (JSON text).
    pub arguments: String,
}
