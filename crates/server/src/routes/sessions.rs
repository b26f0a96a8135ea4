//! Sessions (R-API-4): open, read, send user turns, end, hand off.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use rtc_protocol::{
    CreateSessionParams, CreateSessionResponse, ErrorResponse, ListResponse, Message,
    SendMessageParams, SendMessageResponse, Session,
};
use rtc_store::SessionRecord;
use serde::Deserialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;

use crate::extract::{ApiJson, ApiPath, Scope, SessionAccess};
use crate::{ApiResult, AppState};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/sessions", post(create).get(list))
        .route("/v1/sessions/{id}", get(read))
        .route("/v1/sessions/{id}/messages", get(messages).post(send))
        .route("/v1/sessions/{id}/state", get(state))
        .route("/v1/sessions/{id}/end", post(end))
        .route("/v1/sessions/{id}/handoff/messages", post(handoff_message))
        .route("/v1/sessions/{id}/handoff/release", post(handoff_release))
}

/// Whether a stored configuration snapshot runs in test mode (its `test`
/// is set), read without building the rest of it.
fn runs_in_test_mode(config: &str) -> bool {
    #[derive(Deserialize)]
    struct Probe {
        #[serde(default)]
        test: Option<serde::de::IgnoredAny>,
    }
    serde_json::from_str::<Probe>(config).is_ok_and(|p| p.test.is_some())
}

pub(crate) fn view(r: SessionRecord) -> Session {
    Session {
        id: r.id,
        assistant_id: r.assistant_id,
        workflow_id: r.workflow_id,
        workflow: r.workflow,
        user_id: r.user_id,
        status: r.status,
        parent_session_id: r.parent_id,
        root_session_id: r.root_id,
        title: r.title,
        variables: r.variables,
        end_reason: r.end_reason,
        ended_by: r.ended_by,
        test_mode: runs_in_test_mode(&r.config),
        usage: None,
        created_at: rtc_core::time::rfc3339_from_millis(r.created_at),
        updated_at: rtc_core::time::rfc3339_from_millis(r.updated_at),
    }
}

/// Open a session on an assistant. Runs its startup actions and first message.
#[utoipa::path(post, operation_id = "createSession", path = "/v1/sessions", tag = "sessions", request_body = CreateSessionParams, security(("bearer" = [])),
    responses((status = 201, body = CreateSessionResponse), (status = 422, body = ErrorResponse), (status = 429, description = "the workspace has its most active sessions (`too_many_sessions`)", body = ErrorResponse)))]
pub async fn create(
    scope: Scope,
    State(s): State<AppState>,
    ApiJson(p): ApiJson<CreateSessionParams>,
) -> ApiResult<(StatusCode, Json<CreateSessionResponse>)> {
    Ok((
        StatusCode::CREATED,
        Json(s.runtime.create_session(&scope.workspace, p).await?),
    ))
}

/// The newest sessions of the workspace (at most 200).
#[utoipa::path(get, operation_id = "listSessions", path = "/v1/sessions", tag = "sessions", security(("bearer" = [])), responses((status = 200, body = ListResponse<Session>)))]
pub async fn list(
    scope: Scope,
    State(s): State<AppState>,
) -> ApiResult<Json<ListResponse<Session>>> {
    let all = s.store.list_sessions(&scope.workspace, 200).await?;
    Ok(Json(ListResponse::new(all.into_iter().map(view).collect())))
}

/// Status, variables, parent/root ids, end reason.
#[utoipa::path(get, operation_id = "getSession", path = "/v1/sessions/{id}", tag = "sessions", security(("bearer" = []), ("sessionToken" = [])),
    responses((status = 200, body = Session), (status = 404, body = ErrorResponse)))]
pub async fn read(access: SessionAccess, State(s): State<AppState>) -> ApiResult<Json<Session>> {
    let mut session = view(
        s.runtime
            .session(&access.workspace, &access.session)
            .await?,
    );
    session.usage = Some(
        s.runtime
            .session_usage(&access.workspace, &access.session)
            .await?,
    );
    Ok(Json(session))
}

