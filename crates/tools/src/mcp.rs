//! The MCP client: connect to a server over stdio or streamable HTTP (with
//! rmcp) and list its tools with their input schemas.

use std::collections::{BTreeMap, HashMap};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{HeaderName, HeaderValue};
use rmcp::ServiceExt;
use rmcp::model::{ClientConfig, Implementation, ProtocolVersion};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rtc_protocol::{McpToolInfo, McpTransport};
use serde_json::Value;

use crate::net_guard::{AddressPolicy, check_url, guarded_client_same_origin};

/// The protocol version announced to servers: the newest with an
/// `initialize` handshake, which current and older servers both speak.
const PROTOCOL_VERSION: ProtocolVersion = ProtocolVersion::V_2025_11_25;

/// Environment variables a stdio server inherits from the platform; all
/// others (database URLs, master key, tokens) are withheld.
const INHERITED_ENV: &[&str] = &["PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "NODE_PATH"];

#[derive(Debug, thiserror::Error)]
pub enum McpError {
    #[error("could not start the MCP server process: {0}")]
    Spawn(String),
    #[error("the MCP server URL is not allowed: {0}")]
    Blocked(String),
    #[error("invalid header `{0}` for the MCP server")]
    Header(String),
    #[error("could not connect to the MCP server: {0}")]
    Connect(String),
    #[error("the MCP server did not answer within {0:?}")]
    Timeout(Duration),
    #[error("the MCP server answered with an error: {0}")]
    Protocol(String),
    #[error("the MCP server no longer offers the tool `{0}`")]
    ToolGone(String),
    #[error(
        "the MCP server changed the schema of `{0}`; an operator must re-accept it (save the tool again) before it can be called"
    )]
    SchemaChanged(String),
    #[error("the tool reported an error: {0}")]
    ToolFailed(String),
}

/// A connected MCP client.
pub type McpService = rmcp::service::RunningService<rmcp::RoleClient, ClientConfig>;

fn tool_infos(tools: Vec<rmcp::model::Tool>) -> Vec<McpToolInfo> {
    tools
        .into_iter()
        .map(|t| McpToolInfo {
            name: t.name.to_string(),
            description: t.description.map(|d| d.to_string()),
            input_schema: Value::Object((*t.input_schema).clone()),
        })
        .collect()
}

/// Connects to MCP servers under one outbound policy.
#[derive(Debug, Clone, Copy)]
pub struct McpConnector {
    pub policy: AddressPolicy,
    pub timeout: Duration,
}

/// Header values with secrets already filled in. Never logged.
pub struct ResolvedHeaders(pub BTreeMap<String, String>);

impl std::fmt::Debug for ResolvedHeaders {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.0.keys()).finish()
    }
}

fn client_config() -> ClientConfig {
    ClientConfig::new(
        Default::default(),
        Implementation::new("rtc-agent", env!("CARGO_PKG_VERSION")),
    )
    .with_protocol_version(PROTOCOL_VERSION)
}

impl McpConnector {
    /// List the tools a server offers.
    pub async fn list_tools(
        &self,
        transport: &McpTransport,
        headers: &ResolvedHeaders,
    ) -> Result<Vec<McpToolInfo>, McpError> {
        tokio::time::timeout(self.timeout, self.list_tools_inner(transport, headers))
            .await
            .map_err(|_| McpError::Timeout(self.timeout))?
    }

    /// Connect and complete the MCP handshake.
    pub async fn connect(
        &self,
        transport: &McpTransport,
        headers: &ResolvedHeaders,
    ) -> Result<McpService, McpError> {
        let service = match transport {
            McpTransport::Stdio { command, args, env } => {
                let mut cmd = tokio::process::Command::new(command);
                cmd.args(args).env_clear();
                for key in INHERITED_ENV {
                    if let Ok(v) = std::env::var(key) {
                        cmd.env(key, v);
                    }
                }
                cmd.envs(env).kill_on_drop(true);
                let (child, _stderr) = TokioChildProcess::builder(cmd)
                    .stderr(Stdio::null())
                    .spawn()
                    .map_err(|e| McpError::Spawn(format!("`{command}`: {e}")))?;
                client_config()
                    .serve(child)
                    .await
                    .map_err(|e| McpError::Connect(e.to_string()))?
            }
            McpTransport::StreamableHttp { url, .. } => {
                let parsed = url::Url::parse(url).map_err(|e| McpError::Blocked(e.to_string()))?;
                check_url(&parsed, self.policy).map_err(|e| McpError::Blocked(e.to_string()))?;
                // Headers may carry secrets: redirects stay within the origin.
                let client = guarded_client_same_origin(self.policy, self.timeout)
                    .map_err(|e| McpError::Connect(e.to_string()))?;
                let mut custom = HashMap::new();
                for (name, value) in &headers.0 {
                    let n = HeaderName::try_from(name.as_str())
                        .map_err(|_| McpError::Header(name.clone()))?;
                    let mut v = HeaderValue::try_from(value.as_str())
                        .map_err(|_| McpError::Header(name.clone()))?;
                    v.set_sensitive(true);
                    custom.insert(n, v);
                }
                let config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                    .custom_headers(custom)
                    .reinit_on_expired_session(true);
                let transport = StreamableHttpClientTransport::with_client(client, config);
                client_config()
                    .serve(transport)
                    .await
                    .map_err(|e| McpError::Connect(e.to_string()))?
            }
        };
        Ok(service)
    }

