//! Workspaces (admin token only): create, list, read, rotate the key,
//! set the quota (R-RN-10).

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, post, put};
use axum::{Json, Router};
use rtc_core::ValidationError;
use rtc_core::names::check_display_name;
use rtc_protocol::{
    CreateWorkspaceParams, ErrorResponse, ListResponse, Me, Workspace, WorkspaceQuota, WorkspaceRef,
};
use rtc_store::{WorkspaceRecord, new_id, new_token};

use crate::extract::{Admin, ApiJson, ApiPath, Caller};
use crate::{ApiError, ApiResult, AppState};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/workspaces", post(create).get(list))
        .route("/v1/workspaces/{id}", get(read))
        .route("/v1/workspaces/{id}/rotate-key", post(rotate_key))
        .route("/v1/workspaces/{id}/quota", put(set_quota))
        .route("/v1/me", get(me))
}

/// Who the token is: the admin, or a workspace (its id and name). Any
/// valid token may ask; the console signs in with it.
#[utoipa::path(get, operation_id = "getMe", path = "/v1/me", tag = "workspaces", security(("bearer" = []), ("adminToken" = [])),
    responses((status = 200, body = Me), (status = 401, body = ErrorResponse)))]
pub async fn me(caller: Caller, State(s): State<AppState>) -> ApiResult<Json<Me>> {
    Ok(Json(match caller {
        Caller::Admin => Me {
            kind: "admin".to_owned(),
            workspace: None,
            server: s.runtime.server_offers(),
        },
        Caller::Workspace { id } => {
            s.runtime.admit_request(&id).await?;
            let r = stored(&s, &id).await?;
            Me {
                kind: "workspace".to_owned(),
                workspace: Some(WorkspaceRef {
                    id: r.id,
                    name: r.name,
                }),
                server: s.runtime.server_offers(),
            }
        }
    }))
}

async fn view(s: &AppState, r: WorkspaceRecord, api_key: Option<String>) -> ApiResult<Workspace> {
    let quota = match s.store.workspace_quota(&r.id).await? {
        Some(text) => serde_json::from_str(&text).ok(),
        None => None,
    };
    Ok(Workspace {
        id: r.id,
        name: r.name,
        api_key,
        quota,
        created_at: r.created_at,
    })
}

/// The workspace `id`, or 404.
async fn stored(s: &AppState, id: &str) -> ApiResult<WorkspaceRecord> {
    s.store
        .workspace(id)
        .await?
        .ok_or_else(|| ApiError::not_found("workspace", id))
}

/// Most requests per minute a quota may allow.
const MAX_REQUESTS_PER_MINUTE: i64 = 1_000_000;

/// A quota's numbers are positive (the rate at most a million a minute);
/// the stored form is its JSON, or nothing when it limits nothing.
fn checked_quota(q: &WorkspaceQuota, prefix: &str) -> Result<Option<String>, ApiError> {
    if q.tokens_per_period.is_some_and(|t| t < 1) {
        return Err(ValidationError::new(
            "invalid_quota",
            format!("{prefix}tokensPerPeriod"),
            "`tokensPerPeriod` must be at least 1 (leave it out for no budget)",
        )
        .into());
    }
    if q.requests_per_minute
        .is_some_and(|r| !(1..=MAX_REQUESTS_PER_MINUTE).contains(&r))
    {
        return Err(ValidationError::new(
            "invalid_quota",
            format!("{prefix}requestsPerMinute"),
            format!("`requestsPerMinute` must be 1 to {MAX_REQUESTS_PER_MINUTE} (leave it out for no limit)"),
        )
        .into());
    }
    if q.tokens_per_period.is_none() && q.requests_per_minute.is_none() {
        return Ok(None);
    }
    Ok(Some(serde_json::to_string(q).unwrap_or_default()))
}

/// Create a workspace; the response carries its API key, shown only once.
#[utoipa::path(post, operation_id = "createWorkspace", path = "/v1/workspaces", tag = "workspaces", request_body = CreateWorkspaceParams,
    security(("adminToken" = [])),
    responses((status = 201, body = Workspace), (status = 403, body = ErrorResponse), (status = 422, body = ErrorResponse)))]
pub async fn create(
    _: Admin,
    State(s): State<AppState>,
    ApiJson(p): ApiJson<CreateWorkspaceParams>,
) -> ApiResult<(StatusCode, Json<Workspace>)> {
    check_display_name(&p.name, "name", 200)?;
    let quota = match &p.quota {
        Some(q) => checked_quota(q, "quota.")?,
        None => None,
    };
    let key = new_token("rtc_ws");
    let record = s
        .store
        .create_workspace(&new_id("ws"), p.name.trim(), &key)
        .await?;
    if let Some(q) = &quota {
        s.store.set_workspace_quota(&record.id, Some(q)).await?;
    }
    Ok((
        StatusCode::CREATED,
        Json(view(&s, record, Some(key)).await?),
    ))
}

/// Every workspace.
#[utoipa::path(get, operation_id = "listWorkspaces", path = "/v1/workspaces", tag = "workspaces", security(("adminToken" = [])),
    responses((status = 200, body = ListResponse<Workspace>)))]
pub async fn list(_: Admin, State(s): State<AppState>) -> ApiResult<Json<ListResponse<Workspace>>> {
    let all = s.store.list_workspaces().await?;
    let mut views = Vec::with_capacity(all.len());
    for r in all {
        views.push(view(&s, r, None).await?);
    }
    Ok(Json(ListResponse::new(views)))
}

/// One workspace.
#[utoipa::path(get, operation_id = "getWorkspace", path = "/v1/workspaces/{id}", tag = "workspaces", security(("adminToken" = [])),
    responses((status = 200, body = Workspace), (status = 404, body = ErrorResponse)))]
pub async fn read(
    _: Admin,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<Workspace>> {
    let r = stored(&s, &id).await?;
    Ok(Json(view(&s, r, None).await?))
}

/// Replace a workspace's API key; the old one stops working at once.
#[utoipa::path(post, operation_id = "rotateWorkspaceKey", path = "/v1/workspaces/{id}/rotate-key", tag = "workspaces", security(("adminToken" = [])),
    responses((status = 200, body = Workspace), (status = 404, body = ErrorResponse)))]
pub async fn rotate_key(
    _: Admin,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<Workspace>> {
    let key = new_token("rtc_ws");
    if !s.store.rotate_workspace_key(&id, &key).await? {
        return Err(ApiError::not_found("workspace", &id));
    }
    let r = stored(&s, &id).await?;
    Ok(Json(view(&s, r, Some(key)).await?))
}

/// Set the workspace's quota (`{}` removes it); it applies from the next
/// request.
#[utoipa::path(put, operation_id = "setWorkspaceQuota", path = "/v1/workspaces/{id}/quota", tag = "workspaces", request_body = WorkspaceQuota,
    security(("adminToken" = [])),
    responses((status = 200, body = Workspace), (status = 404, body = ErrorResponse), (status = 422, body = ErrorResponse)))]
pub async fn set_quota(
    _: Admin,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ApiJson(q): ApiJson<WorkspaceQuota>,
) -> ApiResult<Json<Workspace>> {
    let quota = checked_quota(&q, "")?;
    if !s.store.set_workspace_quota(&id, quota.as_deref()).await? {
        return Err(ApiError::not_found("workspace", &id));
    }
    s.runtime.quota_changed(&id);
    let r = stored(&s, &id).await?;
    Ok(Json(view(&s, r, None).await?))
}
