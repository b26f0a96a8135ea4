//! Liveness, readiness, metrics, and the JSON 404/405 answers.

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::json;

use crate::{ApiError, AppState, observe};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
}

/// The process is alive.
#[utoipa::path(get, operation_id = "getHealth", path = "/healthz", tag = "health", responses((status = 200, description = "alive")))]
pub async fn healthz() -> impl IntoResponse {
    axum::Json(json!({"status": "ok"}))
}

/// The process can serve: the database answers.
#[utoipa::path(get, operation_id = "getReadiness", path = "/readyz", tag = "health", responses((status = 200, description = "ready"), (status = 503, description = "database unavailable")))]
pub async fn readyz(State(state): State<AppState>) -> Response {
    match state.store.ping().await {
        Ok(()) => axum::Json(json!({"status": "ready"})).into_response(),
        Err(e) => {
            tracing::warn!(error = %e, "readiness check failed");
            ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "not_ready",
                "the database is unavailable",
            )
            .into_response()
        }
    }
}

/// Prometheus metrics.
#[utoipa::path(get, operation_id = "getMetrics", path = "/metrics", tag = "health", responses((status = 200, description = "Prometheus text format", content_type = "text/plain")))]
pub async fn metrics() -> Response {
    let body = observe::metrics_handle()
        .map(|h| h.render())
        .unwrap_or_default();
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], body).into_response()
}

pub async fn not_found() -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "not_found", "no such endpoint")
}

pub async fn method_not_allowed() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        "this endpoint does not accept that method",
    )
}
