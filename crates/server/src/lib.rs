//! The HTTP face of rtc-agent: the axum router of the REST API (R-API-4),
//! authentication, the mapping of errors to status codes, the OpenAPI
//! document and Swagger UI, health and Prometheus metrics. The only crate
//! that knows routes and status codes.

mod auth;
mod body_schema;
mod completion;
mod console;
mod error;
mod extract;
mod observe;
mod openapi;
mod rate;
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
pub use rate::{PerMinute, PerMinuteEach, ProviderChecks};

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
    /// Origins whose pages may call the API from the browser (CORS);
    /// `*` for any. Empty: none (same-origin pages, such as the console,
    /// need none).
    pub cors_origins: Vec<String>,
    /// When set, `GET /metrics` needs this bearer token.
    pub metrics_auth: Option<AdminAuth>,
    /// Provider checks admitted per minute, over the whole server (each
    /// is a model request the operator pays for) and per caller.
    pub provider_checks: std::sync::Arc<ProviderChecks>,
    /// Speech interface checks admitted per minute, per workspace: each
    /// is a request to the workspace's provider or an espeak process.
    pub speech_checks: std::sync::Arc<PerMinuteEach>,
}

/// The CORS answer for `origins` (none when empty). Bearer tokens are not
/// sent by browsers on their own, so no credentials are allowed.
fn cors(origins: &[String]) -> Option<tower_http::cors::CorsLayer> {
    use axum::http::{HeaderName, HeaderValue, Method, header};
    use tower_http::cors::{AllowOrigin, CorsLayer};
    if origins.is_empty() {
        return None;
    }
    let allow = if origins.iter().any(|o| o == "*") {
        AllowOrigin::any()
    } else {
        AllowOrigin::list(origins.iter().filter_map(|o| HeaderValue::from_str(o).ok()))
    };
    Some(
        CorsLayer::new()
            .allow_origin(allow)
            .allow_methods([Method::GET, Method::POST, Method::PUT, Method::DELETE])
            .allow_headers([
                header::AUTHORIZATION,
                header::CONTENT_TYPE,
                HeaderName::from_static(extract::WORKSPACE_HEADER),
                HeaderName::from_static("last-event-id"),
            ])
            .max_age(Duration::from_secs(600)),
    )
}

/// The routes that change a session (create, message, answer, end,
/// hand-off, cancel a task): each runs to its end even when its client
/// goes away (`completion`).
fn session_changes(state: &AppState) -> Router<AppState> {
    Router::new()
        .merge(routes::sessions::router())
        .merge(routes::interaction::router())
        .merge(routes::tasks::router())
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            completion::to_the_end,
        ))
}

/// The whole application router.
pub fn router(state: AppState) -> Router {
    body_schema::prepare();
    let max_body = state.limits.max_body_bytes;
    let cors = cors(&state.cors_origins);
    observe::metrics_handle();
    let app = Router::new()
        .merge(routes::health::router())
        .merge(routes::workspaces::router())
        .merge(routes::secrets::router())
        .merge(routes::mcp_servers::router())
        .merge(routes::tools::router())
        .merge(routes::task_backends::router())
        .merge(routes::realtime::router())
        .merge(routes::speech::router())
        .merge(routes::assistants::router())
        .merge(routes::workflows::router())
        .merge(routes::providers::router())
        .merge(routes::conversation_tests::assistant_tests::router())
        .merge(routes::conversation_tests::workflow_tests::router())
        .merge(session_changes(&state))
        .merge(routes::memories::router())
        .merge(routes::usage::router())
        .merge(routes::live::router())
        .route_layer(axum::middleware::from_fn(observe::record_request))
        .fallback(routes::health::not_found)
        .method_not_allowed_fallback(routes::health::method_not_allowed)
        .with_state(state)
        .merge(openapi::docs_router())
        .merge(console::router())
        .layer(DefaultBodyLimit::max(max_body))
        .layer(TraceLayer::new_for_http().make_span_with(observe::request_span))
        .layer(CatchPanicLayer::custom(observe::panic_response));
    match cors {
        Some(layer) => app.layer(layer),
        None => app,
    }
}
