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
        (status = 429, description = "too many provider checks this minute, on this server or by this caller (at most half of the server's): `too_many_provider_checks`, with `Retry-After`", body = ErrorResponse)))]
pub async fn check(
    caller: Caller,
    State(s): State<AppState>,
    ApiPath(name): ApiPath<String>,
) -> ApiResult<Json<ProviderCheck>> {
    let key = match &caller {
        Caller::Admin => "admin",
        Caller::Workspace { id } => id.as_str(),
    };
    if let Err((wait, own)) = s.provider_checks.admit(key, std::time::Instant::now()) {
        let (server, each) = s.provider_checks.per_minute();
        let secs = wait.as_secs().max(1);
        let message = if own {
            format!(
                "one caller runs at most {each} of this server's {server} provider checks a minute; try again in {secs} s"
            )
        } else {
            format!(
                "this server runs at most {server} provider checks a minute; try again in {secs} s"
            )
        };
        return Err(ApiError {
            retry_after: Some(secs),
            ..ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "too_many_provider_checks",
                message,
            )
        });
    }
    Ok(Json(s.runtime.check_provider(&name).await?))
}
