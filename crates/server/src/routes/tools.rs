//! Tool resources (R-TR-1..5): HTTP, MCP and client tools.

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use rtc_core::tool_rules::{ToolContext, validate_tool};
use rtc_protocol::{
    Assistant, ErrorResponse, ListResponse, TaskBackend, Tool, ToolKind, ToolTestRequest,
    ToolTestResult, Workflow,
};
use rtc_store::ResourceKind;
use serde_json::Value;

use super::{
    assistants, chosen_id, delete_doc, mcp_servers, replace_doc, task_backends, workflows,
};
use crate::extract::{ApiJson, ApiPath, RawJson, Scope, parse_value};
use crate::{ApiError, ApiResult, AppState};

/// The 400 of tool writes.
const SYSTEM_TOOLS: &str = "`system_tools_are_builtin` naming `type` (`type: \"system\"`: built-in tools are configured in `builtInTools`); or a malformed request: `invalid_json`, `invalid_body`, `invalid_path`, `workspace_required`.";

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/tools", post(create).get(list))
        .route("/v1/tools/{id}", get(read).put(replace).delete(remove))
        .route("/v1/tools/{id}/test", post(test))
}

/// A tool body: `type: "system"` (the earlier format's built-ins) is
/// refused before the shape, with a pointer to `builtInTools`.
fn read_tool(body: Value) -> ApiResult<Tool> {
    if body.get("type").and_then(Value::as_str) == Some("system") {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "system_tools_are_builtin",
            "there are no `system` tools: the built-in tools (endConversation, updateState, skipTurn, requestHumanHandoff) are configured in `builtInTools` of an assistant, a workflow or a workflow stage",
        )
        .with_field("type"));
    }
    let mut tool: Tool = parse_value(body)?;
    tool.warnings.clear();
    Ok(tool)
}

/// Validate a tool against the workspace; an `mcp` tool's schema is
/// discovered from its server and pinned.
async fn check(s: &AppState, workspace: &str, tool: Tool) -> ApiResult<Tool> {
    let secrets = s.store.secret_names(workspace).await?;
    let discovered = match (&tool.kind, &tool.mcp) {
        (ToolKind::Mcp, Some(mcp)) => {
            let server = s
                .store
                .get(workspace, &mcp.server_id)
                .await?
                .ok_or_else(|| {
                    ApiError::unprocessable(
                        "unknown_mcp_server",
                        "mcp.serverId",
                        format!(
                            "MCP server `{}` does not exist in this workspace",
                            mcp.server_id
                        ),
                    )
                })?;
            let tools = mcp_servers::list_remote_tools(s, workspace, &server)
                .await?
                .map_err(|e| {
                    ApiError::unprocessable(
                        "mcp_unreachable",
                        "mcp.serverId",
                        format!(
                            "could not list the tools of MCP server `{}`: {e}",
                            mcp.server_id
                        ),
                    )
                })?;
            tools.into_iter().find(|t| t.name == mcp.remote_tool_name)
        }
        _ => None,
    };
    let ctx = ToolContext {
        secret_exists: &|n| secrets.contains(n),
        discovered: discovered.as_ref(),
        is_reserved: &rtc_runtime::is_reserved_tool_name,
    };
    Ok(validate_tool(tool, &ctx)?)
}

/// Create a tool resource.
#[utoipa::path(post, operation_id = "createTool", path = "/v1/tools", tag = "tools", request_body = Tool, security(("bearer" = [])),
    responses((status = 201, body = Tool), (status = 400, body = ErrorResponse, description = SYSTEM_TOOLS), (status = 409, body = ErrorResponse), (status = 422, body = ErrorResponse)))]
pub async fn create(
    scope: Scope,
    State(s): State<AppState>,
    RawJson(body): RawJson,
) -> ApiResult<(StatusCode, Json<Tool>)> {
    let tool = read_tool(body)?;
    let id = chosen_id(tool.id.clone())?;
    let tool = check(&s, &scope.workspace, tool).await?;
    let warnings = super::save_warnings::for_tool(&s, &tool).await;
    let mut saved = s.store.insert(&scope.workspace, id, tool).await?;
    saved.warnings = warnings;
    Ok((StatusCode::CREATED, Json(saved)))
}

#[utoipa::path(get, operation_id = "listTools", path = "/v1/tools", tag = "tools", security(("bearer" = [])), responses((status = 200, body = ListResponse<Tool>)))]
pub async fn list(scope: Scope, State(s): State<AppState>) -> ApiResult<Json<ListResponse<Tool>>> {
    Ok(Json(ListResponse::new(
        s.store.list(&scope.workspace).await?,
    )))
}

