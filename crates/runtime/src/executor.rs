//! How HTTP and MCP tools leave the server: `rtc-tools`' executors behind
//! the kernel's [`RemoteTools`] port. A call reveals the secrets its tool
//! names (and, for a stdio MCP server, treats its `env` values as such),
//! runs, and answers with every revealed value scrubbed from its result
//! and error (also their base64 and percent-encoded forms).

use std::collections::BTreeMap;
use std::time::Duration;

use futures::future::BoxFuture;
use rtc_core::model_tools::template_inputs;
use rtc_core::placeholders::{self, Placeholder};
use rtc_core::tool_rules::referenced_secrets;
use rtc_protocol::{
    McpServer, McpToolInfo, McpTransport, MessageImage, Tool, ToolBinding, ToolKind,
};
use rtc_session::registry::{CallProgress, ProgressSink, RemoteCall, RemoteTools, ToolOutput};
use rtc_session::tool::CallError;
use rtc_store::Store;
use rtc_tools::http_exec::{CallSecrets, HttpExecutor};
use rtc_tools::mcp::{McpCall, McpConnector, McpPool, ResolvedHeaders};

use crate::composition::McpToolsError;
use rtc_tools::scrub::Scrubber;
use serde_json::{Map, Value};

/// The shortest stdio `env` value scrubbed from a server's answers: the
/// minimum length of a secret.
use rtc_core::names::MIN_SECRET_CHARS as MIN_SCRUBBED_ENV_CHARS;

/// The MCP pool's key of a server configuration: its workspace, id and
/// update time, so an edited server gets a new connection.
pub(crate) fn mcp_pool_key(workspace: &str, server_id: &str, updated_at: Option<&str>) -> String {
    format!(
        "{}{}",
        mcp_pool_key_prefix(workspace, server_id),
        updated_at.unwrap_or("")
    )
}

/// The prefix of every pool key of one server.
pub(crate) fn mcp_pool_key_prefix(workspace: &str, server_id: &str) -> String {
    format!("{workspace}/{server_id}/")
}

/// The HTTP executor and the MCP connections, with the store the secrets
/// are revealed from.
pub(crate) struct Executors {
    pub store: Store,
    pub http: HttpExecutor,
    pub mcp: McpConnector,
    pub mcp_pool: McpPool,
    /// Time limit of one MCP tool call.
    pub mcp_call_timeout: Duration,
}

impl RemoteTools for Executors {
    fn run<'a>(&'a self, call: RemoteCall<'a>) -> BoxFuture<'a, Result<ToolOutput, CallError>> {
        Box::pin(async move {
            let RemoteCall {
                workspace,
                tool,
                binding,
                args,
                vars,
                progress,
            } = call;
            // The secret values revealed for this call, whatever its family.
            let mut revealed = Vec::new();
            let result = match tool.kind {
                ToolKind::Http => self
                    .run_http(workspace, tool, binding, &args, vars, &mut revealed)
                    .await
                    .map(ToolOutput::from),
                ToolKind::Mcp => {
                    self.run_mcp(workspace, tool, args, progress, &mut revealed)
                        .await
                }
                ToolKind::Client => Err(CallError::tool("client tools run through their host")),
            };
            let scrubber = Scrubber::new(&revealed);
            drop(revealed);
            match result {
                Ok(mut output) => {
                    scrubber.scrub_value(&mut output.value);
                    Ok(output)
                }
                Err(CallError::Tool(message)) => Err(CallError::Tool(scrubber.scrub_str(&message))),
                Err(platform) => Err(platform),
            }
        })
    }
}

impl Executors {
    /// The tools an MCP server lists (see `Runtime::mcp_server_tools`).
    pub(crate) async fn server_tools(
        &self,
        workspace: &str,
        server: &McpServer,
    ) -> Result<Vec<McpToolInfo>, McpToolsError> {
        let mut revealed = Vec::new();
        let headers = match self
            .mcp_headers(workspace, &server.transport, &mut revealed)
            .await
        {
            Ok(h) => h,
            Err(e) => return Err(McpToolsError::Unavailable(e.for_model()?)),
        };
        let scrubber = rtc_tools::scrub::Scrubber::new(&revealed);
        let key = mcp_pool_key(
            workspace,
            server.id.as_deref().unwrap_or(""),
            server.updated_at.as_deref(),
        );
        self.mcp_pool
            .tools(&self.mcp, &key, &server.transport, &headers)
            .await
            .map(|mut tools| {
                for tool in &mut tools {
                    tool.name = scrubber.scrub_str(&tool.name);
                    if let Some(d) = &mut tool.description {
                        *d = scrubber.scrub_str(d);
                    }
                    scrubber.scrub_value(&mut tool.input_schema);
                }
                tools
            })
            .map_err(|e| McpToolsError::Unavailable(scrubber.scrub_str(&e.to_string())))
    }

