//! Task backend resources (R-TK-1, R-TK-5): the built-in `reasoner` and
//! `opencode` servers a pipeline assistant delegates long tasks to. A
//! backend with `opencode.command` starts a local process, so only the
//! admin token may create, change (to or from such a backend) or delete
//! one, as for stdio MCP servers. A change that would break an assistant
//! naming the backend is refused (409), a backend in use is not deleted.

use std::collections::BTreeMap;

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use rtc_core::task_backend_rules::{
    TaskBackendContext, referenced_tools, starts_process, validate_task_backend,
};
use rtc_protocol::{Assistant, ErrorResponse, ListResponse, TaskBackend, Tool};
use rtc_store::ResourceKind;

use super::{chosen_id, delete_doc, replace_doc};
use crate::extract::{ApiJson, ApiPath, Scope};
use crate::{ApiError, ApiResult, AppState};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/task-backends", post(create).get(list))
        .route(
            "/v1/task-backends/{id}",
            get(read).put(replace).delete(remove),
        )
}

/// Validate a backend against the workspace: the tools it binds (with
/// `replacement` standing in for the stored version of one of them), the
/// secrets and the providers.
pub(crate) async fn validate(
    s: &AppState,
    workspace: &str,
    backend: &TaskBackend,
    replacement: Option<&Tool>,
) -> ApiResult<()> {
    let mut tools: BTreeMap<String, Tool> = s
        .store
        .get_many(workspace, referenced_tools(backend))
        .await?;
    if let Some(t) = replacement
        && let Some(id) = t.id.as_ref().filter(|id| tools.contains_key(*id))
    {
        tools.insert(id.clone(), t.clone());
    }
    let secrets = s.store.secret_names(workspace).await?;
    let providers = s.runtime.provider_names();
    let ctx = TaskBackendContext {
        tools: &tools,
        providers: &providers,
        secret_exists: &|n| secrets.contains(n),
    };
    Ok(validate_task_backend(backend, &ctx)?)
}

/// A backend that starts a local process is the admin's to create, change
/// or delete.
fn command_needs_admin(scope: &Scope, backend: &TaskBackend, what: &str) -> ApiResult<()> {
    if starts_process(backend) && !scope.is_admin {
        return Err(ApiError::forbidden(
            "stdio_requires_admin",
            format!(
                "only the admin token may {what} a task backend with `opencode.command` (it starts a local process)"
            ),
        )
        .with_field("opencode.command"));
    }
    Ok(())
}

/// Register a task backend. One with `opencode.command` needs the admin
/// token (acting in a workspace with `X-Rtc-Workspace`).
#[utoipa::path(post, operation_id = "createTaskBackend", path = "/v1/task-backends", tag = "task-backends", request_body = TaskBackend, security(("bearer" = [])),
    responses((status = 201, body = TaskBackend), (status = 403, body = ErrorResponse, description = "`stdio_requires_admin` naming `opencode.command`: only the admin token may register a backend the platform starts"), (status = 409, body = ErrorResponse), (status = 422, body = ErrorResponse)))]
pub async fn create(
    scope: Scope,
    State(s): State<AppState>,
    ApiJson(mut backend): ApiJson<TaskBackend>,
) -> ApiResult<(StatusCode, Json<TaskBackend>)> {
    backend.warnings.clear();
    let id = chosen_id(backend.id.clone())?;
    command_needs_admin(&scope, &backend, "register")?;
    validate(&s, &scope.workspace, &backend, None).await?;
    let warnings = super::save_warnings::for_task_backend(&s, &backend).await;
    let mut saved = s.store.insert(&scope.workspace, id, backend).await?;
    saved.warnings = warnings;
    Ok((StatusCode::CREATED, Json(saved)))
}

