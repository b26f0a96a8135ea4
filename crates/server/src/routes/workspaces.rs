//! Workspaces (admin token only): create, list, read, rotate the key.

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use rtc_core::names::check_display_name;
use rtc_protocol::{CreateWorkspaceParams, ErrorResponse, ListResponse, Workspace};
use rtc_store::{WorkspaceRecord, new_id, new_token};

use crate::extract::{Admin, ApiJson, ApiPath};
use crate::{ApiError, ApiResult, AppState};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/workspaces", post(create).get(list))
        .route("/v1/workspaces/{id}", get(read))
        .route("/v1/workspaces/{id}/rotate-key", post(rotate_key))
}

fn view(r: WorkspaceRecord, api_key: Option<String>) -> Workspace {
    Workspace {
        id: r.id,
        name: r.name,
        api_key,
        created_at: r.created_at,
    }
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
    let key = new_token("rtc_ws");
    let record = s
        .store
        .create_workspace(&new_id("ws"), p.name.trim(), &key)
        .await?;
    Ok((StatusCode::CREATED, Json(view(record, Some(key)))))
}

/// Every workspace.
#[utoipa::path(get, operation_id = "listWorkspaces", path = "/v1/workspaces", tag = "workspaces", security(("adminToken" = [])),
    responses((status = 200, body = ListResponse<Workspace>)))]
pub async fn list(_: Admin, State(s): State<AppState>) -> ApiResult<Json<ListResponse<Workspace>>> {
    let all = s.store.list_workspaces().await?;
    Ok(Json(ListResponse::new(
        all.into_iter().map(|r| view(r, None)).collect(),
    )))
}

/// One workspace.
#[utoipa::path(get, operation_id = "getWorkspace", path = "/v1/workspaces/{id}", tag = "workspaces", security(("adminToken" = [])),
    responses((status = 200, body = Workspace), (status = 404, body = ErrorResponse)))]
pub async fn read(
    _: Admin,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<Workspace>> {
    let r = s
        .store
        .workspace(&id)
        .await?
        .ok_or_else(|| ApiError::not_found("workspace", &id))?;
    Ok(Json(view(r, None)))
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
    let r = s
        .store
        .workspace(&id)
        .await?
        .ok_or_else(|| ApiError::not_found("workspace", &id))?;
    Ok(Json(view(r, Some(key))))
}
