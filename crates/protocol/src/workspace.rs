//! Workspaces, their API keys (R-API-3) and their quotas (R-RN-10).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateWorkspaceParams {
    #[schema(min_length = 1, max_length = 200, pattern = r"\S")]
    pub name: String,
    /// Limits on what the workspace may spend (none by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quota: Option<WorkspaceQuota>,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Workspace {
    pub id: String,
    pub name: String,
    /// Only present in the response that creates the workspace or rotates its key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quota: Option<WorkspaceQuota>,
    pub created_at: String,
}

/// The period a token budget covers (UTC).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum QuotaPeriod {
    Day,
    #[default]
    Month,
}

/// What a workspace may spend: model tokens (input and output) per period,
/// and API requests per minute (its key and its sessions' client tokens
/// together). Past either, the API answers 429 with `Retry-After`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkspaceQuota {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1)]
    pub tokens_per_period: Option<i64>,
    /// The budget's period: the calendar month (default) or day, UTC.
    #[serde(default)]
    pub period: QuotaPeriod,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1, maximum = 1000000)]
    pub requests_per_minute: Option<i64>,
}

/// Who a bearer token is (`GET /v1/me`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Me {
    /// `admin` (the admin token) or `workspace` (a workspace's key).
    pub kind: String,
    /// The workspace a key belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<WorkspaceRef>,
    /// What this server offers that depends on its configuration.
    pub server: ServerOffers,
}

/// Built-in families that exist only when the operator configured them:
/// an assistant may tick `webSearch`, but the model is offered it only
/// where the server has a search provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServerOffers {
    /// A search engine is configured (`RTC_WEB_SEARCH_ENGINES`).
    pub web_search: bool,
    /// Page fetching is enabled (`RTC_WEB_FETCH`).
    pub web_fetch: bool,
}

/// A workspace's id and name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceRef {
    pub id: String,
    pub name: String,
}
