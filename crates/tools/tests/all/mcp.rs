//! The MCP client against the real `@modelcontextprotocol/server-everything`.

use std::collections::BTreeMap;
use std::time::Duration;

use rtc_protocol::McpTransport;
use rtc_testkit::{McpHttpServer, everything_stdio_command};
use rtc_tools::mcp::{McpConnector, McpError, ResolvedHeaders};
use rtc_tools::net_guard::AddressPolicy;

fn connector(policy: AddressPolicy) -> McpConnector {
    McpConnector {
        policy,
        timeout: Duration::from_secs(30),
    }
}

fn assert_has_echo(tools: &[rtc_protocol::McpToolInfo]) {
    let echo = tools.iter().find(|t| t.name == "echo").expect("echo tool");
    assert_eq!(echo.input_schema["type"], "object");
    assert!(
        echo.input_schema["properties"]["message"].is_object(),
        "{}",
        echo.input_schema
    );
    assert!(tools.iter().any(|t| t.name == "get-sum"));
}

#[tokio::test]
async fn discovers_tools_over_stdio() -> anyhow::Result<()> {
    let (command, args) = everything_stdio_command()?;
    let transport = McpTransport::Stdio {
        command,
        args,
        env: BTreeMap::new(),
    };
    let tools = connector(AddressPolicy::PublicOnly)
        .list_tools(&transport, &ResolvedHeaders(BTreeMap::new()))
        .await?;
    assert_has_echo(&tools);
    Ok(())
}

#[tokio::test]
async fn discovers_tools_over_streamable_http() -> anyhow::Result<()> {
    let server = McpHttpServer::start().await?;
    let transport = McpTransport::StreamableHttp {
        url: server.url.clone(),
        headers: BTreeMap::new(),
    };
    let headers = ResolvedHeaders(BTreeMap::from([("X-Api-Key".to_owned(), "k".to_owned())]));
    let tools = connector(AddressPolicy::AllowPrivate)
        .list_tools(&transport, &headers)
        .await?;
    assert_has_echo(&tools);
    // The same loopback server is refused under the default policy.
    let err = connector(AddressPolicy::PublicOnly)
        .list_tools(&transport, &headers)
        .await
        .unwrap_err();
    assert!(matches!(err, McpError::Blocked(_)), "{err}");
    server.stop().await;
    Ok(())
}

#[tokio::test]
async fn missing_command_is_a_spawn_error() {
    let transport = McpTransport::Stdio {
        command: "/nonexistent/mcp".into(),
        args: vec![],
        env: BTreeMap::new(),
    };
    let err = connector(AddressPolicy::PublicOnly)
        .list_tools(&transport, &ResolvedHeaders(BTreeMap::new()))
        .await
        .unwrap_err();
    assert!(matches!(err, McpError::Spawn(_)), "{err}");
}

mod http_exec {
    use std::collections::BTreeMap;
    use std::time::Duration;

    use rtc_protocol::HttpToolConfig;
    use rtc_tools::http_exec::{CallSecrets, HttpExecutor, HttpToolError};
    use rtc_tools::net_guard::AddressPolicy;
    use serde_json::{Map, json};

    async fn serve(app: axum::Router) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        format!("http://{addr}")
    }

    fn config(url: String, timeout_ms: u64) -> HttpToolConfig {
        serde_json::from_value(json!({"method": "GET", "url": url, "timeoutMs": timeout_ms}))
            .unwrap()
    }

    #[tokio::test]
    async fn caps_refuses_and_reports() {
        use axum::routing::get;
        let base = serve(
            axum::Router::new()
                .route("/big", get(|| async { "x".repeat(5_000) }))
                .route(
                    "/slow",
                    get(|| async {
                        tokio::time::sleep(Duration::from_secs(3)).await;
                        "late"
                    }),
                )
                .route(
                    "/fail",
                    get(|| async { (axum::http::StatusCode::NOT_FOUND, "no such order") }),
                )
                .route("/ok", get(|| async { axum::Json(json!({"status": "ok"})) })),
        )
        .await;
        let open = HttpExecutor::new(AddressPolicy::AllowPrivate, 1_000).unwrap();
        let none = (Map::new(), BTreeMap::new(), CallSecrets::default());
        let run = |exec: &HttpExecutor, path: &str, timeout: u64| {
            let exec = exec.clone();
            let cfg = config(format!("{base}{path}"), timeout);
            let (args, inputs, secrets) = (none.0.clone(), none.1.clone(), CallSecrets::default());
            async move { exec.execute(&cfg, &args, &inputs, &secrets).await }
        };
        assert_eq!(
            run(&open, "/ok", 2_000).await.unwrap(),
            json!({"status": "ok"})
        );
        assert_eq!(
            run(&open, "/big", 2_000).await.unwrap_err(),
            HttpToolError::TooLarge(1_000)
        );
        assert!(matches!(
            run(&open, "/slow", 200).await.unwrap_err(),
            HttpToolError::Timeout(_)
        ));
        assert_eq!(
            run(&open, "/fail", 2_000).await.unwrap_err(),
            HttpToolError::Status {
                status: 404,
                body: "no such order".into()
            }
        );
        let guarded = HttpExecutor::new(AddressPolicy::PublicOnly, 1_000).unwrap();
        assert!(
            matches!(
                run(&guarded, "/ok", 2_000).await.unwrap_err(),
                HttpToolError::Blocked(_)
            ),
            "loopback refused by default"
        );
    }
}

