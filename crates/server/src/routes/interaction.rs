//! What the model's interaction built-ins show the host: the todo list
//! (R-TD), the askUser question a session (or a sub-agent below it) waits
//! on, and the answers (R-AU-2, R-BX-4/5), goals, loops and the sub-agent
//! tree. The session's client token is enough for all three.

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use rtc_protocol::{
    AnswerParams, AnswerResponse, ErrorResponse, Goal, ListResponse, Loop, QuestionState,
    ResumeGoalParams, SessionTreeNode, TodoList,
};

use crate::extract::{ApiJson, ApiPath, Scope, SessionAccess};
use crate::{ApiResult, AppState};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/sessions/{id}/todos", get(todos))
        .route("/v1/sessions/{id}/question", get(question))
        .route("/v1/sessions/{id}/answers", post(answer))
        .route("/v1/sessions/{id}/goals", get(goals))
        .route("/v1/sessions/{id}/loops", get(loops))
        .route("/v1/sessions/{id}/tree", get(tree))
        .route(
            "/v1/sessions/{id}/goals/{goal_id}/resume",
            post(resume_goal),
        )
}

/// The session and the sub-agents below it, each with its own children
/// (R-SA-1): ids, titles, status, mode and whether it is working.
#[utoipa::path(get, operation_id = "getSessionTree", path = "/v1/sessions/{id}/tree", tag = "sessions", security(("bearer" = []), ("sessionToken" = [])),
    responses((status = 200, body = SessionTreeNode), (status = 404, body = ErrorResponse)))]
pub async fn tree(
    access: SessionAccess,
    State(s): State<AppState>,
) -> ApiResult<Json<SessionTreeNode>> {
    Ok(Json(
        s.runtime.tree(&access.workspace, &access.session).await?,
    ))
}

/// The session's goals, oldest first.
#[utoipa::path(get, operation_id = "listSessionGoals", path = "/v1/sessions/{id}/goals", tag = "sessions", security(("bearer" = []), ("sessionToken" = [])),
    responses((status = 200, body = ListResponse<Goal>), (status = 404, body = ErrorResponse)))]
pub async fn goals(
    access: SessionAccess,
    State(s): State<AppState>,
) -> ApiResult<Json<ListResponse<Goal>>> {
    let goals = s.runtime.goals(&access.workspace, &access.session).await?;
    Ok(Json(ListResponse::new(goals)))
}

/// The session's loops, oldest first.
#[utoipa::path(get, operation_id = "listSessionLoops", path = "/v1/sessions/{id}/loops", tag = "sessions", security(("bearer" = []), ("sessionToken" = [])),
    responses((status = 200, body = ListResponse<Loop>), (status = 404, body = ErrorResponse)))]
pub async fn loops(
    access: SessionAccess,
    State(s): State<AppState>,
) -> ApiResult<Json<ListResponse<Loop>>> {
    let loops = s.runtime.loops(&access.workspace, &access.session).await?;
    Ok(Json(ListResponse::new(loops)))
}

/// Raise a goal's limits and make it active again; only the host may (the
/// workspace key, not the session's client token).
#[utoipa::path(post, operation_id = "resumeSessionGoal", path = "/v1/sessions/{id}/goals/{goal_id}/resume", tag = "sessions", request_body = ResumeGoalParams, security(("bearer" = [])),
    responses((status = 200, body = Goal), (status = 404, body = ErrorResponse),
        (status = 409, body = ErrorResponse, description = "`goal_finished`"), (status = 422, body = ErrorResponse)))]
pub async fn resume_goal(
    scope: Scope,
    State(s): State<AppState>,
    ApiPath((id, goal_id)): ApiPath<(String, String)>,
    ApiJson(p): ApiJson<ResumeGoalParams>,
) -> ApiResult<Json<Goal>> {
    Ok(Json(
        s.runtime
            .resume_goal(&scope.workspace, &id, &goal_id, p)
            .await?,
    ))
}

/// The model's todo list, as last written.
#[utoipa::path(get, operation_id = "getSessionTodos", path = "/v1/sessions/{id}/todos", tag = "sessions", security(("bearer" = []), ("sessionToken" = [])),
    responses((status = 200, body = TodoList), (status = 404, body = ErrorResponse)))]
pub async fn todos(access: SessionAccess, State(s): State<AppState>) -> ApiResult<Json<TodoList>> {
    let todos = s.runtime.todos(&access.workspace, &access.session).await?;
    Ok(Json(TodoList { todos }))
}

/// The askUser question the session waits on (`pending: null` when none).
#[utoipa::path(get, operation_id = "getSessionQuestion", path = "/v1/sessions/{id}/question", tag = "sessions", security(("bearer" = []), ("sessionToken" = [])),
    responses((status = 200, body = QuestionState), (status = 404, body = ErrorResponse)))]
pub async fn question(
    access: SessionAccess,
    State(s): State<AppState>,
) -> ApiResult<Json<QuestionState>> {
    let pending = s
        .runtime
        .pending_question(&access.workspace, &access.session)
        .await?;
    Ok(Json(QuestionState { pending }))
}

/// Answer the pending question: per question an option's label, its number
/// (1–4) or free text ("Other"); a list (or comma-separated labels) for a
/// multi-select question. The model's next turn starts.
#[utoipa::path(post, operation_id = "answerSessionQuestion", path = "/v1/sessions/{id}/answers", tag = "sessions", request_body = AnswerParams, security(("bearer" = []), ("sessionToken" = [])),
    responses((status = 202, body = AnswerResponse), (status = 404, body = ErrorResponse),
        (status = 409, body = ErrorResponse, description = "`no_pending_question`, `stale_question`, `session_ended`"),
        (status = 422, body = ErrorResponse, description = "`invalid_answer` naming `answers[i]`")))]
pub async fn answer(
    access: SessionAccess,
    State(s): State<AppState>,
    ApiJson(p): ApiJson<AnswerParams>,
) -> ApiResult<(StatusCode, Json<AnswerResponse>)> {
    let answered = s
        .runtime
        .answer(&access.workspace, &access.session, p)
        .await?;
    Ok((StatusCode::ACCEPTED, Json(answered)))
}
