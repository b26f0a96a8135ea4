//! The MCP pool against a minimal streamable-HTTP MCP server written here
//! (JSON answers, one tool `slow` that sleeps, calls counted), a listener
//! that never answers, one that hangs up at once, and the real stdio
//! server: a call is sent once whatever its length, one slow server does
//! not delay others, failed connections back off, evicted connections end
//! their processes.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::post;
use rtc_protocol::McpTransport;
use rtc_testkit::everything_stdio_command;
use rtc_tools::mcp::{McpCall, McpConnector, McpError, McpPool, ResolvedHeaders};
use rtc_tools::net_guard::AddressPolicy;
use serde_json::{Map, Value, json};

/// What the fake server saw.
#[derive(Default)]
struct Counters {
    initializes: AtomicUsize,
    lists: AtomicUsize,
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
                        "tools/list" => {
                            fake.counters.lists.fetch_add(1, Ordering::SeqCst);
                            json!({"tools": [{
                            "name": "slow",
                            "description": "answers after a while",
                            "inputSchema": schema()
                        }]})
                        }
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
            progress: None,
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

/// One server that accepts connections and never answers holds up calls to
/// itself only (it held the whole pool's lock while connecting).
#[tokio::test]
async fn a_slow_server_does_not_delay_other_keys() {
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let silent_url = format!("http://{}/mcp", silent.local_addr().unwrap());
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = silent.accept().await {
            held.push(socket);
        }
    });
    let (fast_url, _) = fake_mcp(Duration::ZERO).await;
    let pool = Arc::new(McpPool::default());
    let conn = connector(Duration::from_secs(3));
    let stuck = {
        let pool = pool.clone();
        tokio::spawn(async move {
            call(
                &pool,
                &conn,
                "ws1/slow/1",
                &http(&silent_url),
                Duration::from_secs(5),
            )
            .await
        })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    let started = Instant::now();
    let fast = call(
        &pool,
        &conn,
        "ws2/fast/1",
        &http(&fast_url),
        Duration::from_secs(5),
    )
    .await;
    assert_eq!(fast.unwrap(), json!("done"));
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "the other key waited {:?}",
        started.elapsed()
    );
    let err = stuck.await.unwrap().unwrap_err();
    assert_eq!(err.to_string(), "the MCP server did not answer within 3 s");
}

/// A failed connection is remembered: the next calls fail at once, saying
/// the pool is backing off, without trying the server again.
#[tokio::test]
async fn a_failed_connect_backs_off() {
    let refusing = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", refusing.local_addr().unwrap());
    let accepted = Arc::new(AtomicUsize::new(0));
    let seen = accepted.clone();
    tokio::spawn(async move {
        while let Ok((socket, _)) = refusing.accept().await {
            seen.fetch_add(1, Ordering::SeqCst);
            drop(socket);
        }
    });
    let pool = McpPool::default();
    let conn = connector(Duration::from_secs(3));
    let first = call(&pool, &conn, "k", &http(&url), Duration::from_secs(3))
        .await
        .unwrap_err();
    assert!(matches!(first, McpError::Connect(_)), "{first}");
    let tries = accepted.load(Ordering::SeqCst);
    assert!(tries >= 1);
    for _ in 0..3 {
        let started = Instant::now();
        let err = call(&pool, &conn, "k", &http(&url), Duration::from_secs(3))
            .await
            .unwrap_err();
        assert!(matches!(err, McpError::BackingOff { .. }), "{err}");
        assert!(
            err.to_string().contains("the next attempt is allowed in"),
            "{err}"
        );
        assert!(started.elapsed() < Duration::from_millis(100));
    }
    assert_eq!(accepted.load(Ordering::SeqCst), tries, "not tried again");
}

