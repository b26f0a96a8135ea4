//! Bound tool resources (R-TB-1..6): a binding's call completed from its
//! argument sources, run over HTTP, MCP or the client broker, its result
//! and error scrubbed of the secrets revealed for the call (also their
//! base64 and percent-encoded forms), then assigned to variables and
//! filtered for the model.

use std::collections::BTreeMap;
use std::time::Duration;

use futures::future::BoxFuture;
use rtc_core::llm::ToolSpec;
use rtc_core::model_tools::{complete_arguments, model_view, result_assignments, template_inputs};
use rtc_core::placeholders::{self, Placeholder};
use rtc_core::tool_rules::referenced_secrets;
use rtc_protocol::{EventBody, McpServer, McpTransport, Tool, ToolBinding, ToolKind};
use rtc_tools::http_exec::CallSecrets;
use rtc_tools::mcp::{McpCall, ResolvedHeaders};
use rtc_tools::scrub::Scrubber;
use serde_json::{Map, Value};

use crate::broker::{ClientCall, ClientOutcome};
use crate::session::SessionCtx;
use crate::tool::{CallError, CallOutcome, ToolCx, ToolHandler};
use crate::{Inner, RuntimeError, variables};

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

/// How a bound tool's call is answered.
pub(crate) enum CallMode {
    /// Over HTTP, MCP or the client.
    Live,
    /// Test mode (R-BX-10): a conversation test's scripted result, else
    /// the tool's `mockResponse`.
    Test(Option<rtc_protocol::ScriptedResult>),
}

/// The function of one binding (`toolBindings[index]`).
pub(crate) struct BoundTool {
    pub index: usize,
    pub spec: std::sync::Arc<ToolSpec>,
}

impl ToolHandler for BoundTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec::clone(&self.spec)
    }

    fn call<'a>(&'a self, cx: ToolCx<'a>) -> BoxFuture<'a, Result<CallOutcome, RuntimeError>> {
        Box::pin(async move {
            let Some(binding) = cx.assistant.tool_bindings.get(self.index) else {
                return Ok(CallOutcome::error("the binding is gone"));
            };
            Ok(
                match cx
                    .rt
                    .run_binding(cx.session, binding, &cx.call.id, &cx.call.arguments)
                    .await
                {
                    Ok(result) => CallOutcome::ok(model_view(binding, &result)),
                    Err(e) => CallOutcome::error(e.for_model()?),
                },
            )
        })
    }
}

/// One call of a bound tool: what [`Inner::execute_bound`] runs.
pub(crate) struct BoundCall<'a> {
    pub workspace: &'a str,
    pub tool: &'a Tool,
    pub binding: &'a ToolBinding,
    /// The arguments as the model wrote them (JSON text).
    pub model_args: &'a str,
    /// The session's variables, for the binding's sources.
    pub vars: &'a Map<String, Value>,
    /// The session and call id whose host runs a client tool.
    pub client: Option<(&'a SessionCtx, &'a str)>,
}

impl Inner {
    /// Run a bound tool and assign its result to the session's variables.
    pub(crate) async fn run_binding(
        &self,
        ctx: &SessionCtx,
        binding: &ToolBinding,
        call_id: &str,
        model_args: &str,
    ) -> Result<Value, CallError> {
        let Some(tool) = ctx.config.tools.get(&binding.tool_id) else {
            return Err(CallError::tool(format!(
                "tool `{}` is not available",
                binding.tool_id
            )));
        };
        let mode = match &ctx.config.test {
            Some(_) => CallMode::Test(crate::test_mode::next_scripted(ctx, &tool.name).await),
            None => CallMode::Live,
        };
        let vars = ctx.state.lock().await.variables.clone();
        let client = Some((ctx, call_id));
        let call = BoundCall {
            workspace: &ctx.workspace,
            tool,
            binding,
            model_args,
            vars: &vars,
            client,
        };
        let value = self.execute_bound(call, mode).await?;
        let changes = result_assignments(binding, &value);
        if !changes.is_empty() {
            let (_, problems) = variables::apply(
                ctx,
                &self.config.limits,
                changes,
                &format!("tool:{}", tool.name),
            )
            .await?;
            if !problems.is_empty() {
                ctx.events
                    .emit(EventBody::error(
                        "result_assignment_failed",
                        problems.join("; "),
                    ))
                    .await?;
            }
        }
        Ok(value)
    }

