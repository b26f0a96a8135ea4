//! Realtime interfaces (R-RT-2): the shipped ones, read-only, and the
//! operator's own, whose declared capabilities gate prompt tools.

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use rtc_core::realtime::{is_shipped, shipped_interfaces, validate_interface};
use rtc_protocol::{ErrorResponse, ListResponse, RealtimeInterface};

use super::{chosen_id, delete_doc, replace_doc};
use crate::extract::{ApiJson, ApiPath, Scope};
use crate::{ApiError, ApiResult, AppState};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/realtime-interfaces", post(create).get(list))
        .route(
            "/v1/realtime-interfaces/{id}",
            get(read).put(replace).delete(remove),
        )
}

/// A shipped interface or one of the workspace's own.
pub(crate) async fn find(
    s: &AppState,
    workspace: &str,
    id: &str,
) -> ApiResult<Option<RealtimeInterface>> {
    Ok(rtc_runtime::find_interface(&s.store, workspace, id).await?)
}

fn read_only(id: &str) -> ApiError {
    ApiError::forbidden(
        "read_only",
        format!("`{id}` is shipped with the platform and cannot be changed"),
    )
}

/// The interface's rules, with the workspace's secrets, and its provider
/// URL against the outbound guard (an address it would refuse is refused
/// at save already).
async fn check(s: &AppState, workspace: &str, iface: &RealtimeInterface) -> ApiResult<()> {
    let secrets = s.store.secret_names(workspace).await?;
    validate_interface(iface, &|n| secrets.contains(n))?;
    let Some(c) = &iface.connection else {
        return Ok(());
    };
    super::save_warnings::refuse_private_url(s, "connection.url", &c.url)
}

/// Declare a realtime interface and its prompt-tool capabilities.
#[utoipa::path(post, operation_id = "createRealtimeInterface", path = "/v1/realtime-interfaces", tag = "realtime-interfaces", request_body = RealtimeInterface, security(("bearer" = [])),
    responses((status = 201, body = RealtimeInterface), (status = 409, body = ErrorResponse), (status = 422, body = ErrorResponse)))]
pub async fn create(
    scope: Scope,
    State(s): State<AppState>,
    ApiJson(mut iface): ApiJson<RealtimeInterface>,
) -> ApiResult<(StatusCode, Json<RealtimeInterface>)> {
    let id = chosen_id(iface.id.clone())?;
    if let Some(id) = id.as_deref().filter(|id| is_shipped(id)) {
        return Err(
            ApiError::conflict("already_exists", format!("`{id}` is a shipped interface"))
                .with_field("id"),
        );
    }
    check(&s, &scope.workspace, &iface).await?;
    iface.shipped = false;
    Ok((
        StatusCode::CREATED,
        Json(s.store.insert(&scope.workspace, id, iface).await?),
    ))
}

/// The shipped interfaces, then the workspace's own.
#[utoipa::path(get, operation_id = "listRealtimeInterfaces", path = "/v1/realtime-interfaces", tag = "realtime-interfaces", security(("bearer" = [])),
    responses((status = 200, body = ListResponse<RealtimeInterface>)))]
pub async fn list(
    scope: Scope,
    State(s): State<AppState>,
) -> ApiResult<Json<ListResponse<RealtimeInterface>>> {
    let mut all = shipped_interfaces();
    all.extend(s.store.list::<RealtimeInterface>(&scope.workspace).await?);
    Ok(Json(ListResponse::new(all)))
}

#[utoipa::path(get, operation_id = "getRealtimeInterface", path = "/v1/realtime-interfaces/{id}", tag = "realtime-interfaces", security(("bearer" = [])),
    responses((status = 200, body = RealtimeInterface), (status = 404, body = ErrorResponse)))]
pub async fn read(
    scope: Scope,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<RealtimeInterface>> {
    find(&s, &scope.workspace, &id)
        .await?
        .map(Json)
        .ok_or_else(|| ApiError::not_found("realtime interface", &id))
}

/// Change an interface's declaration. Assistants that use what it no longer
/// declares keep their configuration and show up in their compatibility report.
#[utoipa::path(put, operation_id = "replaceRealtimeInterface", path = "/v1/realtime-interfaces/{id}", tag = "realtime-interfaces", request_body = RealtimeInterface, security(("bearer" = [])),
    responses((status = 200, body = RealtimeInterface), (status = 403, body = ErrorResponse), (status = 404, body = ErrorResponse), (status = 422, body = ErrorResponse)))]
pub async fn replace(
    scope: Scope,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ApiJson(mut iface): ApiJson<RealtimeInterface>,
) -> ApiResult<Json<RealtimeInterface>> {
    if is_shipped(&id) {
        return Err(read_only(&id));
    }
    check(&s, &scope.workspace, &iface).await?;
    iface.shipped = false;
    replace_doc(&s, &scope.workspace, &id, iface).await
}

/// Delete an interface no assistant uses.
#[utoipa::path(delete, operation_id = "deleteRealtimeInterface", path = "/v1/realtime-interfaces/{id}", tag = "realtime-interfaces", security(("bearer" = [])),
    responses((status = 204), (status = 403, body = ErrorResponse), (status = 404, body = ErrorResponse), (status = 409, body = ErrorResponse)))]
pub async fn remove(
    scope: Scope,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<StatusCode> {
    if is_shipped(&id) {
        return Err(read_only(&id));
    }
    delete_doc::<RealtimeInterface>(&s, &scope.workspace, &id).await
}
