//! The MCP pool against a minimal streamable-HTTP MCP server written here
//! (JSON answers, one tool `slow` that sleeps, calls counted): a call is
//! sent once whatever its length.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::post;
use rtc_protocol::McpTransport;
use rtc_tools::mcp::{McpCall, McpConnector, McpError, McpPool, ResolvedHeaders};
use rtc_tools::net_guard::AddressPolicy;
use serde_json::{Map, Value, json};

/// What the fake server saw.
#[derive(Default)]
struct Counters {
    initializes: AtomicUsize,
    calls: AtomicUsize,
}

struct Fake {
    counters: Arc<Counters>,
    delay: Duration,
}

/// A streamable-HTTP MCP server whose tool `slow` answers "done" after
/// `delay`.
async fn fake_mcp(delay: Duration) -> (String, Arc<Counters>) {
    let counters = Arc::new(Counters::default());
    let fake = Arc::new(Fake {
        counters: counters.clone(),
        delay,
    });
    let app = axum::Router::new()
        .route(
            "/mcp",
            post(
                |State(fake): State<Arc<Fake>>, axum::Json(msg): axum::Json<Value>| async move {
                    let Some(id) = msg.get("id").cloned() else {
                        return StatusCode::ACCEPTED.into_response();
                    };
                    let result = match msg["method"].as_str().unwrap_or_default() {
                        "initialize" => {
                            fake.counters.initializes.fetch_add(1, Ordering::SeqCst);
                            json!({
                                "protocolVersion": msg["params"]["protocolVersion"],
                                "capabilities": {"tools": {}},
                                "serverInfo": {"name": "fake", "version": "1"}
                            })
                        }
                        "tools/list" => json!({"tools": [{
                            "name": "slow",
                            "description": "answers after a while",
                            "inputSchema": schema()
                        }]}),
                        "tools/call" => {
                            fake.counters.calls.fetch_add(1, Ordering::SeqCst);
                            tokio::time::sleep(fake.delay).await;
                            json!({"content": [{"type": "text", "text": "done"}]})
                        }
                        other => {
                            let error = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": format!("no method {other}")}});
                            return axum::Json(error).into_response();
                        }
                    };
                    let mut headers = HeaderMap::new();
                    headers.insert("mcp-session-id", "s1".parse().unwrap());
                    headers.insert(header::CONTENT_TYPE, "application/json".parse().unwrap());
                    (
                        headers,
                        axum::Json(json!({"jsonrpc": "2.0", "id": id, "result": result})),
                    )
                        .into_response()
                },
            )
            .get(|| async { StatusCode::METHOD_NOT_ALLOWED })
            .delete(|| async { StatusCode::OK }),
        )
        .with_state(fake);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, counters)
}

fn schema() -> Value {
    json!({"type": "object", "properties": {}})
}

fn connector(timeout: Duration) -> McpConnector {
    McpConnector {
        policy: AddressPolicy::AllowPrivate,
        timeout,
    }
}

fn http(url: &str) -> McpTransport {
    McpTransport::StreamableHttp {
        url: url.to_owned(),
        headers: BTreeMap::new(),
    }
}

async fn call(
    pool: &McpPool,
    connector: &McpConnector,
    key: &str,
    transport: &McpTransport,
    timeout: Duration,
) -> Result<Value, McpError> {
    let headers = ResolvedHeaders(BTreeMap::new());
    let schema = schema();
    pool.call(
        connector,
        McpCall {
            key,
            transport,
            headers: &headers,
            tool: "slow",
            pinned_schema: &schema,
            arguments: Map::new(),
            timeout,
        },
    )
    .await
}

/// A call running longer than the connector's timeout (the transport's 30 s
/// request timeout, before) is sent once and answered.
#[tokio::test]
async fn a_call_longer_than_the_connect_timeout_is_sent_once() {
    let (url, counters) = fake_mcp(Duration::from_millis(2_500)).await;
    let pool = McpPool::default();
    let result = call(
        &pool,
        &connector(Duration::from_secs(1)),
        "k",
        &http(&url),
        Duration::from_secs(10),
    )
    .await
    .unwrap();
    assert_eq!(result, json!("done"));
    assert_eq!(counters.calls.load(Ordering::SeqCst), 1);
}

/// The call's own timeout bounds it; it is not sent again, and the model
/// reads a short sentence.
#[tokio::test]
async fn a_call_past_its_timeout_is_not_resent() {
    let (url, counters) = fake_mcp(Duration::from_secs(2)).await;
    let pool = McpPool::default();
    let conn = connector(Duration::from_secs(5));
    let started = Instant::now();
    let err = call(&pool, &conn, "k", &http(&url), Duration::from_secs(1))
        .await
        .unwrap_err();
    assert!(started.elapsed() < Duration::from_millis(1_900));
    assert_eq!(err.to_string(), "the MCP server did not answer within 1 s");
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    assert_eq!(counters.calls.load(Ordering::SeqCst), 1, "sent once");
    // The next call opens a new connection and works.
    let ok = call(&pool, &conn, "k", &http(&url), Duration::from_secs(5)).await;
    assert_eq!(ok.unwrap(), json!("done"));
    assert_eq!(counters.calls.load(Ordering::SeqCst), 2);
}