async fn until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < deadline, "{what} within 10 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Evicting a key drops its connection, and the stdio server's process
/// ends with it.
#[tokio::test]
async fn evicted_stdio_servers_are_stopped() -> anyhow::Result<()> {
    let (command, args) = everything_stdio_command()?;
    let marker = format!("RTC_POOL_TEST={}", std::process::id());
    let transport = McpTransport::Stdio {
        command,
        args,
        env: BTreeMap::from([("RTC_POOL_TEST".to_owned(), std::process::id().to_string())]),
    };
    let conn = connector(Duration::from_secs(30));
    let headers = ResolvedHeaders(BTreeMap::new());
    let echo = conn
        .list_tools(&transport, &headers)
        .await?
        .into_iter()
        .find(|t| t.name == "echo")
        .unwrap()
        .input_schema;
    until("the discovery process ends", || {
        rtc_testkit::processes_with(&marker) == 0
    })
    .await;
    let pool = McpPool::default();
    let arguments: Map<String, Value> = json!({"message": "hi"}).as_object().unwrap().clone();
    let result = pool
        .call(
            &conn,
            McpCall {
                key: "ws1/mcp_1/v1",
                transport: &transport,
                headers: &headers,
                tool: "echo",
                pinned_schema: &echo,
                arguments,
                timeout: Duration::from_secs(10),
                progress: None,
            },
        )
        .await?;
    assert!(result.to_string().contains("hi"), "{result}");
    assert_eq!(
        rtc_testkit::processes_with(&marker),
        1,
        "one pooled process"
    );
    pool.evict("ws1/mcp_1/");
    assert!(pool.keys().is_empty());
    until("the evicted process ends", || {
        rtc_testkit::processes_with(&marker) == 0
    })
    .await;
    Ok(())
}

/// Discovery lists tools on the pooled connection (one initialize for
/// discoveries and calls alike) and lists afresh at most once per
/// interval: concurrent and repeated discoveries share one answer.
#[tokio::test]
async fn discovery_reuses_the_pooled_connection_and_is_rate_limited() {
    let (url, counters) = fake_mcp(Duration::ZERO).await;
    let pool = McpPool::default();
    let conn = connector(Duration::from_secs(5));
    let transport = http(&url);
    let headers = ResolvedHeaders(BTreeMap::new());
    let discover = || pool.tools(&conn, "ws1/mcp_1/v1", &transport, &headers);
    let first = futures::future::join_all((0..5).map(|_| discover())).await;
    for tools in first {
        assert_eq!(tools.unwrap()[0].name, "slow");
    }
    let lists = counters.lists.load(Ordering::SeqCst);
    for _ in 0..10 {
        assert_eq!(discover().await.unwrap()[0].name, "slow");
    }
    call(
        &pool,
        &conn,
        "ws1/mcp_1/v1",
        &transport,
        Duration::from_secs(5),
    )
    .await
    .unwrap();
    assert_eq!(
        counters.initializes.load(Ordering::SeqCst),
        1,
        "one connection"
    );
    assert_eq!(
        counters.lists.load(Ordering::SeqCst),
        lists,
        "no fresh listing within the interval"
    );
    assert!(
        lists <= 2,
        "{lists} listings for five concurrent discoveries"
    );
}