mod mcp_calls {
    use std::collections::BTreeMap;
    use std::time::Duration;

    use rtc_protocol::McpTransport;
    use rtc_testkit::everything_stdio_command;
    use rtc_tools::mcp::{McpCall, McpConnector, McpError, McpPool, ResolvedHeaders};
    use rtc_tools::net_guard::AddressPolicy;
    use serde_json::{Map, json};

    #[tokio::test]
    async fn calls_pinned_tools_and_refuses_changed_schemas() -> anyhow::Result<()> {
        let (command, args) = everything_stdio_command()?;
        let transport = McpTransport::Stdio {
            command,
            args,
            env: BTreeMap::new(),
        };
        let connector = McpConnector {
            policy: AddressPolicy::PublicOnly,
            timeout: Duration::from_secs(30),
        };
        let headers = ResolvedHeaders(BTreeMap::new());
        let tools = connector.list_tools(&transport, &headers).await?;
        let schema = tools
            .iter()
            .find(|t| t.name == "get-sum")
            .unwrap()
            .input_schema
            .clone();
        let pool = McpPool::default();
        let call = |pinned: serde_json::Value| {
            let arguments: Map<String, serde_json::Value> =
                json!({"a": 2, "b": 40}).as_object().unwrap().clone();
            let transport = transport.clone();
            let headers = ResolvedHeaders(BTreeMap::new());
            let pool = &pool;
            async move {
                pool.call(
                    &connector,
                    McpCall {
                        key: "k",
                        transport: &transport,
                        headers: &headers,
                        tool: "get-sum",
                        pinned_schema: &pinned,
                        arguments,
                        timeout: Duration::from_secs(10),
                        progress: None,
                    },
                )
                .await
            }
        };
        let result = call(schema.clone()).await?;
        assert!(result.to_string().contains("42"), "{result}");
        // Reused connection: a second call works too.
        assert!(call(schema.clone()).await?.to_string().contains("42"));
        let mut changed = schema.clone();
        changed["properties"]["c"] = json!({"type": "number"});
        let e = call(changed).await.unwrap_err();
        assert!(
            matches!(&e, McpError::SchemaChanged { changes, .. } if changes == &["parameter `c` removed"]),
            "{e:?}"
        );
        assert!(e.to_string().contains("Re-accept"), "{e}");
        Ok(())
    }
}

mod mcp_reconnect {
    use std::collections::BTreeMap;
    use std::time::Duration;

    use rtc_protocol::McpTransport;
    use rtc_testkit::McpHttpServer;
    use rtc_tools::mcp::{McpCall, McpConnector, McpError, McpPool, ResolvedHeaders};
    use rtc_tools::net_guard::AddressPolicy;
    use serde_json::{Map, json};

    /// A pooled connection whose server went away and came back is
    /// reconnected once, transparently.
    #[tokio::test]
    async fn a_restarted_server_is_reconnected() -> anyhow::Result<()> {
        let server = McpHttpServer::start().await?;
        let port = server.port();
        let transport = McpTransport::StreamableHttp {
            url: server.url.clone(),
            headers: BTreeMap::new(),
        };
        let connector = McpConnector {
            policy: AddressPolicy::AllowPrivate,
            timeout: Duration::from_secs(20),
        };
        let headers = ResolvedHeaders(BTreeMap::new());
        let schema = connector
            .list_tools(&transport, &headers)
            .await?
            .into_iter()
            .find(|t| t.name == "echo")
            .unwrap()
            .input_schema;
        let pool = McpPool::default();
        let call = |text: &'static str| {
            let arguments: Map<String, serde_json::Value> =
                json!({"message": text}).as_object().unwrap().clone();
            let (transport, schema, pool, connector) = (&transport, &schema, &pool, &connector);
            async move {
                let headers = ResolvedHeaders(BTreeMap::new());
                pool.call(
                    connector,
                    McpCall {
                        key: "k",
                        transport,
                        headers: &headers,
                        tool: "echo",
                        pinned_schema: schema,
                        arguments,
                        timeout: Duration::from_secs(2),
                        progress: None,
                    },
                )
                .await
            }
        };
        assert!(call("one").await?.to_string().contains("one"));
        server.stop().await;
        let _again = McpHttpServer::start_on(port).await?;
        // The first call on the stale connection either reconnects at once
        // (closed transport) or times out and drops it; the next one works.
        let result = match call("two").await {
            Ok(r) => r,
            Err(McpError::Timeout(_)) => call("three").await?,
            Err(e) => return Err(e.into()),
        };
        assert!(
            result.to_string().contains("two") || result.to_string().contains("three"),
            "{result}"
        );
        Ok(())
    }
}
