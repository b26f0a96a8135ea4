//! What the model's interaction built-ins put in front of the user: the
//! todo list (R-TD), askUser questions with their answers (R-AU), and the
//! memories it keeps (R-MM). The
//! model-facing fields keep the names the model is given (`multiSelect`,
//! `active_form`).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    Pending,
    InProgress,
    Completed,
}

/// One item of the model's todo list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TodoItem {
    /// What to do, in the imperative.
    pub content: String,
    pub status: TodoStatus,
    /// Short present-continuous form for a status bar.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_form: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AskOption {
    pub label: String,
    pub description: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AskQuestion {
    pub question: String,
    pub header: String,
    pub options: Vec<AskOption>,
    #[serde(default, rename = "multiSelect")]
    pub multi_select: bool,
}

/// The question a session waits on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PendingQuestion {
    /// The model's askUser call; answers name it.
    pub call_id: String,
    pub questions: Vec<AskQuestion>,
    pub asked_at: String,
    /// Set when a sub-agent asks: the root's user sees whose question it
    /// is (R-BX-4); answers sent to the root reach that sub-agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_session_title: Option<String>,
}

/// One answer: an option's label, its number (`"1"`–`"4"`), or free text
/// ("Other"); several of them for a multi-select question (a list, or one
/// string separated by commas).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum AnswerValue {
    One(String),
    Many(Vec<String>),
}

/// `POST /v1/sessions/{id}/answers`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AnswerParams {
    /// The askUser call answered; defaults to the pending one.
    #[serde(default)]
    pub call_id: Option<String>,
    /// One answer per question: a list in the questions' order, or an
    /// object keyed by each question's text.
    pub answers: Answers,
}

/// The answers to a pending question set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum Answers {
    /// One answer per question, in order.
    InOrder(Vec<AnswerValue>),
    /// `{"<question>": "<answer>"}`.
    ByQuestion(std::collections::BTreeMap<String, AnswerValue>),
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AnswerResponse {
    pub call_id: String,
    /// The answers as the model reads them, one per question.
    pub answers: Vec<String>,
}

/// `GET /v1/sessions/{id}/todos`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct TodoList {
    pub todos: Vec<TodoItem>,
}

/// `GET /v1/sessions/{id}/question`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct QuestionState {
    pub pending: Option<PendingQuestion>,
}

/// A memory the model keeps about an end user (R-MM).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Memory {
    pub id: String,
    pub user_id: String,
    pub content: String,
    pub tags: Vec<String>,
    pub created_at: String,
    pub updated_at: String,
}

/// `GET /v1/memories?userId=`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct MemoryPage {
    pub data: Vec<Memory>,
    /// All memories of the user.
    pub total: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum GoalStatus {
    Active,
    Completed,
    Cancelled,
    Exhausted,
}

impl GoalStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Completed => "completed",
            Self::Cancelled => "cancelled",
            Self::Exhausted => "exhausted",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [
            Self::Active,
            Self::Completed,
            Self::Cancelled,
            Self::Exhausted,
        ]
        .into_iter()
        .find(|g| g.as_str() == s)
    }
}

/// A goal that drives a session until its condition holds (R-GL, R-BX-2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Goal {
    pub id: String,
    pub condition: String,
    pub status: GoalStatus,
    pub max_turns: i64,
    pub completed_turns: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_budget: Option<i64>,
    pub tokens_used: i64,
    /// RFC 3339.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<String>,
    /// Why it ended (the judge's reason, the limit reached, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Set for a goal created during this loop's tick: a periodic check
    /// judged after later turns, which starts no turns of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loop_id: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

/// `POST /v1/sessions/{id}/goals/{goalId}/resume`: the host raises a limit
/// of an exhausted (or active) goal; it becomes active again.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResumeGoalParams {
    /// Above the turns already done, at most 200.
    #[serde(default)]
    #[schema(minimum = 1, maximum = 200)]
    pub max_turns: Option<i64>,
    /// Above the tokens already used.
    #[serde(default)]
    #[schema(minimum = 1)]
    pub token_budget: Option<i64>,
    /// A new deadline, this many minutes from now (1 to 10,080, a week).
    #[serde(default)]
    #[schema(minimum = 1, maximum = 10080)]
    pub deadline_minutes: Option<i64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum LoopStatus {
    Active,
    Paused,
    Completed,
    Cancelled,
    Exhausted,
}

impl LoopStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Paused => "paused",
            Self::Completed => "completed",
            Self::Cancelled => "cancelled",
            Self::Exhausted => "exhausted",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [
            Self::Active,
            Self::Paused,
            Self::Completed,
            Self::Cancelled,
            Self::Exhausted,
        ]
        .into_iter()
        .find(|l| l.as_str() == s)
    }

    /// Completed, cancelled or exhausted: it never ticks again.
    pub fn is_final(self) -> bool {
        matches!(self, Self::Completed | Self::Cancelled | Self::Exhausted)
    }
}

/// A loop: `prompt` runs as a turn of its session every interval (R-LP).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Loop {
    pub id: String,
    pub prompt: String,
    pub interval_seconds: i64,
    pub max_turns: i64,
    pub turns_done: i64,
    /// Ticks skipped because the previous turn was still running.
    pub skipped_ticks: i64,
    pub status: LoopStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub next_tick_at: String,
    pub expires_at: String,
    pub created_at: String,
    pub updated_at: String,
}
