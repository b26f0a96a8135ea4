//! The model providers of this server (`GET /v1/providers`) and a check
//! that one answers (`POST /v1/providers/{name}/check`). Server-wide, not
//! per workspace: a workspace key or the admin token may read them; API
//! keys are never shown, credentials in a base URL are masked.

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use rtc_protocol::{ErrorResponse, ListResponse, ProviderCheck, ProviderInfo};

use crate::extract::{ApiPath, Caller};
use crate::{ApiError, ApiResult, AppState};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/providers", get(list))
        .route("/v1/providers/{name}/check", post(check))
}

/// The default provider (`default`) first, then the named ones.
#[utoipa::path(get, operation_id = "listProviders", path = "/v1/providers", tag = "providers", security(("bearer" = [])),
    responses((status = 200, body = ListResponse<ProviderInfo>)))]
pub async fn list(_caller: Caller, State(s): State<AppState>) -> Json<ListResponse<ProviderInfo>> {
    Json(ListResponse::new(s.runtime.providers()))
}

/// Send the provider one short request with its default model: `ok` with
/// the latency, or the provider's error (still a 200: the check ran).
#[utoipa::path(post, operation_id = "checkProvider", path = "/v1/providers/{name}/check", tag = "providers", security(("bearer" = [])),
    responses((status = 200, body = ProviderCheck), (status = 404, body = ErrorResponse),
        (status = 429, description = "too many provider checks on this server this minute (`too_many_provider_checks`)", body = ErrorResponse)))]
pub async fn check(
    _caller: Caller,
    State(s): State<AppState>,
    ApiPath(name): ApiPath<String>,
) -> ApiResult<Json<ProviderCheck>> {
    if let Err(wait) = s.provider_checks.admit(std::time::Instant::now()) {
        return Err(ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "too_many_provider_checks",
            format!(
                "this server runs at most {} provider checks a minute; try again in {} s",
                s.provider_checks.per_minute(),
                wait.as_secs().max(1)
            ),
        ));
    }
    Ok(Json(s.runtime.check_provider(&name).await?))
}
