//! The MCP client: connect to a server over stdio or streamable HTTP (with
//! rmcp) and list its tools with their input schemas; [`pool`] keeps
//! connections for calls. Every error is a short sentence for the model or
//! an operator, without the libraries' type chains.

mod pool;
mod progress;

pub use pool::{MAX_IMAGES, McpCall, McpOutput, McpPool};
pub use progress::{Client, MAX_MESSAGE_CHARS, McpProgress, ProgressSink};

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

use crate::net_guard::{
    AddressPolicy, blocked_host, check_url, guarded_client_same_origin_streaming,
};

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
    #[error("the MCP server did not answer within {}", seconds(*.0))]
    Timeout(Duration),
    #[error("the MCP server answered with an error: {0}")]
    Protocol(String),
    #[error("the MCP call failed: {0}")]
    CallFailed(String),
    #[error(
        "the MCP server could not be reached lately ({reason}); the next attempt is allowed in {}", seconds(*.retry_in)
    )]
    BackingOff { reason: String, retry_in: Duration },
    #[error("the MCP server no longer offers the tool `{0}`")]
    ToolGone(String),
    #[error(
        "the MCP server changed the parameters of `{tool}` since the tool was saved ({}); until an operator re-accepts them (the console's \"Re-accept\" on the tool, or saving the tool again) it is not called", changes.join("; ")
    )]
    SchemaChanged { tool: String, changes: Vec<String> },
    #[error("the tool reported an error: {0}")]
    ToolFailed(String),
    #[error("the MCP result is {size} bytes; the limit is {limit}")]
    TooLarge { size: usize, limit: usize },
}

/// The largest MCP tool result passed on (its JSON, content and structured
/// content together); a larger one is an error the model reads.
pub const MAX_RESULT_BYTES: usize = 1024 * 1024;

/// A connected MCP client.
pub type McpService = rmcp::service::RunningService<rmcp::RoleClient, Client>;

fn tool_infos(tools: Vec<rmcp::model::Tool>) -> Vec<McpToolInfo> {
    tools
        .into_iter()
        .map(|t| McpToolInfo {
            name: t.name.to_string(),
            description: t.description.map(|d| d.to_string()),
            input_schema: Value::Object((*t.input_schema).clone()),
            output_schema: t.output_schema.map(|o| Value::Object((*o).clone())),
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

fn client_config() -> Client {
    let info = ClientConfig::new(
        Default::default(),
        Implementation::new("rtc-agent", env!("CARGO_PKG_VERSION")),
    )
    .with_protocol_version(PROTOCOL_VERSION);
    Client {
        info,
        routes: progress::ProgressRoutes::default(),
    }
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
                    .map_err(|e| McpError::Connect(describe_init(&e)))?
            }
            McpTransport::StreamableHttp { url, .. } => {
                let parsed = url::Url::parse(url).map_err(|e| McpError::Blocked(e.to_string()))?;
                check_url(&parsed, self.policy).map_err(|e| McpError::Blocked(e.to_string()))?;
                // Headers may carry secrets: redirects stay within the
                // origin. No overall timeout: a tool's response stream stays
                // open while it runs; callers bound each exchange.
                let client = guarded_client_same_origin_streaming(self.policy)
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
                    .map_err(|e| McpError::Connect(describe_init(&e)))?
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
            .map_err(|e| McpError::Protocol(describe(&e)))
    }
}

/// A duration as the model reads it: "45 s", "0.5 s".
fn seconds(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0} s")
    } else {
        format!("{s:.1} s")
    }
}

/// A failed handshake in a few words.
fn describe_init(e: &rmcp::service::ClientInitializeError) -> String {
    use rmcp::service::ClientInitializeError as E;
    match e {
        E::TransportError { error, .. } => describe_transport(error),
        E::JsonRpcError(data) => data.message.to_string(),
        E::ConnectionClosed(_) => "the connection closed during the handshake".into(),
        E::NoCompatibleProtocolVersion { .. } => "no protocol version in common".into(),
        E::Cancelled => "the handshake was cancelled".into(),
        _ => "the server did not complete the handshake".into(),
    }
}

/// A failed request in a few words.
pub(crate) fn describe(e: &rmcp::ServiceError) -> String {
    use rmcp::ServiceError as E;
    match e {
        E::McpError(data) => data.message.to_string(),
        E::TransportSend(error) => describe_transport(error),
        E::TransportClosed => "the connection to the MCP server closed".into(),
        E::Timeout { timeout } => format!("no answer within {}", seconds(*timeout)),
        E::Cancelled { .. } => "the request was cancelled".into(),
        _ => "the server sent an unexpected answer".into(),
    }
}

type HttpError = rmcp::transport::streamable_http_client::StreamableHttpError<reqwest::Error>;

/// The reqwest error under a transport error, if that is what it is.
fn reqwest_error(e: &rmcp::transport::DynamicTransportError) -> Option<&reqwest::Error> {
    match e.error.downcast_ref::<HttpError>() {
        Some(HttpError::Client(inner)) => Some(inner),
        _ => e.error.downcast_ref::<reqwest::Error>(),
    }
}

/// What went wrong on the wire: the innermost cause (not the URL, which may
/// carry configuration, nor the layers of wrappers above it).
fn describe_transport(e: &rmcp::transport::DynamicTransportError) -> String {
    let innermost = |top: &(dyn std::error::Error + 'static)| {
        if let Some(blocked) = blocked_host(top) {
            return blocked.to_string();
        }
        let mut text = top.to_string();
        let mut source = top.source();
        while let Some(s) = source {
            text = s.to_string();
            source = s.source();
        }
        text
    };
    if let Some(re) = reqwest_error(e) {
        if re.is_timeout() {
            return "the request timed out".into();
        }
        if let Some(source) = std::error::Error::source(re) {
            return innermost(source);
        }
        return match re.status() {
            Some(status) => format!("HTTP {status}"),
            None => "the request failed".into(),
        };
    }
    if let Some(HttpError::HttpStatus(status)) = e.error.downcast_ref::<HttpError>() {
        return status.to_string();
    }
    innermost(e.error.as_ref())
}

/// Whether a failed request provably never reached the server, so sending
/// it again cannot run it twice: the connection could not be opened (or,
/// for a stdio server, its input was already closed).
pub(crate) fn never_sent(e: &rmcp::ServiceError) -> bool {
    let rmcp::ServiceError::TransportSend(error) = e else {
        return false;
    };
    if let Some(re) = reqwest_error(error) {
        return re.is_connect();
    }
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(error.error.as_ref());
    while let Some(err) = current {
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            return io.kind() == std::io::ErrorKind::BrokenPipe;
        }
        current = err.source();
    }
    false
}