    async fn run_http(
        &self,
        workspace: &str,
        tool: &Tool,
        binding: &ToolBinding,
        args: &Map<String, Value>,
        vars: &Map<String, Value>,
        revealed: &mut Vec<String>,
    ) -> Result<Value, CallError> {
        let Some(http) = &tool.http else {
            return Err(CallError::tool("the tool has no HTTP configuration"));
        };
        let mut secrets = CallSecrets::default();
        for name in referenced_secrets(tool) {
            match self.store.reveal_secret(workspace, &name).await? {
                Some(v) => {
                    revealed.push(v.expose().to_owned());
                    secrets.0.insert(name, v.expose().to_owned());
                }
                None => {
                    return Err(CallError::tool(format!(
                        "the tool's secret `{name}` was deleted"
                    )));
                }
            }
        }
        let inputs = template_inputs(binding, vars);
        self.http
            .execute(http, args, &inputs, &secrets)
            .await
            .map_err(|e| CallError::tool(e.to_string()))
    }

    async fn run_mcp(
        &self,
        workspace: &str,
        tool: &Tool,
        args: Map<String, Value>,
        progress: Option<ProgressSink>,
        revealed: &mut Vec<String>,
    ) -> Result<ToolOutput, CallError> {
        let Some(mcp) = &tool.mcp else {
            return Err(CallError::tool("the tool has no MCP configuration"));
        };
        let Some(server) = self
            .store
            .get::<McpServer>(workspace, &mcp.server_id)
            .await?
        else {
            return Err(CallError::tool(format!(
                "MCP server `{}` no longer exists",
                mcp.server_id
            )));
        };
        let headers = self
            .mcp_headers(workspace, &server.transport, revealed)
            .await?;
        let key = mcp_pool_key(workspace, &mcp.server_id, server.updated_at.as_deref());
        let fallback = Value::Object(Map::new());
        let call = McpCall {
            key: &key,
            transport: &server.transport,
            headers: &headers,
            tool: &mcp.remote_tool_name,
            pinned_schema: tool.parameters.as_ref().unwrap_or(&fallback),
            arguments: args,
            timeout: server
                .timeout_seconds
                .map_or(self.mcp_call_timeout, |s| Duration::from_secs(u64::from(s))),
            progress: progress.map(|sink| -> rtc_tools::mcp::ProgressSink {
                std::sync::Arc::new(move |p: rtc_tools::mcp::McpProgress| {
                    sink(CallProgress {
                        progress: p.progress,
                        total: p.total,
                        message: p.message,
                    })
                })
            }),
        };
        let output = self
            .mcp_pool
            .call_with_images(&self.mcp, call)
            .await
            .map_err(|e| CallError::tool(e.to_string()))?;
        Ok(ToolOutput {
            value: output.value,
            images: output
                .images
                .into_iter()
                .map(|(mime_type, data)| MessageImage { mime_type, data })
                .collect(),
        })
    }

    /// Headers of a streamable-HTTP MCP server with secrets filled in;
    /// the secret values go to `revealed` too, for scrubbing. A stdio
    /// server has no headers, but its `env` values are write-only like
    /// secrets (the API shows `***`), so they go to `revealed` as well: a
    /// server that prints its environment (the everything server's
    /// `get-env`) shows them neither to the model nor in events. Values
    /// shorter than a secret's minimum are left alone (`1`, `true`, `info`
    /// are settings, and scrubbing them would mangle ordinary results).
    pub(crate) async fn mcp_headers(
        &self,
        workspace: &str,
        transport: &McpTransport,
        revealed: &mut Vec<String>,
    ) -> Result<ResolvedHeaders, CallError> {
        let headers = match transport {
            McpTransport::StreamableHttp { headers, .. } => headers,
            McpTransport::Stdio { env, .. } => {
                revealed.extend(
                    env.values()
                        .filter(|v| v.chars().count() >= MIN_SCRUBBED_ENV_CHARS)
                        .cloned(),
                );
                return Ok(ResolvedHeaders(BTreeMap::new()));
            }
        };
        let mut out = BTreeMap::new();
        for (name, template) in headers {
            let mut values = BTreeMap::new();
            for p in placeholders::parse(template, name).unwrap_or_default() {
                if let Placeholder::Secret(secret) = p {
                    match self.store.reveal_secret(workspace, secret).await? {
                        Some(v) => {
                            revealed.push(v.expose().to_owned());
                            values.insert(secret.to_owned(), v.expose().to_owned())
                        }
                        None => {
                            return Err(CallError::tool(format!(
                                "secret `{secret}` does not exist"
                            )));
                        }
                    };
                }
            }
            out.insert(
                name.clone(),
                placeholders::render(template, |n| values.get(n).cloned()),
            );
        }
        Ok(ResolvedHeaders(out))
    }
}
