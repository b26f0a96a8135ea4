//! MCP server resources (R-TR-2, R-SEC-4) and tool discovery. A stdio
//! server's `env` values are write-only (answers show `***`; `***` sent
//! back keeps the stored value), and only the admin token may create,
//! change or delete a stdio server. A change or delete drops the server's
//! pooled connections.

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use rtc_core::mcp_rules::{Caller, keep_masked_env, masked, validate_mcp_server};
use rtc_protocol::{ErrorResponse, ListResponse, McpServer, McpToolInfo, McpTransport};

use super::{chosen_id, delete_doc, replace_doc};
use crate::extract::{ApiJson, ApiPath, Scope};
use crate::{ApiError, ApiResult, AppState};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/mcp-servers", post(create).get(list))
        .route(
            "/v1/mcp-servers/{id}",
            get(read).put(replace).delete(remove),
        )
        .route("/v1/mcp-servers/{id}/tools", get(discover))
}

async fn check(s: &AppState, scope: &Scope, server: &McpServer) -> ApiResult<()> {
    let secrets = s.store.secret_names(&scope.workspace).await?;
    let caller = if scope.is_admin {
        Caller::Admin
    } else {
        Caller::Workspace
    };
    validate_mcp_server(server, caller, &|n| secrets.contains(n))?;
    check_address(s, server)
}

/// A streamable-HTTP URL the outbound guard would refuse (an IP literal
/// outside public unicast, `localhost`) is refused when saved, not first
/// at discovery; names that resolve to such addresses are refused there.
fn check_address(s: &AppState, server: &McpServer) -> ApiResult<()> {
    let McpTransport::StreamableHttp { url, .. } = &server.transport else {
        return Ok(());
    };
    super::save_warnings::refuse_private_url(s, "transport.url", url)
}

/// Register an MCP server. `stdio` servers start local processes and need
/// the admin token (acting in a workspace with `X-Rtc-Workspace`).
#[utoipa::path(post, operation_id = "createMcpServer", path = "/v1/mcp-servers", tag = "mcp-servers", request_body = McpServer, security(("bearer" = [])),
    responses((status = 201, body = McpServer), (status = 403, body = ErrorResponse), (status = 422, body = ErrorResponse)))]
pub async fn create(
    scope: Scope,
    State(s): State<AppState>,
    ApiJson(mut server): ApiJson<McpServer>,
) -> ApiResult<(StatusCode, Json<McpServer>)> {
    let id = chosen_id(server.id.clone())?;
    check(&s, &scope, &server).await?;
    keep_masked_env(&mut server, None)?;
    Ok((
        StatusCode::CREATED,
        Json(masked(s.store.insert(&scope.workspace, id, server).await?)),
    ))
}

#[utoipa::path(get, operation_id = "listMcpServers", path = "/v1/mcp-servers", tag = "mcp-servers", security(("bearer" = [])), responses((status = 200, body = ListResponse<McpServer>)))]
pub async fn list(
    scope: Scope,
    State(s): State<AppState>,
) -> ApiResult<Json<ListResponse<McpServer>>> {
    let servers: Vec<McpServer> = s.store.list(&scope.workspace).await?;
    Ok(Json(ListResponse::new(
        servers.into_iter().map(masked).collect(),
    )))
}

#[utoipa::path(get, operation_id = "getMcpServer", path = "/v1/mcp-servers/{id}", tag = "mcp-servers", security(("bearer" = [])),
    responses((status = 200, body = McpServer), (status = 404, body = ErrorResponse)))]
pub async fn read(
    scope: Scope,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<McpServer>> {
    load(&s, &scope.workspace, &id)
        .await
        .map(|m| Json(masked(m)))
}

/// Replace an MCP server. Changing a stdio server needs the admin token.
#[utoipa::path(put, operation_id = "replaceMcpServer", path = "/v1/mcp-servers/{id}", tag = "mcp-servers", request_body = McpServer, security(("bearer" = [])),
    responses((status = 200, body = McpServer), (status = 403, body = ErrorResponse), (status = 404, body = ErrorResponse), (status = 422, body = ErrorResponse)))]
