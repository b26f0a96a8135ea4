//! The web console (R-API-8): plain HTML, CSS and ES modules embedded in
//! the binary and served at `/` — no build step, no separate server. The
//! console calls only the public REST and WebSocket API with the
//! workspace key the operator signs in with. The host SDK (`sdk/js`) is
//! served beside it at `/sdk/rtc-agent.js` with its `.d.ts`; the
//! playground imports it from there.

use axum::Router;
use axum::extract::Path;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

/// Every console file: its path under `/console/` and its text.
const FILES: &[(&str, &str)] = &[
    ("index.html", include_str!("../console/index.html")),
    ("style.css", include_str!("../console/style.css")),
    ("app.js", include_str!("../console/app.js")),
    ("api.js", include_str!("../console/api.js")),
    ("ui.js", include_str!("../console/ui.js")),
    ("binding.js", include_str!("../console/binding.js")),
    ("builtins.js", include_str!("../console/builtins.js")),
    ("expr.js", include_str!("../console/expr.js")),
    ("variables.js", include_str!("../console/variables.js")),
    ("llm.js", include_str!("../console/llm.js")),
    (
        "schema_builder.js",
        include_str!("../console/schema_builder.js"),
    ),
    ("mock_editor.js", include_str!("../console/mock_editor.js")),
    (
        "realtime_audio.js",
        include_str!("../console/realtime_audio.js"),
    ),
    (
        "pcm_capture.worklet.js",
        include_str!("../console/pcm_capture.worklet.js"),
    ),
    (
        "pages/secrets.js",
        include_str!("../console/pages/secrets.js"),
    ),
    ("pages/mcp.js", include_str!("../console/pages/mcp.js")),
    ("pages/tools.js", include_str!("../console/pages/tools.js")),
    (
        "pages/tool_test.js",
        include_str!("../console/pages/tool_test.js"),
    ),
    (
        "pages/assistants.js",
        include_str!("../console/pages/assistants.js"),
    ),
    ("pages/tests.js", include_str!("../console/pages/tests.js")),
    (
        "pages/test_expectations.js",
        include_str!("../console/pages/test_expectations.js"),
    ),
    (
        "pages/test_draft.js",
        include_str!("../console/pages/test_draft.js"),
    ),
    (
        "pages/providers.js",
        include_str!("../console/pages/providers.js"),
    ),
    (
        "pages/workspaces.js",
        include_str!("../console/pages/workspaces.js"),
    ),
    (
        "pages/realtime.js",
        include_str!("../console/pages/realtime.js"),
    ),
    (
        "pages/speech.js",
        include_str!("../console/pages/speech.js"),
    ),
    (
        "pages/assistant_voice.js",
        include_str!("../console/pages/assistant_voice.js"),
    ),
    (
        "pages/task_backends.js",
        include_str!("../console/pages/task_backends.js"),
    ),
    ("pages/tasks.js", include_str!("../console/pages/tasks.js")),
    (
        "pages/sessions.js",
        include_str!("../console/pages/sessions.js"),
    ),
    (
        "pages/event_log.js",
        include_str!("../console/pages/event_log.js"),
    ),
    (
        "pages/playground.js",
        include_str!("../console/pages/playground.js"),
    ),
    (
        "pages/playground_voice.js",
        include_str!("../console/pages/playground_voice.js"),
    ),
    (
        "pages/panels.js",
        include_str!("../console/pages/panels.js"),
    ),
    (
        "pages/workflows.js",
        include_str!("../console/pages/workflows.js"),
    ),
    (
        "pages/workflows/graph.js",
        include_str!("../console/pages/workflows/graph.js"),
    ),
    (
        "pages/workflows/model.js",
        include_str!("../console/pages/workflows/model.js"),
    ),
    (
        "pages/workflows/nodes.js",
        include_str!("../console/pages/workflows/nodes.js"),
    ),
    (
        "pages/workflows/edges.js",
        include_str!("../console/pages/workflows/edges.js"),
    ),
    (
        "pages/workflows/globals.js",
        include_str!("../console/pages/workflows/globals.js"),
    ),
    (
        "pages/workflows/live.js",
        include_str!("../console/pages/workflows/live.js"),
    ),
];

/// Scripts, styles and connections come from this server only.
const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self' ws: wss:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

pub fn router() -> Router {
    Router::new()
        .route("/", get(|| async { asset("index.html") }))
        .route(
            "/console/{*file}",
            get(|Path(file): Path<String>| async move { asset(&file) }),
        )
        .route(
            "/sdk/rtc-agent.js",
            get(|| async { sdk(SDK_JS, "text/javascript; charset=utf-8") }),
        )
        .route(
            "/sdk/rtc-agent.d.ts",
            get(|| async { sdk(SDK_TYPES, "application/typescript; charset=utf-8") }),
        )
}

/// The host SDK, as published (`sdk/js`).
pub const SDK_JS: &str = include_str!("../../../sdk/js/rtc-agent.js");
pub const SDK_TYPES: &str = include_str!("../../../sdk/js/rtc-agent.d.ts");

/// An SDK file: any page may load it (it holds no data).
fn sdk(text: &'static str, kind: &'static str) -> Response {
    let mut response = text.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

fn asset(path: &str) -> Response {
    let Some((_, text)) = FILES.iter().find(|(p, _)| *p == path) else {
        return (StatusCode::NOT_FOUND, "no such console file").into_response();
    };
    let kind = match path.rsplit('.').next() {
        Some("html") => "text/html; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        _ => "text/javascript; charset=utf-8",
    };
    let mut response = on_disk(path)
        .unwrap_or_else(|| (*text).to_owned())
        .into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

/// Debug builds only: with `RTC_CONSOLE_DIR` set (to `crates/server/console`),
/// an embedded file is read from that folder instead, so console work needs
/// no rebuild. Only the embedded names are looked up, never another path.
fn on_disk(path: &str) -> Option<String> {
    if !cfg!(debug_assertions) {
        return None;
    }
    let dir = std::env::var_os("RTC_CONSOLE_DIR")?;
    std::fs::read_to_string(std::path::Path::new(&dir).join(path)).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_module_the_console_imports_is_served() {
        for (path, text) in FILES {
            for line in text.lines().filter(|l| l.starts_with("import ")) {
                let Some(spec) = line.split('\'').nth(1).or_else(|| line.split('"').nth(1)) else {
                    continue;
                };
                // The SDK is served beside the console, not under it.
                if spec == "/sdk/rtc-agent.js" {
                    assert!(SDK_JS.contains("export class RtcSession"));
                    continue;
                }
                let dir = path.rsplit_once('/').map_or("", |(d, _)| d);
                let mut parts: Vec<&str> = dir.split('/').filter(|p| !p.is_empty()).collect();
                for seg in spec.split('/') {
                    match seg {
                        "." => {}
                        ".." => {
                            parts.pop();
                        }
                        s => parts.push(s),
                    }
                }
                let target = parts.join("/");
                assert!(
                    FILES.iter().any(|(p, _)| *p == target),
                    "{path} imports {spec}, which is not embedded"
                );
            }
        }
    }
}
