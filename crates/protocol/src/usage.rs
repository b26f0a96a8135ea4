//! Model usage as the API shows it (R-RN-9): tokens as the providers
//! reported them.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Calls and tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UsageTotals {
    /// Model calls.
    pub calls: i64,
    pub input_tokens: i64,
    pub output_tokens: i64,
    /// Of `inputTokens`, those read from the provider's prompt cache.
    pub cached_tokens: i64,
}

/// One assistant's usage in a period.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AssistantUsage {
    pub assistant_id: String,
    pub usage: UsageTotals,
}

/// One day's usage (UTC).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DayUsage {
    /// `YYYY-MM-DD`.
    pub day: String,
    pub usage: UsageTotals,
}

/// A workspace's usage from `from` to `to` (UTC days, both included).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UsageReport {
    pub from: String,
    pub to: String,
    pub total: UsageTotals,
    pub by_assistant: Vec<AssistantUsage>,
    pub by_day: Vec<DayUsage>,
}
