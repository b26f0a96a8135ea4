//! The tasks a session delegated to its assistant's task backend (R-TK):
//! listed with their status and result, one with its reasoner transcript,
//! and cancelled by the host (the conversation is told).

use axum::extract::State;
use axum::routing::{get, post};
use axum::{Json, Router};
use rtc_protocol::{ErrorResponse, ListResponse, Task};

use crate::extract::{ApiPath, Scope, SessionAccess};
use crate::{ApiResult, AppState};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/sessions/{id}/tasks", get(list))
        .route("/v1/sessions/{id}/tasks/{task_id}", get(read))
        .route("/v1/sessions/{id}/tasks/{task_id}/cancel", post(cancel))
}

/// The session's tasks, oldest first (without transcripts).
#[utoipa::path(get, operation_id = "listSessionTasks", path = "/v1/sessions/{id}/tasks", tag = "sessions", security(("bearer" = []), ("sessionToken" = [])),
    responses((status = 200, body = ListResponse<Task>), (status = 404, body = ErrorResponse)))]
pub async fn list(
    access: SessionAccess,
    State(s): State<AppState>,
) -> ApiResult<Json<ListResponse<Task>>> {
    let tasks = s.runtime.tasks(&access.workspace, &access.session).await?;
    Ok(Json(ListResponse::new(tasks)))
}

/// One task, with a reasoner task's transcript.
#[utoipa::path(get, operation_id = "getSessionTask", path = "/v1/sessions/{id}/tasks/{task_id}", tag = "sessions", security(("bearer" = []), ("sessionToken" = [])),
    responses((status = 200, body = Task), (status = 404, body = ErrorResponse)))]
pub async fn read(
    access: SessionAccess,
    State(s): State<AppState>,
    ApiPath((_session, task_id)): ApiPath<(String, String)>,
) -> ApiResult<Json<Task>> {
    Ok(Json(
        s.runtime
            .task(&access.workspace, &access.session, &task_id)
            .await?,
    ))
}

/// Cancel a running task: the backend stops working on it and the
/// conversation gets a `[Task report] … cancelled` message. A task that
/// already ended is answered as it is.
#[utoipa::path(post, operation_id = "cancelSessionTask", path = "/v1/sessions/{id}/tasks/{task_id}/cancel", tag = "sessions", security(("bearer" = [])),
    responses((status = 200, body = Task), (status = 404, body = ErrorResponse)))]
pub async fn cancel(
    scope: Scope,
    State(s): State<AppState>,
    ApiPath((id, task_id)): ApiPath<(String, String)>,
) -> ApiResult<Json<Task>> {
    Ok(Json(
        s.runtime
            .cancel_task(&scope.workspace, &id, &task_id)
            .await?,
    ))
}
