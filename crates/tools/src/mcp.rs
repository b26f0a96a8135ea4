//! The MCP client: connect to a server over stdio or streamable HTTP (with
//! rmcp) and list its tools with their input schemas.

use std::collections::{BTreeMap, HashMap};
use std::process::Stdio;
use std::time::Duration;

use reqwest::header::{HeaderName, HeaderValue};
use rmcp::ServiceExt;
use rmcp::model::{ClientConfig, Implementation, ProtocolVersion};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rtc_protocol::{McpToolInfo, McpTransport};
use serde_json::Value;

use crate::net_guard::{AddressPolicy, check_url, guarded_client};

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

    async fn list_tools_inner(
        &self,
        transport: &McpTransport,
        headers: &ResolvedHeaders,
    ) -> Result<Vec<McpToolInfo>, McpError> {
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
                let client = guarded_client(self.policy, self.timeout)
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
                    .custom_headers(custom);
                let transport = StreamableHttpClientTransport::with_client(client, config);
                client_config()
                    .serve(transport)
                    .await
                    .map_err(|e| McpError::Connect(e.to_string()))?
            }
        };
        let listed = service.list_all_tools().await;
        let _ = service.cancel().await;
        let tools = listed.map_err(|e| McpError::Protocol(e.to_string()))?;
        Ok(tools
            .into_iter()
            .map(|t| McpToolInfo {
                name: t.name.to_string(),
                description: t.description.map(|d| d.to_string()),
                input_schema: Value::Object((*t.input_schema).clone()),
            })
            .collect())
    }
}
