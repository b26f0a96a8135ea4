//! Requests that change a session run to their end even when the client
//! goes away. hyper drops a request's future when its connection closes,
//! and a change stopped halfway leaves the session stuck — created without
//! its first message, an answer taken but not stored, a task cancelled
//! with its report never delivered — where a change done with nobody left
//! to tell is only unacknowledged. Reads stay tied to their client, and so
//! do probes outside these routes (provider and tool checks, test runs),
//! whose work stops with it.

use axum::extract::{Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::{ApiError, AppState};

/// Middleware: a request that is not a read runs on the runtime's
/// supervised tasks, to its end.
pub async fn to_the_end(State(s): State<AppState>, req: Request, next: Next) -> Response {
    if matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS) {
        return next.run(req).await;
    }
    // In the request's span (`to_the_end` keeps the caller's).
    match s.runtime.to_the_end("the request", next.run(req)).await {
        Ok(response) => response,
        Err(e) => ApiError::from(e).into_response(),
    }
}