#[utoipa::path(get, operation_id = "getTool", path = "/v1/tools/{id}", tag = "tools", security(("bearer" = [])),
    responses((status = 200, body = Tool), (status = 404, body = ErrorResponse)))]
pub async fn read(
    scope: Scope,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<Tool>> {
    super::load::<Tool>(&s, &scope.workspace, &id)
        .await
        .map(Json)
}

/// Replace a tool. Refused (409) when an assistant's, a workflow's or a
/// task backend's bindings would no longer be valid with the new
/// definition.
#[utoipa::path(put, operation_id = "replaceTool", path = "/v1/tools/{id}", tag = "tools", request_body = Tool, security(("bearer" = [])),
    responses((status = 200, body = Tool), (status = 400, body = ErrorResponse, description = SYSTEM_TOOLS), (status = 404, body = ErrorResponse), (status = 409, body = ErrorResponse), (status = 422, body = ErrorResponse)))]
pub async fn replace(
    scope: Scope,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<String>,
    RawJson(body): RawJson,
) -> ApiResult<Json<Tool>> {
    let tool = read_tool(body)?;
    if s.store.get::<Tool>(&scope.workspace, &id).await?.is_none() {
        return Err(ApiError::not_found("tool", &id));
    }
    let mut tool = check(&s, &scope.workspace, tool).await?;
    tool.id = Some(id.clone());
    for r in s
        .store
        .referrers(&scope.workspace, ResourceKind::Tool, &id)
        .await?
    {
        let (what, code, check) = match r.kind {
            ResourceKind::Assistant => {
                let Some(a) = s.store.get::<Assistant>(&scope.workspace, &r.id).await? else {
                    continue;
                };
                let check = assistants::validate(&s, &scope.workspace, &a, Some(&tool)).await;
                ("assistant", "breaks_assistant", check)
            }
            ResourceKind::Workflow => {
                let Some(w) = s.store.get::<Workflow>(&scope.workspace, &r.id).await? else {
                    continue;
                };
                let check = workflows::validate(&s, &scope.workspace, &w, Some(&tool)).await;
                ("workflow", "breaks_workflow", check)
            }
            ResourceKind::TaskBackend => {
                let Some(b) = s.store.get::<TaskBackend>(&scope.workspace, &r.id).await? else {
                    continue;
                };
                let check = task_backends::validate(&s, &scope.workspace, &b, Some(&tool)).await;
                ("task backend", "breaks_task_backend", check)
            }
            _ => continue,
        };
        if let Err(e) = check {
            return Err(ApiError::conflict(
                code,
                format!(
                    "this change would make {what} `{}` invalid at `{}`: {}",
                    r.id,
                    e.field.as_deref().unwrap_or(""),
                    e.message
                ),
            ));
        }
    }
    let warnings = super::save_warnings::for_tool(&s, &tool).await;
    let Json(mut saved) = replace_doc(&s, &scope.workspace, &id, tool).await?;
    saved.warnings = warnings;
    Ok(Json(saved))
}

/// Delete a tool no assistant or workflow uses.
#[utoipa::path(delete, operation_id = "deleteTool", path = "/v1/tools/{id}", tag = "tools", security(("bearer" = [])),
    responses((status = 204), (status = 404, body = ErrorResponse), (status = 409, body = ErrorResponse)))]
pub async fn remove(
    scope: Scope,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<StatusCode> {
    delete_doc::<Tool>(&s, &scope.workspace, &id).await
}

/// Run an HTTP or MCP tool once with sample arguments, as a session would
/// (the outbound guard, its secrets revealed and scrubbed from the
/// answer). A failing tool answers 200 with `ok: false` and the error the
/// model would read; bad arguments answer 422 naming the field.
#[utoipa::path(post, operation_id = "testTool", path = "/v1/tools/{id}/test", tag = "tools", request_body = ToolTestRequest, security(("bearer" = [])),
    responses((status = 200, body = ToolTestResult), (status = 404, body = ErrorResponse),
        (status = 422, body = ErrorResponse, description = "`invalid_arguments` naming `arguments`, `missing_input`/`unknown_input` naming `inputs.<name>`, `client_tool_not_runnable` naming `type`"),
        (status = 429, body = ErrorResponse, description = "`too_many_tool_tests`: the workspace has its most tool tests running")))]
pub async fn test(
    scope: Scope,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ApiJson(request): ApiJson<ToolTestRequest>,
) -> ApiResult<Json<ToolTestResult>> {
    let tool = super::load::<Tool>(&s, &scope.workspace, &id).await?;
    Ok(Json(
        s.runtime
            .test_tool(&scope.workspace, &tool, request)
            .await?,
    ))
}
