//! The MCP client against the real `@modelcontextprotocol/server-everything`.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

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
