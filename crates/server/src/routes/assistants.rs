//! Prompt assistants, their compatibility report and its explicit cleanup
//! (R-RT-4).

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, post};
use axum::{Json, Router};
use rtc_core::realtime::{cleanup as remove_items, compatibility};
use rtc_protocol::{
    Assistant, CleanupParams, CleanupResponse, CompatibilityIssue, CompatibilityReport,
    ErrorResponse, ListResponse, Tool,
};

use super::{chosen_id, delete_doc, replace_doc};
use crate::extract::{ApiJson, ApiPath, Scope, parse_optional_json};
use crate::{ApiError, ApiResult, AppState};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/assistants", post(create).get(list))
        .route("/v1/assistants/{id}", get(read).put(replace).delete(remove))
        .route("/v1/assistants/{id}/compatibility", get(report))
        .route("/v1/assistants/{id}/compatibility/cleanup", post(cleanup))
}

/// Validate an assistant against the workspace.
pub(crate) async fn validate(
    s: &AppState,
    workspace: &str,
    assistant: &Assistant,
    replacement: Option<&Tool>,
) -> ApiResult<()> {
    Ok(s.runtime
        .validate_assistant(workspace, assistant, replacement)
        .await?)
}

async fn load(s: &AppState, workspace: &str, id: &str) -> ApiResult<Assistant> {
    super::load(s, workspace, id).await
}

/// Create an assistant.
#[utoipa::path(post, operation_id = "createAssistant", path = "/v1/assistants", tag = "assistants", request_body = Assistant, security(("bearer" = [])),
    responses((status = 201, body = Assistant), (status = 409, body = ErrorResponse), (status = 422, body = ErrorResponse)))]
pub async fn create(
    scope: Scope,
    State(s): State<AppState>,
    ApiJson(a): ApiJson<Assistant>,
) -> ApiResult<(StatusCode, Json<Assistant>)> {
    let id = chosen_id(a.id.clone())?;
    validate(&s, &scope.workspace, &a, None).await?;
    Ok((
        StatusCode::CREATED,
        Json(s.store.insert(&scope.workspace, id, a).await?),
    ))
}

#[utoipa::path(get, operation_id = "listAssistants", path = "/v1/assistants", tag = "assistants", security(("bearer" = [])), responses((status = 200, body = ListResponse<Assistant>)))]
pub async fn list(
    scope: Scope,
    State(s): State<AppState>,
) -> ApiResult<Json<ListResponse<Assistant>>> {
    Ok(Json(ListResponse::new(
        s.store.list(&scope.workspace).await?,
    )))
}

#[utoipa::path(get, operation_id = "getAssistant", path = "/v1/assistants/{id}", tag = "assistants", security(("bearer" = [])),
    responses((status = 200, body = Assistant), (status = 404, body = ErrorResponse)))]
pub async fn read(
    scope: Scope,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<Assistant>> {
    load(&s, &scope.workspace, &id).await.map(Json)
}

/// Replace an assistant. Saving validates again, including realtime gating.
#[utoipa::path(put, operation_id = "replaceAssistant", path = "/v1/assistants/{id}", tag = "assistants", request_body = Assistant, security(("bearer" = [])),
    responses((status = 200, body = Assistant), (status = 404, body = ErrorResponse), (status = 422, body = ErrorResponse)))]
pub async fn replace(
    scope: Scope,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ApiJson(a): ApiJson<Assistant>,
) -> ApiResult<Json<Assistant>> {
    load(&s, &scope.workspace, &id).await?;
    validate(&s, &scope.workspace, &a, None).await?;
    replace_doc(&s, &scope.workspace, &id, a).await
}

#[utoipa::path(delete, operation_id = "deleteAssistant", path = "/v1/assistants/{id}", tag = "assistants", security(("bearer" = [])),
    responses((status = 204), (status = 404, body = ErrorResponse)))]
pub async fn remove(
    scope: Scope,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<StatusCode> {
    delete_doc::<Assistant>(&s, &scope.workspace, &id).await
}

async fn issues_of(
    s: &AppState,
    workspace: &str,
    a: &Assistant,
) -> ApiResult<Vec<CompatibilityIssue>> {
    let deps = rtc_runtime::assistant_context(&s.store, workspace, a, None).await?;
    Ok(compatibility(a, &deps.tools, deps.interface.as_ref()))
}

/// The items the assistant's realtime interface does not support.
#[utoipa::path(get, operation_id = "getAssistantCompatibility", path = "/v1/assistants/{id}/compatibility", tag = "assistants", security(("bearer" = [])),
    responses((status = 200, body = CompatibilityReport), (status = 404, body = ErrorResponse)))]
pub async fn report(
    scope: Scope,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<CompatibilityReport>> {
    let a = load(&s, &scope.workspace, &id).await?;
    let issues = issues_of(&s, &scope.workspace, &a).await?;
    Ok(Json(CompatibilityReport {
        compatible: issues.is_empty(),
        issues,
    }))
}

/// Remove exactly the reported incompatible items. With `expectedPaths`,
/// refuses (409) if the report changed since the caller read it.
#[utoipa::path(post, operation_id = "cleanupAssistantCompatibility", path = "/v1/assistants/{id}/compatibility/cleanup", tag = "assistants", request_body(content = Option<CleanupParams>), security(("bearer" = [])),
    responses((status = 200, body = CleanupResponse), (status = 404, body = ErrorResponse), (status = 409, body = ErrorResponse)))]
pub async fn cleanup(
    scope: Scope,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<String>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Json<CleanupResponse>> {
    let params: CleanupParams = parse_optional_json(&headers, &body)?;
    let mut a = load(&s, &scope.workspace, &id).await?;
    let issues = issues_of(&s, &scope.workspace, &a).await?;
    if let Some(expected) = &params.expected_paths {
        let mut current: Vec<&str> = issues.iter().map(|i| i.path.as_str()).collect();
        let mut wanted: Vec<&str> = expected.iter().map(String::as_str).collect();
        current.sort_unstable();
        wanted.sort_unstable();
        if current != wanted {
            return Err(ApiError::conflict(
                "compatibility_changed",
                format!(
                    "the incompatible items are now [{}]; read the report again",
                    current.join(", ")
                ),
            ));
        }
    }
    if issues.is_empty() {
        return Ok(Json(CleanupResponse {
            removed: issues,
            assistant: a,
        }));
    }
    remove_items(&mut a, &issues);
    validate(&s, &scope.workspace, &a, None).await?;
    let saved = s
        .store
        .update(&scope.workspace, &id, a)
        .await?
        .ok_or_else(|| ApiError::not_found("assistant", &id))?;
    Ok(Json(CleanupResponse {
        removed: issues,
        assistant: saved,
    }))
}
