//! Liveness, readiness, metrics, and the JSON 404/405 answers.

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
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
#[utoipa::path(get, operation_id = "getMetrics", path = "/metrics", tag = "health", responses((status = 200, description = "Prometheus text format", content_type = "text/plain"),
    (status = 401, description = "`RTC_METRICS_TOKEN` is set and the request does not carry it", body = rtc_protocol::ErrorResponse)))]
pub async fn metrics(State(state): State<AppState>, headers: HeaderMap) -> Response {
    if let Some(auth) = &state.metrics_auth {
        let given = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        if !given.is_some_and(|token| auth.is_admin(token.trim())) {
            return ApiError::new(
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                "metrics need `Authorization: Bearer <RTC_METRICS_TOKEN>`",
            )
            .into_response();
        }
    }
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
