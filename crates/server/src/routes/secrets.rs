//! Write-only secrets (R-TR-4): values go in, names come out.

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use rtc_core::names::check_secret_name;
use rtc_protocol::{ErrorResponse, ListResponse, PutSecretParams, SecretInfo};

use crate::extract::{ApiJson, ApiPath, Scope};
use crate::{ApiError, ApiResult, AppState};

/// Longest secret value accepted, in characters.
pub const MAX_SECRET_CHARS: usize = 16_384;

pub use rtc_core::names::MIN_SECRET_CHARS;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/secrets", get(list))
        .route("/v1/secrets/{name}", get(read).put(put).delete(remove))
}

/// Create or replace a secret. The value is encrypted and never returned.
#[utoipa::path(put, operation_id = "putSecret", path = "/v1/secrets/{name}", tag = "secrets", request_body = PutSecretParams, security(("bearer" = [])),
    responses((status = 201, body = SecretInfo), (status = 200, body = SecretInfo), (status = 422, body = ErrorResponse, description = "`secret_too_short` (under 8 characters) or `invalid_value` (over 16,384 characters) naming `value`")))]
pub async fn put(
    scope: Scope,
    State(s): State<AppState>,
    ApiPath(name): ApiPath<String>,
    ApiJson(p): ApiJson<PutSecretParams>,
) -> ApiResult<(StatusCode, Json<SecretInfo>)> {
    check_secret_name(&name, "name")?;
    let chars = p.value.chars().count();
    if chars < MIN_SECRET_CHARS {
        return Err(ApiError::unprocessable(
            "secret_too_short",
            "value",
            format!("`value` must be at least {MIN_SECRET_CHARS} characters, got {chars}"),
        ));
    }
    if chars > MAX_SECRET_CHARS {
        return Err(ApiError::unprocessable(
            "invalid_value",
            "value",
            format!("`value` must be at most {MAX_SECRET_CHARS} characters, got {chars}"),
        ));
    }
    let (info, created) = s
        .store
        .put_secret(&scope.workspace, &name, &p.value)
        .await?;
    Ok((
        if created {
            StatusCode::CREATED
        } else {
            StatusCode::OK
        },
        Json(info),
    ))
}

/// The names of the workspace's secrets.
#[utoipa::path(get, operation_id = "listSecrets", path = "/v1/secrets", tag = "secrets", security(("bearer" = [])), responses((status = 200, body = ListResponse<SecretInfo>)))]
pub async fn list(
    scope: Scope,
    State(s): State<AppState>,
) -> ApiResult<Json<ListResponse<SecretInfo>>> {
    Ok(Json(ListResponse::new(
        s.store.list_secrets(&scope.workspace).await?,
    )))
}

/// A secret's metadata (never its value).
#[utoipa::path(get, operation_id = "getSecret", path = "/v1/secrets/{name}", tag = "secrets", security(("bearer" = [])),
    responses((status = 200, body = SecretInfo), (status = 404, body = ErrorResponse)))]
pub async fn read(
    scope: Scope,
    State(s): State<AppState>,
    ApiPath(name): ApiPath<String>,
) -> ApiResult<Json<SecretInfo>> {
    let info = s.store.secret_info(&scope.workspace, &name).await?;
    info.map(Json)
        .ok_or_else(|| ApiError::not_found("secret", &name))
}

/// Delete a secret that no tool or MCP server uses.
#[utoipa::path(delete, operation_id = "deleteSecret", path = "/v1/secrets/{name}", tag = "secrets", security(("bearer" = [])),
    responses((status = 204), (status = 404, body = ErrorResponse), (status = 409, body = ErrorResponse)))]
pub async fn remove(
    scope: Scope,
    State(s): State<AppState>,
    ApiPath(name): ApiPath<String>,
) -> ApiResult<StatusCode> {
    if s.store.delete_secret(&scope.workspace, &name).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::not_found("secret", &name))
    }
}
