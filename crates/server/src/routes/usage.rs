//! Model usage of a workspace (R-RN-9): tokens by assistant and by day.
//! Workspace key or admin; a session's client token reads its own
//! session's totals on `GET /v1/sessions/{id}` only.

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use rtc_protocol::{ErrorResponse, UsageReport};
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

use crate::extract::{ApiQuery, Scope};
use crate::{ApiResult, AppState};

pub fn router() -> Router<AppState> {
    Router::new().route("/v1/usage", get(report))
}

#[derive(Debug, Deserialize, IntoParams, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct UsageQuery {
    /// First UTC day, `YYYY-MM-DD` (default: the first of this month).
    pub from: Option<String>,
    /// Last UTC day, included (default: today); at most 366 days after
    /// `from`.
    pub to: Option<String>,
}

/// The workspace's model usage: totals, by assistant and by day.
#[utoipa::path(get, operation_id = "getUsage", path = "/v1/usage", tag = "usage", params(UsageQuery), security(("bearer" = [])),
    responses((status = 200, body = UsageReport), (status = 422, description = "`invalid_date` or `invalid_period`", body = ErrorResponse)))]
pub async fn report(
    scope: Scope,
    State(s): State<AppState>,
    ApiQuery(q): ApiQuery<UsageQuery>,
) -> ApiResult<Json<UsageReport>> {
    Ok(Json(
        s.runtime
            .usage(&scope.workspace, q.from.as_deref(), q.to.as_deref())
            .await?,
    ))
}
