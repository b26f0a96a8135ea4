//! The HTTP face of rtc-agent: the axum router of the REST API (R-API-4),
//! authentication, the mapping of errors to status codes, the OpenAPI
//! document and Swagger UI, health and Prometheus metrics. The only crate
//! that knows routes and status codes.

mod auth;
mod body_schema;
mod console;
mod error;
mod extract;
mod observe;
mod openapi;
mod routes;

use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use rtc_store::Store;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::trace::TraceLayer;

pub use auth::AdminAuth;
pub use error::{ApiError, ApiResult};
pub use extract::WORKSPACE_HEADER;
pub use openapi::api_json;

/// Limits applied to requests.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Largest accepted request body.
    pub max_body_bytes: usize,
    /// How long discovery may take when talking to an MCP server.
    pub mcp_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_body_bytes: 1024 * 1024,
            mcp_timeout: Duration::from_secs(30),
        }
    }
}

/// Everything a handler needs.
#[derive(Clone)]
pub struct AppState {
    pub store: Store,
    pub auth: AdminAuth,
    pub limits: Limits,
    pub runtime: rtc_runtime::Runtime,
    /// Cancelled when the server shuts down: live streams (SSE and
    /// WebSocket) close so the HTTP server can drain.
    pub shutdown: tokio_util::sync::CancellationToken,
}

/// The whole application router.
pub fn router(state: AppState) -> Router {
    body_schema::prepare();
    let max_body = state.limits.max_body_bytes;
    observe::metrics_handle();
    Router::new()
        .merge(routes::health::router())
        .merge(routes::workspaces::router())
        .merge(routes::secrets::router())
        .merge(routes::mcp_servers::router())
        .merge(routes::tools::router())
        .merge(routes::task_backends::router())
        .merge(routes::realtime::router())
        .merge(routes::assistants::router())
        .merge(routes::workflows::router())
        .merge(routes::providers::router())
        .merge(routes::conversation_tests::assistant_tests::router())
        .merge(routes::conversation_tests::workflow_tests::router())
        .merge(routes::sessions::router())
        .merge(routes::interaction::router())
        .merge(routes::tasks::router())
        .merge(routes::memories::router())
        .merge(routes::live::router())
        .route_layer(axum::middleware::from_fn(observe::record_request))
        .fallback(routes::health::not_found)
        .method_not_allowed_fallback(routes::health::method_not_allowed)
        .with_state(state)
        .merge(openapi::docs_router())
        .merge(console::router())
        .layer(DefaultBodyLimit::max(max_body))
        .layer(TraceLayer::new_for_http().make_span_with(observe::request_span))
        .layer(CatchPanicLayer::custom(observe::panic_response))
}