    async fn list_tools_inner(
        &self,
        transport: &McpTransport,
        headers: &ResolvedHeaders,
    ) -> Result<Vec<McpToolInfo>, McpError> {
        let service = self.connect(transport, headers).await?;
        let listed = service.list_all_tools().await;
        let _ = service.cancel().await;
        listed
            .map(tool_infos)
            .map_err(|e| McpError::Protocol(e.to_string()))
    }
}

struct Pooled {
    service: McpService,
    tools: Vec<McpToolInfo>,
}

/// Open MCP connections, one per server configuration, reused across
/// calls and reconnected once when a call fails on a broken connection.
#[derive(Default)]
pub struct McpPool {
    connections: tokio::sync::Mutex<HashMap<String, Arc<Pooled>>>,
}

impl std::fmt::Debug for McpPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("McpPool")
    }
}

/// One call of a remote tool.
pub struct McpCall<'a> {
    /// Identifies the server configuration (e.g. workspace, id and update time).
    pub key: &'a str,
    pub transport: &'a McpTransport,
    pub headers: &'a ResolvedHeaders,
    pub tool: &'a str,
    /// The schema the operator accepted when saving the tool (R-BX-7).
    pub pinned_schema: &'a Value,
    pub arguments: serde_json::Map<String, Value>,
    pub timeout: Duration,
}

impl McpPool {
    async fn connection(
        &self,
        connector: &McpConnector,
        call: &McpCall<'_>,
        fresh: bool,
    ) -> Result<Arc<Pooled>, McpError> {
        let mut conns = self.connections.lock().await;
        if !fresh && let Some(c) = conns.get(call.key) {
            return Ok(c.clone());
        }
        if let Some(old) = conns.remove(call.key)
            && let Ok(old) = Arc::try_unwrap(old)
        {
            let _ = old.service.cancel().await;
        }
        let service = connector.connect(call.transport, call.headers).await?;
        let tools = service
            .list_all_tools()
            .await
            .map(tool_infos)
            .map_err(|e| McpError::Protocol(e.to_string()))?;
        let pooled = Arc::new(Pooled { service, tools });
        conns.insert(call.key.to_owned(), pooled.clone());
        Ok(pooled)
    }

    /// Call a remote tool; refuses when its schema changed since it was pinned.
    pub async fn call(
        &self,
        connector: &McpConnector,
        call: McpCall<'_>,
    ) -> Result<Value, McpError> {
        let mut fresh = false;
        loop {
            let conn =
                tokio::time::timeout(connector.timeout, self.connection(connector, &call, fresh))
                    .await
                    .map_err(|_| McpError::Timeout(connector.timeout))??;
            let Some(remote) = conn.tools.iter().find(|t| t.name == call.tool) else {
                return Err(McpError::ToolGone(call.tool.to_owned()));
            };
            if &remote.input_schema != call.pinned_schema {
                return Err(McpError::SchemaChanged(call.tool.to_owned()));
            }
            let params = rmcp::model::CallToolRequestParams::new(call.tool.to_owned())
                .with_arguments(call.arguments.clone());
            match tokio::time::timeout(call.timeout, conn.service.call_tool(params)).await {
                Err(_) => {
                    // The connection may be dead (e.g. the server restarted):
                    // the next call opens a new one. This call is not retried,
                    // as the tool may have run.
                    self.connections.lock().await.remove(call.key);
                    return Err(McpError::Timeout(call.timeout));
                }
                Ok(Ok(result)) => return tool_result(&result),
                Ok(Err(e)) if !fresh && is_transport_failure(&e) => {
                    tracing::warn!(error = %e, "MCP connection failed; reconnecting");
                    fresh = true;
                }
                Ok(Err(e)) => return Err(McpError::Protocol(e.to_string())),
            }
        }
    }
}

fn is_transport_failure(e: &rmcp::ServiceError) -> bool {
    matches!(
        e,
        rmcp::ServiceError::TransportClosed | rmcp::ServiceError::TransportSend(_)
    )
}

/// A tool result as JSON: the structured content if given, else the text.
fn tool_result(result: &rmcp::model::CallToolResult) -> Result<Value, McpError> {
    let value = serde_json::to_value(result).map_err(|e| McpError::Protocol(e.to_string()))?;
    let text: Vec<&str> = value
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| c.get("text").and_then(Value::as_str))
        .collect();
    let text = text.join("\n");
    if value
        .get("isError")
        .and_then(Value::as_bool)
        .unwrap_or(false)
    {
        return Err(McpError::ToolFailed(text));
    }
    if let Some(structured) = value.get("structuredContent").filter(|v| !v.is_null()) {
        return Ok(structured.clone());
    }
    Ok(serde_json::from_str(&text).unwrap_or(Value::String(text)))
}
