//! Request metrics (Prometheus) and the last-resort panic response.

use std::sync::OnceLock;
use std::time::Instant;

use axum::body::Body;
use axum::extract::{MatchedPath, Request};
use axum::http::Response;
use axum::middleware::Next;
use axum::response::IntoResponse;
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

use crate::ApiError;

static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();

/// The process-wide Prometheus recorder (installed on first use).
pub fn metrics_handle() -> Option<&'static PrometheusHandle> {
    HANDLE
        .get_or_init(|| {
            let recorder = PrometheusBuilder::new().build_recorder();
            let handle = recorder.handle();
            metrics::set_global_recorder(recorder).ok().map(|()| handle)
        })
        .as_ref()
}

/// Count requests and their latency by route template and status.
pub async fn record_request(req: Request, next: Next) -> Response<Body> {
    let start = Instant::now();
    let method = req.method().to_string();
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_else(|| "unmatched".to_owned());
    let response = next.run(req).await;
    let status = response.status().as_u16().to_string();
    let labels = [("method", method), ("route", route), ("status", status)];
    metrics::counter!("rtc_http_requests_total", &labels).increment(1);
    metrics::histogram!("rtc_http_request_duration_seconds", &labels)
        .record(start.elapsed().as_secs_f64());
    response
}

/// A handler panicked: answer 500 without details (the panic is logged).
pub fn panic_response(_err: Box<dyn std::any::Any + Send + 'static>) -> Response<Body> {
    ApiError::internal("handler panicked", &"panic").into_response()
}

/// The span of one request: method and path only. The query is left out
/// because browsers must put the key or client token there
/// (`?token=`, R-API-5), and secrets never reach a log.
pub fn request_span<B>(req: &axum::http::Request<B>) -> tracing::Span {
    tracing::debug_span!("request", method = %req.method(), path = %req.uri().path())
}