    /// One call of a bound tool without touching a session's state: the
    /// arguments completed from the binding's sources over `vars`, the
    /// call run over HTTP or MCP (a client tool needs `client`, the
    /// session and call whose host runs it), its result and error scrubbed
    /// of the secrets revealed for it. Conversations and the reasoner's
    /// tasks both call tools through here. In test mode nothing goes out:
    /// the completed arguments pick the mock's answer.
    pub(crate) async fn execute_bound(
        &self,
        call: BoundCall<'_>,
        mode: CallMode,
    ) -> Result<Value, CallError> {
        let BoundCall {
            workspace,
            tool,
            binding,
            model_args,
            vars,
            client,
        } = call;
        let args = match complete_arguments(tool, binding, model_args, vars) {
            Ok(a) => a,
            Err(e) => return Err(CallError::tool(e.to_string())),
        };
        if let CallMode::Test(scripted) = mode {
            return match scripted {
                Some(result) => crate::test_mode::scripted_outcome(result),
                None => crate::test_mode::mock_answer(tool, &args).await,
            }
            .map_err(CallError::from);
        }
        // The secret values revealed for this call, whatever its family.
        let mut revealed = Vec::new();
        let result = match (tool.kind, client) {
            (ToolKind::Http, _) => {
                self.run_http(workspace, tool, binding, &args, vars, &mut revealed)
                    .await
            }
            (ToolKind::Mcp, _) => self.run_mcp(workspace, tool, args, &mut revealed).await,
            (ToolKind::Client, Some((ctx, call_id))) => {
                self.run_client(ctx, tool, call_id, args).await
            }
            (ToolKind::Client, None) => {
                Err(CallError::tool("client tools run only in conversations"))
            }
        };
        let scrubber = Scrubber::new(&revealed);
        drop(revealed);
        match result {
            Ok(mut value) => {
                scrubber.scrub_value(&mut value);
                Ok(value)
            }
            Err(CallError::Tool(message)) => Err(CallError::Tool(scrubber.scrub_str(&message))),
            Err(platform) => Err(platform),
        }
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
        self.config
            .http
            .execute(http, args, &inputs, &secrets)
            .await
            .map_err(|e| CallError::tool(e.to_string()))
    }

    async fn run_mcp(
        &self,
        workspace: &str,
        tool: &Tool,
        args: Map<String, Value>,
        revealed: &mut Vec<String>,
    ) -> Result<Value, CallError> {
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
            timeout: self.config.mcp_call_timeout,
        };
        self.mcp_pool
            .call(&self.config.mcp, call)
            .await
            .map_err(|e| CallError::tool(e.to_string()))
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

    async fn run_client(
        &self,
        ctx: &SessionCtx,
        tool: &Tool,
        call_id: &str,
        args: Map<String, Value>,
    ) -> Result<Value, CallError> {
        let Some(client) = &tool.client else {
            return Err(CallError::tool("the tool has no client configuration"));
        };
        let fallback = Value::Object(Map::new());
        let hash = crate::broker::schema_hash(tool.parameters.as_ref().unwrap_or(&fallback));
        let call = ClientCall {
            call_id,
            function: &client.function_name,
            arguments: Value::Object(args),
            wait: client.wait_for_response,
            timeout: Duration::from_millis(client.timeout_ms),
            schema_hash: &hash,
        };
        match self.call_client(ctx, call).await {
            ClientOutcome::Result(v) => Ok(v),
            ClientOutcome::Error(e) => Err(CallError::Tool(e)),
        }
    }
}
