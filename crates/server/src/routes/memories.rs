//! An end user's memories (R-MM): list and forget, per workspace. Workspace
//! key or admin only; a session's client token cannot read them.

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{delete, get};
use axum::{Json, Router};
use rtc_core::ValidationError;
use rtc_protocol::{ErrorResponse, MemoryPage};
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa::{IntoParams, ToSchema};

use crate::extract::{ApiPath, ApiQuery, Scope};
use crate::{ApiError, ApiResult, AppState};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/memories", get(list).delete(forget_user))
        .route("/v1/memories/{id}", delete(forget))
}

#[derive(Debug, Deserialize, IntoParams, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct MemoryQuery {
    /// The end user (`userId` of their sessions); required (422
    /// `missing_user` without it).
    #[param(required = true, min_length = 1, max_length = 256, pattern = r"\S")]
    pub user_id: Option<String>,
    /// 1–200, default 50.
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<i64>,
    /// At least 0, default 0.
    #[param(minimum = 0)]
    pub offset: Option<i64>,
}

fn user(q: &MemoryQuery) -> Result<&str, ApiError> {
    let user = q
        .user_id
        .as_deref()
        .filter(|u| !u.trim().is_empty())
        .ok_or_else(|| {
            ValidationError::new(
                "missing_user",
                "userId",
                "`userId` is required: it names the end user whose memories these are",
            )
        })?;
    // As sessions accept it (`userId` of at most 256 characters).
    rtc_core::names::check_max_chars(user, "userId", 256)?;
    Ok(user)
}

/// `limit` (1–200, default 50) and `offset` (at least 0, default 0).
fn page(q: &MemoryQuery) -> Result<(i64, i64), ApiError> {
    let limit = q.limit.unwrap_or(50);
    if !(1..=200).contains(&limit) {
        return Err(
            ValidationError::new("invalid_limit", "limit", "`limit` must be 1 to 200").into(),
        );
    }
    let offset = q.offset.unwrap_or(0);
    if offset < 0 {
        return Err(ValidationError::new(
            "invalid_offset",
            "offset",
            "`offset` must not be negative",
        )
        .into());
    }
    Ok((limit, offset))
}

/// A user's memories, newest first.
#[utoipa::path(get, operation_id = "listMemories", path = "/v1/memories", tag = "memories", params(MemoryQuery), security(("bearer" = [])),
    responses((status = 200, body = MemoryPage), (status = 422, body = ErrorResponse)))]
pub async fn list(
    scope: Scope,
    State(s): State<AppState>,
    ApiQuery(q): ApiQuery<MemoryQuery>,
) -> ApiResult<Json<MemoryPage>> {
    let user = user(&q)?;
    let (limit, offset) = page(&q)?;
    let (data, total) = s
        .runtime
        .memories(&scope.workspace, user, limit, offset)
        .await?;
    Ok(Json(MemoryPage { data, total }))
}

/// Forget everything about a user.
#[utoipa::path(delete, operation_id = "deleteUserMemories", path = "/v1/memories", tag = "memories", params(MemoryQuery), security(("bearer" = [])),
    responses((status = 200, description = "`{\"deleted\": n}`"), (status = 422, body = ErrorResponse)))]
pub async fn forget_user(
    scope: Scope,
    State(s): State<AppState>,
    ApiQuery(q): ApiQuery<MemoryQuery>,
) -> ApiResult<Json<Value>> {
    let user = user(&q)?;
    // They page nothing here, but a bad value is refused as on GET.
    page(&q)?;
    let deleted = s
        .runtime
        .delete_user_memories(&scope.workspace, user)
        .await?;
    Ok(Json(json!({"deleted": deleted})))
}

/// Forget one memory.
#[utoipa::path(delete, operation_id = "deleteMemory", path = "/v1/memories/{id}", tag = "memories", security(("bearer" = [])),
    responses((status = 204), (status = 404, body = ErrorResponse)))]
pub async fn forget(
    scope: Scope,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<StatusCode> {
    s.runtime.delete_memory(&scope.workspace, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}
