//! Workflows (R-WF, design §2 and §4): `specVersion: 4` documents only.
//! Unlike the other resources, every failure of the document answers 400
//! (not 422), naming its field, as the design mandates: the version gate on
//! the raw JSON first, then the v4 shape, then the validator.

use std::collections::{BTreeMap, BTreeSet};

use axum::extract::{FromRequest, Request, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use rtc_core::workflow_parse::parse_workflow;
use rtc_core::workflow_rules::{WorkflowContext, validate_workflow};
use rtc_core::workflow_stage::{referenced_assistants, referenced_tools};
use rtc_protocol::{Assistant, ErrorResponse, ListResponse, Tool, Workflow};
use serde_json::Value;
use utoipa::ToSchema;

use super::{chosen_id, delete_doc, replace_doc};
use crate::extract::{ApiPath, RawJson, Scope, shape_error};
use crate::{ApiError, ApiResult, AppState};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/workflows", post(create).get(list))
        .route("/v1/workflows/{id}", get(read).put(replace).delete(remove))
}

/// An error of the document, as the 400 workflows answer.
fn bad(mut e: ApiError) -> ApiError {
    if e.status == StatusCode::UNPROCESSABLE_ENTITY {
        e.status = StatusCode::BAD_REQUEST;
    }
    e
}

/// A workflow body before it is read: the JSON checks of every body, with
/// their 422s answered as 400s.
pub struct WorkflowBody(Value);

impl<S: Send + Sync> FromRequest<S> for WorkflowBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        match RawJson::from_request(req, state).await {
            Ok(RawJson(v)) => Ok(Self(v)),
            Err(e) => Err(bad(e)),
        }
    }
}

/// The body as a workflow: `specVersion` 4, the v4 shape with the path of
/// an unknown or malformed field, the schema of the served document.
fn read_document(value: &Value) -> ApiResult<Workflow> {
    let w = parse_workflow(value).map_err(ApiError::bad_request)?;
    match shape_error(&Workflow::name(), value) {
        Some(e) => Err(bad(e)),
        None => Ok(w),
    }
}

/// Validate a workflow against the workspace: the tools it binds (with
/// `replacement` standing in for the stored version of one of them), the
/// assistants it transfers to, its realtime interface, the providers.
pub(crate) async fn validate(
    s: &AppState,
    workspace: &str,
    w: &Workflow,
    replacement: Option<&Tool>,
) -> ApiResult<()> {
    let mut tools: BTreeMap<String, Tool> =
        s.store.get_many(workspace, referenced_tools(w)).await?;
    if let Some(t) = replacement
        && let Some(id) = t.id.as_ref().filter(|id| tools.contains_key(*id))
    {
        tools.insert(id.clone(), t.clone());
    }
    let assistants: BTreeSet<String> = s
        .store
        .get_many::<Assistant>(workspace, referenced_assistants(w))
        .await?
        .into_keys()
        .collect();
    let iface = match &w.realtime_interface_id {
        Some(id) => rtc_runtime::find_interface(&s.store, workspace, id).await?,
        None => None,
    };
    let providers = s.runtime.provider_names();
    let ctx = WorkflowContext {
        tools: &tools,
        assistants: &assistants,
        realtime_interface: iface.as_ref(),
        providers: &providers,
        update_bounds: s.runtime.update_bounds(),
    };
    validate_workflow(w, &ctx).map_err(ApiError::bad_request)
}

/// Create a workflow. Only `specVersion: 4` is accepted; earlier formats
/// go through `rtc-agent import-v3` and `rtc-agent migrate`.
#[utoipa::path(post, operation_id = "createWorkflow", path = "/v1/workflows", tag = "workflows", request_body = Workflow, security(("bearer" = [])),
    responses((status = 201, body = Workflow),
        (status = 400, body = ErrorResponse, description = "The document is refused; `field` names the offending item (`nodes[1].binding.argumentBindings.order_id`, `edges[2].to`): `unsupported_spec_version` (not version 4; the message points to the migration), `unknown_field`, `invalid_field`, or a validation code of the design's §4 (`dangling_edge`, `unreachable_node`, `non_exhaustive_routing`, `llm_leaf_not_allowed`, `model_source_not_allowed`, …); or a malformed request: `invalid_json`, `invalid_body` (not a JSON object), `workspace_required`."),
        (status = 409, body = ErrorResponse)))]
pub async fn create(
    scope: Scope,
    State(s): State<AppState>,
    WorkflowBody(body): WorkflowBody,
) -> ApiResult<(StatusCode, Json<Workflow>)> {
    let w = read_document(&body)?;
    let id = chosen_id(w.id.clone()).map_err(bad)?;
    validate(&s, &scope.workspace, &w, None).await?;
    Ok((
        StatusCode::CREATED,
        Json(s.store.insert(&scope.workspace, id, w).await?),
    ))
}

#[utoipa::path(get, operation_id = "listWorkflows", path = "/v1/workflows", tag = "workflows", security(("bearer" = [])), responses((status = 200, body = ListResponse<Workflow>)))]
pub async fn list(
    scope: Scope,
    State(s): State<AppState>,
) -> ApiResult<Json<ListResponse<Workflow>>> {
    Ok(Json(ListResponse::new(
        s.store.list(&scope.workspace).await?,
    )))
}

#[utoipa::path(get, operation_id = "getWorkflow", path = "/v1/workflows/{id}", tag = "workflows", security(("bearer" = [])),
    responses((status = 200, body = Workflow), (status = 404, body = ErrorResponse)))]
pub async fn read(
    scope: Scope,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<Workflow>> {
    super::load(&s, &scope.workspace, &id).await.map(Json)
}

/// Replace a workflow; the document is checked as on create.
#[utoipa::path(put, operation_id = "replaceWorkflow", path = "/v1/workflows/{id}", tag = "workflows", request_body = Workflow, security(("bearer" = [])),
    responses((status = 200, body = Workflow),
        (status = 400, body = ErrorResponse, description = "The document is refused, as on create: `unsupported_spec_version`, `unknown_field`, `invalid_field` or a validation code of the design's §4; `field` names the offending item. Or a malformed request: `invalid_json`, `invalid_body`, `invalid_path`, `workspace_required`."),
        (status = 404, body = ErrorResponse)))]
pub async fn replace(
    scope: Scope,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<String>,
    WorkflowBody(body): WorkflowBody,
) -> ApiResult<Json<Workflow>> {
    super::load::<Workflow>(&s, &scope.workspace, &id).await?;
    let w = read_document(&body)?;
    validate(&s, &scope.workspace, &w, None).await?;
    replace_doc(&s, &scope.workspace, &id, w).await
}

#[utoipa::path(delete, operation_id = "deleteWorkflow", path = "/v1/workflows/{id}", tag = "workflows", security(("bearer" = [])),
    responses((status = 204), (status = 404, body = ErrorResponse)))]
pub async fn remove(
    scope: Scope,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<StatusCode> {
    delete_doc::<Workflow>(&s, &scope.workspace, &id).await
}