/// The history.
#[utoipa::path(get, operation_id = "listSessionMessages", path = "/v1/sessions/{id}/messages", tag = "sessions", security(("bearer" = []), ("sessionToken" = [])),
    responses((status = 200, body = ListResponse<Message>), (status = 404, body = ErrorResponse)))]
pub async fn messages(
    access: SessionAccess,
    State(s): State<AppState>,
) -> ApiResult<Json<ListResponse<Message>>> {
    Ok(Json(ListResponse::new(
        s.runtime
            .messages(&access.workspace, &access.session)
            .await?,
    )))
}

/// Send a user turn; answers once it is stored (the reply streams as events).
#[utoipa::path(post, operation_id = "sendSessionMessage", path = "/v1/sessions/{id}/messages", tag = "sessions", request_body = SendMessageParams, security(("bearer" = []), ("sessionToken" = [])),
    responses((status = 202, body = SendMessageResponse), (status = 404, body = ErrorResponse), (status = 409, body = ErrorResponse)))]
pub async fn send(
    access: SessionAccess,
    State(s): State<AppState>,
    ApiJson(p): ApiJson<SendMessageParams>,
) -> ApiResult<(StatusCode, Json<SendMessageResponse>)> {
    let m = s
        .runtime
        .send_user_message(&access.workspace, &access.session, &p.text)
        .await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(SendMessageResponse {
            message_id: m.id,
            accepted: true,
        }),
    ))
}

/// Current variable values.
#[utoipa::path(get, operation_id = "getSessionState", path = "/v1/sessions/{id}/state", tag = "sessions", security(("bearer" = []), ("sessionToken" = [])),
    responses((status = 200, description = "variable values by name"), (status = 404, body = ErrorResponse)))]
pub async fn state(access: SessionAccess, State(s): State<AppState>) -> ApiResult<Json<Value>> {
    let vars: Map<String, Value> = s.runtime.state(&access.workspace, &access.session).await?;
    Ok(Json(serde_json::json!({"variables": vars})))
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EndParams {
    /// At most 1,000 characters by default (`RTC_MAX_END_REASON_CHARS`).
    #[serde(default)]
    pub reason: Option<String>,
}

/// End the session from the host.
#[utoipa::path(post, operation_id = "endSession", path = "/v1/sessions/{id}/end", tag = "sessions", request_body(content = Option<EndParams>), security(("bearer" = []), ("sessionToken" = [])),
    responses((status = 204), (status = 404, body = ErrorResponse), (status = 422, description = "`reason` over its limit (1,000 characters by default), or a body that is not an object", body = ErrorResponse)))]
pub async fn end(
    access: SessionAccess,
    State(s): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<StatusCode> {
    let p: EndParams = crate::extract::parse_optional_json(&headers, &body)?;
    s.runtime
        .end(&access.workspace, &access.session, p.reason)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// A human agent speaks during a handoff.
#[utoipa::path(post, operation_id = "sendHandoffMessage", path = "/v1/sessions/{id}/handoff/messages", tag = "sessions", request_body = SendMessageParams, security(("bearer" = [])),
    responses((status = 201, body = Message), (status = 409, body = ErrorResponse), (status = 422, body = ErrorResponse)))]
pub async fn handoff_message(
    scope: Scope,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ApiJson(p): ApiJson<SendMessageParams>,
) -> ApiResult<(StatusCode, Json<Message>)> {
    Ok((
        StatusCode::CREATED,
        Json(
            s.runtime
                .handoff_message(&scope.workspace, &id, &p.text)
                .await?,
        ),
    ))
}

/// Hand the conversation back to the model.
#[utoipa::path(post, operation_id = "releaseHandoff", path = "/v1/sessions/{id}/handoff/release", tag = "sessions", security(("bearer" = [])),
    responses((status = 204), (status = 409, body = ErrorResponse)))]
pub async fn handoff_release(
    scope: Scope,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<StatusCode> {
    s.runtime.handoff_release(&scope.workspace, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}