pub async fn replace(
    scope: Scope,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ApiJson(mut server): ApiJson<McpServer>,
) -> ApiResult<Json<McpServer>> {
    let existing = load(&s, &scope.workspace, &id).await?;
    stdio_needs_admin(&scope, &existing, "change")?;
    check(&s, &scope, &server).await?;
    keep_masked_env(&mut server, Some(&existing))?;
    let Json(saved) = replace_doc(&s, &scope.workspace, &id, server).await?;
    s.runtime.mcp_server_changed(&scope.workspace, &id);
    Ok(Json(masked(saved)))
}

/// A stdio server may be changed or deleted with the admin token only.
fn stdio_needs_admin(scope: &Scope, existing: &McpServer, what: &str) -> ApiResult<()> {
    if matches!(existing.transport, McpTransport::Stdio { .. }) && !scope.is_admin {
        return Err(ApiError::forbidden(
            "stdio_requires_admin",
            format!("only the admin token may {what} a stdio MCP server"),
        )
        .with_field("transport.type"));
    }
    Ok(())
}

/// Delete an MCP server no tool uses. Deleting a stdio server needs the
/// admin token.
#[utoipa::path(delete, operation_id = "deleteMcpServer", path = "/v1/mcp-servers/{id}", tag = "mcp-servers", security(("bearer" = [])),
    responses((status = 204), (status = 403, body = ErrorResponse), (status = 404, body = ErrorResponse), (status = 409, body = ErrorResponse)))]
pub async fn remove(
    scope: Scope,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<StatusCode> {
    let existing = load(&s, &scope.workspace, &id).await?;
    stdio_needs_admin(&scope, &existing, "delete")?;
    let status = delete_doc::<McpServer>(&s, &scope.workspace, &id).await?;
    s.runtime.mcp_server_changed(&scope.workspace, &id);
    Ok(status)
}

/// List the server's tools with their input schemas, on its pooled
/// connection; at most one fresh listing per server every 5 s (answered
/// from the last one in between). A server that cannot be reached or
/// started answers 424 `mcp_unavailable`: the stored configuration points
/// at something that fails, which is not a fault of this server (no 5xx).
#[utoipa::path(get, operation_id = "listMcpServerTools", path = "/v1/mcp-servers/{id}/tools", tag = "mcp-servers", security(("bearer" = [])),
    responses((status = 200, body = ListResponse<McpToolInfo>), (status = 404, body = ErrorResponse), (status = 424, body = ErrorResponse, description = "`mcp_unavailable`: the MCP server could not be reached or started; `message` says why")))]
pub async fn discover(
    scope: Scope,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<ListResponse<McpToolInfo>>> {
    let server = load(&s, &scope.workspace, &id).await?;
    let tools = list_remote_tools(&s, &scope.workspace, &server)
        .await?
        .map_err(|e| ApiError::new(StatusCode::FAILED_DEPENDENCY, "mcp_unavailable", e))?;
    Ok(Json(ListResponse::new(tools)))
}

pub(crate) async fn load(s: &AppState, workspace: &str, id: &str) -> ApiResult<McpServer> {
    super::load(s, workspace, id).await
}

/// The remote tools of a server, or a message safe to show (no secrets).
pub(crate) async fn list_remote_tools(
    s: &AppState,
    workspace: &str,
    server: &McpServer,
) -> ApiResult<Result<Vec<McpToolInfo>, String>> {
    match s.runtime.mcp_server_tools(workspace, server).await {
        Ok(tools) => Ok(Ok(tools)),
        Err(rtc_runtime::McpToolsError::Unavailable(message)) => Ok(Err(message)),
        Err(rtc_runtime::McpToolsError::Platform(e)) => Err(e.into()),
    }
}
