//! Conversation tests (R-BX-10): test cases stored with an assistant or a
//! workflow, run in test mode, and the stored result of each run.
//!
//! A *matcher* (in `expect.toolCalls[].arguments`, `expect.variables` and
//! `expect.endReason`) is a JSON value compared for equality (numbers by
//! value), or an object with one operator: `{"$contains": s}` (substring,
//! or an element of an array), `{"$regex": r}`, `{"$exists": bool}`,
//! `{"$oneOf": [v, …]}`, `{"$gt": n}`, `{"$lt": n}`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

use crate::Message;

/// The result one tool call of a conversation test answers instead of the
/// tool's `mockResponse`: exactly one of `response` and `error`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScriptedResult {
    /// The tool's result (any JSON value).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub response: Option<Value>,
    /// An error the model reads instead of a result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A stored conversation test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConversationTest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(read_only)]
    pub id: Option<String>,
    #[schema(min_length = 1, max_length = 128)]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schema(max_length = 4096)]
    pub description: String,
    /// The session's end user (`system__user_id`, memories).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    /// Initial values of the assistant's declared dynamic variables.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schema(value_type = Object)]
    pub variables: BTreeMap<String, Value>,
    /// The user's messages, sent one after another, each once the
    /// previous turn has finished (an open askUser question is answered
    /// with the message).
    #[schema(min_items = 1, max_items = 50)]
    pub turns: Vec<String>,
    /// Per tool name, the results of its calls in order: the first call
    /// answers the first entry, and so on; calls beyond the list answer
    /// the tool's `mockResponse`. `webSearch` and `webFetch` may be
    /// scripted too (in test mode they answer an error otherwise).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tool_responses: BTreeMap<String, Vec<ScriptedResult>>,
    #[serde(default)]
    pub expect: Expectations,
    /// How long the whole run may take.
    #[serde(default = "default_test_timeout")]
    #[schema(minimum = 1, maximum = 600)]
    pub timeout_seconds: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(read_only)]
    pub created_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(read_only)]
    pub updated_at: Option<String>,
}

pub fn default_test_timeout() -> u32 {
    120
}

/// What a run must show.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Expectations {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCallExpectation>,
    /// Final values of variables, by name: a matcher each.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schema(value_type = Object)]
    pub variables: BTreeMap<String, Value>,
    /// A matcher of the session's end reason (`null` while it has not
    /// ended: `{"$exists": false}` expects no end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub end_reason: Option<Value>,
    /// Success in words, judged by the small model over the transcript.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 4096)]
    pub success_criterion: Option<String>,
}

/// Calls of one function: how many of them have matching arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolCallExpectation {
    /// The function name the model calls.
    pub name: String,
    /// A matcher per argument; a call counts when all match.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schema(value_type = Object)]
    pub arguments: BTreeMap<String, Value>,
    /// At least this many matching calls (default 1).
    #[serde(default = "one")]
    pub min_calls: u32,
    /// At most this many (`0` expects the tool not to be called).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_calls: Option<u32>,
}

fn one() -> u32 {
    1
}

/// A run's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub enum TestRunStatus {
    /// Every expectation held.
    Passed,
    /// The conversation ran and an expectation did not hold.
    Failed,
    /// The run could not finish (timeout, the model failed, a fault).
    Error,
}

impl TestRunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Passed => "passed",
            Self::Failed => "failed",
            Self::Error => "error",
        }
    }
}

/// What kind of expectation a result is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub enum ExpectationKind {
    ToolCall,
    Variable,
    EndReason,
    SuccessCriterion,
}

/// One expectation's outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExpectationResult {
    pub kind: ExpectationKind,
    /// The tool, the variable, `endReason` or the criterion.
    pub subject: String,
    pub passed: bool,
    /// What was expected and what was seen.
    pub detail: String,
}

/// A tool call the run saw.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ObservedToolCall {
    pub name: String,
    /// The arguments as the model wrote them (parsed; a string when they
    /// were not JSON).
    #[schema(value_type = Object)]
    pub arguments: Value,
    /// What the model was shown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub result: Option<Value>,
    pub is_error: bool,
}

/// The stored result of running one conversation test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TestRun {
    pub id: String,
    pub test_id: String,
    pub test_name: String,
    /// The assistant run (absent for a workflow's test).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assistant_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_id: Option<String>,
    pub status: TestRunStatus,
    /// Why a run is `error`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The test-mode session the run used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    pub expectations: Vec<ExpectationResult>,
    pub transcript: Vec<Message>,
    pub tool_calls: Vec<ObservedToolCall>,
    #[schema(value_type = Object)]
    pub variables: Map<String, Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_reason: Option<String>,
    /// How many of the test's turns were sent (fewer when the session
    /// ended early).
    pub turns_sent: usize,
    pub started_at: String,
    pub duration_ms: u64,
}

/// A run of some tests of an assistant or workflow (all of them, or one):
/// answered at once (202) with its id while it runs, and read at
/// `…/tests/runs/{runId}` until its `status` is no longer `running`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TestSuiteRun {
    pub id: String,
    pub status: TestSuiteStatus,
    /// How many tests the run has.
    pub total: usize,
    pub passed: usize,
    pub failed: usize,
    /// Runs that could not finish.
    pub errors: usize,
    /// The finished runs, in the tests' order.
    pub runs: Vec<TestRun>,
    pub started_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
}

impl TestSuiteRun {
    /// Count the finished runs again.
    pub fn recount(&mut self) {
        let count = |s: TestRunStatus| self.runs.iter().filter(|r| r.status == s).count();
        (self.passed, self.failed, self.errors) = (
            count(TestRunStatus::Passed),
            count(TestRunStatus::Failed),
            count(TestRunStatus::Error),
        );
    }
}

/// Where a run of tests is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub enum TestSuiteStatus {
    /// Tests are queued or running.
    Running,
    /// Every test has a run (passed, failed or error).
    Finished,
    /// The server running it stopped first; the runs that finished are
    /// kept. Run the tests again.
    Abandoned,
}

impl TestSuiteStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Finished => "finished",
            Self::Abandoned => "abandoned",
        }
    }
}