#[utoipa::path(get, operation_id = "listTaskBackends", path = "/v1/task-backends", tag = "task-backends", security(("bearer" = [])), responses((status = 200, body = ListResponse<TaskBackend>)))]
pub async fn list(
    scope: Scope,
    State(s): State<AppState>,
) -> ApiResult<Json<ListResponse<TaskBackend>>> {
    Ok(Json(ListResponse::new(
        s.store.list(&scope.workspace).await?,
    )))
}

#[utoipa::path(get, operation_id = "getTaskBackend", path = "/v1/task-backends/{id}", tag = "task-backends", security(("bearer" = [])),
    responses((status = 200, body = TaskBackend), (status = 404, body = ErrorResponse)))]
pub async fn read(
    scope: Scope,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<TaskBackend>> {
    super::load::<TaskBackend>(&s, &scope.workspace, &id)
        .await
        .map(Json)
}

/// Replace a task backend. Changing one to or from `opencode.command`
/// needs the admin token; a change that would make an assistant naming
/// the backend invalid (a variable its bindings read that the assistant
/// does not declare) is refused (409 `breaks_assistant`).
#[utoipa::path(put, operation_id = "replaceTaskBackend", path = "/v1/task-backends/{id}", tag = "task-backends", request_body = TaskBackend, security(("bearer" = [])),
    responses((status = 200, body = TaskBackend), (status = 403, body = ErrorResponse, description = "`stdio_requires_admin` naming `opencode.command`: only the admin token may change a backend to or from one the platform starts"), (status = 404, body = ErrorResponse), (status = 409, body = ErrorResponse), (status = 422, body = ErrorResponse)))]
pub async fn replace(
    scope: Scope,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ApiJson(mut backend): ApiJson<TaskBackend>,
) -> ApiResult<Json<TaskBackend>> {
    backend.warnings.clear();
    let existing = super::load::<TaskBackend>(&s, &scope.workspace, &id).await?;
    command_needs_admin(&scope, &existing, "change")?;
    command_needs_admin(&scope, &backend, "change")?;
    validate(&s, &scope.workspace, &backend, None).await?;
    backend.id = Some(id.clone());
    for r in s
        .store
        .referrers(&scope.workspace, ResourceKind::TaskBackend, &id)
        .await?
    {
        if r.kind != ResourceKind::Assistant {
            continue;
        }
        let Some(a) = s.store.get::<Assistant>(&scope.workspace, &r.id).await? else {
            continue;
        };
        let check = s
            .runtime
            .validate_assistant_with_backend(&scope.workspace, &a, &backend)
            .await;
        if let Err(e) = check.map_err(ApiError::from) {
            if e.status.is_server_error() {
                return Err(e);
            }
            return Err(ApiError::conflict(
                "breaks_assistant",
                format!(
                    "this change would make assistant `{}` invalid at `{}`: {}",
                    r.id,
                    e.field.as_deref().unwrap_or(""),
                    e.message
                ),
            ));
        }
    }
    let warnings = super::save_warnings::for_task_backend(&s, &backend).await;
    let Json(mut saved) = replace_doc(&s, &scope.workspace, &id, backend).await?;
    saved.warnings = warnings;
    Ok(Json(saved))
}

/// Delete a task backend no assistant names. Deleting one with
/// `opencode.command` needs the admin token.
#[utoipa::path(delete, operation_id = "deleteTaskBackend", path = "/v1/task-backends/{id}", tag = "task-backends", security(("bearer" = [])),
    responses((status = 204), (status = 403, body = ErrorResponse, description = "`stdio_requires_admin` naming `opencode.command`: only the admin token may delete a backend the platform starts"), (status = 404, body = ErrorResponse), (status = 409, body = ErrorResponse)))]
pub async fn remove(
    scope: Scope,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<StatusCode> {
    let existing = super::load::<TaskBackend>(&s, &scope.workspace, &id).await?;
    command_needs_admin(&scope, &existing, "delete")?;
    let status = delete_doc::<TaskBackend>(&s, &scope.workspace, &id).await?;
    s.runtime.task_backend_deleted(&scope.workspace, &id).await;
    Ok(status)
}