/// The real everything server's rich results (R-RN-6): an image is
/// described by its type and size (no base64 reaches the model), an
/// embedded resource is inlined, a structured result is checked against
/// the tool's `outputSchema` and passed on.
#[tokio::test]
async fn images_resources_and_structured_results_of_a_real_server() -> anyhow::Result<()> {
    let (command, args) = everything_stdio_command()?;
    let transport = McpTransport::Stdio {
        command,
        args,
        env: BTreeMap::new(),
    };
    let conn = connector(Duration::from_secs(30));
    let headers = ResolvedHeaders(BTreeMap::new());
    let tools = conn.list_tools(&transport, &headers).await?;
    let pool = McpPool::default();
    let call = async |tool: &str, arguments: Value| {
        let remote = tools.iter().find(|t| t.name == tool).unwrap();
        pool.call(
            &conn,
            McpCall {
                key: "ws1/mcp_rich/v1",
                transport: &transport,
                headers: &headers,
                tool,
                pinned_schema: &remote.input_schema,
                arguments: arguments.as_object().unwrap().clone(),
                timeout: Duration::from_secs(10),
                progress: None,
            },
        )
        .await
    };
    let image = call("get-tiny-image", json!({})).await?.to_string();
    assert!(image.contains("[image: image/png, "), "{image}");
    assert!(
        !image.contains("iVBOR"),
        "no base64 reaches the model: {image}"
    );
    let resource = call(
        "get-resource-reference",
        json!({"resourceType": "Text", "resourceId": 2}),
    )
    .await?
    .to_string();
    assert!(resource.contains("[resource "), "{resource}");
    let structured_tool = tools
        .iter()
        .find(|t| t.name == "get-structured-content")
        .unwrap();
    assert!(
        structured_tool.output_schema.is_some(),
        "the tool declares its output"
    );
    let weather = call("get-structured-content", json!({"location": "New York"})).await?;
    assert!(weather.is_object(), "{weather}");
    // Progress notifications reach the caller's sink while the call runs.
    let seen = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let sink = seen.clone();
    let remote = tools
        .iter()
        .find(|t| t.name == "trigger-long-running-operation")
        .unwrap();
    pool.call(
        &conn,
        McpCall {
            key: "ws1/mcp_rich/v1",
            transport: &transport,
            headers: &headers,
            tool: "trigger-long-running-operation",
            pinned_schema: &remote.input_schema,
            arguments: json!({"duration": 0.4, "steps": 4})
                .as_object()
                .unwrap()
                .clone(),
            timeout: Duration::from_secs(10),
            progress: Some(Arc::new(move |p: rtc_tools::mcp::McpProgress| {
                sink.lock().push((p.progress, p.total));
            })),
        },
    )
    .await?;
    assert_eq!(
        *seen.lock(),
        [
            (1.0, Some(4.0)),
            (2.0, Some(4.0)),
            (3.0, Some(4.0)),
            (4.0, Some(4.0))
        ]
    );
    Ok(())
}

/// The Python SDK's server (a second real implementation): images and
/// audio described, mixed content kept in order, an embedded resource
/// inlined, progress reported, a structured result checked and passed on.
#[tokio::test]
async fn a_python_servers_rich_results() -> anyhow::Result<()> {
    let Some(server) = rtc_testkit::McpHttpServer::start_python().await? else {
        eprintln!("RTC_TEST_PYTHON_MCP is not set (scripts/test sets it): skipped");
        return Ok(());
    };
    let transport = McpTransport::StreamableHttp {
        url: server.url.clone(),
        headers: BTreeMap::new(),
    };
    let conn = McpConnector {
        policy: AddressPolicy::AllowPrivate,
        timeout: Duration::from_secs(10),
    };
    let headers = ResolvedHeaders(BTreeMap::new());
    let tools = conn.list_tools(&transport, &headers).await?;
    let pool = McpPool::default();
    let seen = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let call = async |tool: &str, arguments: Value| {
        let remote = tools.iter().find(|t| t.name == tool).unwrap();
        let sink = seen.clone();
        pool.call(
            &conn,
            McpCall {
                key: "ws1/mcp_py/v1",
                transport: &transport,
                headers: &headers,
                tool,
                pinned_schema: &remote.input_schema,
                arguments: arguments.as_object().unwrap().clone(),
                timeout: Duration::from_secs(10),
                progress: Some(Arc::new(move |p: rtc_tools::mcp::McpProgress| {
                    sink.lock().push((p.progress, p.total, p.message));
                })),
            },
        )
        .await
    };
    assert_eq!(
        call("picture", json!({})).await?,
        json!("[image: image/png, 70 bytes]")
    );
    assert_eq!(
        call("sound", json!({})).await?,
        json!("[audio: audio/wav, 2.0 KB]")
    );
    assert_eq!(
        call("captioned", json!({})).await?,
        json!("A red dot:\n[image: image/png, 70 bytes]")
    );
    assert_eq!(
        call("document", json!({})).await?,
        json!("[resource test://docs/1]\nThe manual.")
    );
    let weather = call("weather", json!({"city": "Lisbon"})).await?;
    assert_eq!(weather["conditions"], "sunny in Lisbon", "{weather}");
    // The SDK gives a string result structured, as `{"result": …}`.
    assert_eq!(
        call("count", json!({"steps": 3})).await?["result"],
        "counted to 3"
    );
    assert_eq!(
        *seen.lock(),
        [
            (1.0, Some(3.0), Some("step 1".to_owned())),
            (2.0, Some(3.0), Some("step 2".to_owned())),
            (3.0, Some(3.0), Some("step 3".to_owned())),
        ]
    );
    server.stop().await;
    Ok(())
}
