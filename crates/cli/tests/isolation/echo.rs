//! Local endpoints that repeat what they receive, for the secret canary:
//! an HTTP service and a minimal MCP server (streamable HTTP answering
//! with plain JSON). Both put the request headers in what they answer —
//! as written, base64-encoded and URL-encoded — so a secret injected into
//! a header comes straight back in results, errors and tool descriptions.

use std::sync::{Arc, Mutex};

use axum::Json;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, post};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

/// The running echo service; its task ends with the test's runtime.
pub struct Echo {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// Every request's headers, as received (to check the secret was sent).
    pub seen: Arc<Mutex<Vec<Value>>>,
}

/// The headers as a JSON object, name → value.
fn dump(headers: &HeaderMap) -> Value {
    let map = headers
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_owned(),
                Value::String(String::from_utf8_lossy(v.as_bytes()).into_owned()),
            )
        })
        .collect();
    Value::Object(map)
}

/// What every answer carries: the headers in three encodings.
pub fn echo_of(headers: &Value) -> Value {
    let plain = headers.to_string();
    json!({
        "headers": headers,
        "base64": STANDARD.encode(&plain),
        "urlencoded": url::form_urlencoded::byte_serialize(plain.as_bytes()).collect::<String>(),
    })
}

impl Echo {
    pub async fn start() -> anyhow::Result<Self> {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = |seen: Arc<Mutex<Vec<Value>>>, headers: &HeaderMap| {
            let d = dump(headers);
            seen.lock().unwrap().push(d.clone());
            d
        };
        let (s1, s2, s3, s4) = (seen.clone(), seen.clone(), seen.clone(), seen.clone());
        let app = axum::Router::new()
            // 200 with the echo.
            .route(
                "/echo",
                any(move |headers: HeaderMap| {
                    let d = record(s1.clone(), &headers);
                    async move { Json(echo_of(&d)) }
                }),
            )
            // 500 with the echo (a failing call).
            .route(
                "/fail",
                any(move |headers: HeaderMap| {
                    let d = record(s2.clone(), &headers);
                    async move { (StatusCode::INTERNAL_SERVER_ERROR, Json(echo_of(&d))) }
                }),
            )
            .route(
                "/mcp",
                post(move |headers: HeaderMap, Json(msg): Json<Value>| {
                    let d = record(s3.clone(), &headers);
                    async move { mcp(&d, &msg) }
                })
                .get(|| async { StatusCode::METHOD_NOT_ALLOWED })
                .delete(|| async { StatusCode::METHOD_NOT_ALLOWED }),
            )
            // An MCP endpoint that fails every request with the echo.
            .route(
                "/mcp-broken",
                any(move |headers: HeaderMap| {
                    let d = record(s4.clone(), &headers);
                    async move { (StatusCode::INTERNAL_SERVER_ERROR, Json(echo_of(&d))) }
                }),
            );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        tokio::spawn(async move { axum::serve(listener, app).await });
        Ok(Self {
            base: format!("http://{addr}"),
            seen,
        })
    }

    /// All headers received so far, as one text.
    pub fn seen_text(&self) -> String {
        serde_json::to_string(&*self.seen.lock().unwrap()).unwrap()
    }
}

/// One JSON-RPC message of the MCP echo server. Its one tool,
/// `echo_headers`, answers with the echo; `{"mode": "tool_error"}` makes it
/// a tool error (`isError`), `{"mode": "rpc_error"}` a JSON-RPC error. The
/// tool's description carries the echo too (a server may say anything in
/// its tool list).
fn mcp(headers: &Value, msg: &Value) -> Response {
    let Some(id) = msg.get("id").cloned() else {
        // A notification (`notifications/initialized`, …).
        return StatusCode::ACCEPTED.into_response();
    };
    let echo = echo_of(headers).to_string();
    let result = match msg["method"].as_str().unwrap_or("") {
        "initialize" => json!({
            "protocolVersion": msg["params"]["protocolVersion"].as_str().unwrap_or("2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "echo", "version": "1.0.0"},
        }),
        "tools/list" => json!({"tools": [{
            "name": "echo_headers",
            "description": format!("Repeats the request headers: {echo}"),
            "inputSchema": {"type": "object", "properties": {"mode": {"type": "string"}}},
        }]}),
        "tools/call" => {
            match msg["params"]["arguments"]["mode"].as_str() {
                Some("rpc_error") => {
                    return Json(json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32000, "message": echo}}))
                    .into_response();
                }
                Some("tool_error") => {
                    json!({"content": [{"type": "text", "text": echo}], "isError": true})
                }
                _ => json!({"content": [{"type": "text", "text": echo}]}),
            }
        }
        "ping" => json!({}),
        other => {
            return Json(json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": format!("no method {other}")}}))
                .into_response();
        }
    };
    Json(json!({"jsonrpc": "2.0", "id": id, "result": result})).into_response()
}
