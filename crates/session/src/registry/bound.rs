//! Bound tool resources (R-TB-1..6): a binding's call completed from its
//! argument sources, run over HTTP, MCP or the client broker, its result
//! and error scrubbed of the secrets revealed for the call (also their
//! base64 and percent-encoded forms), then assigned to variables and
//! filtered for the model.

use std::time::Duration;

use futures::future::BoxFuture;
use rtc_core::llm::ToolSpec;
use rtc_core::model_tools::{complete_arguments, model_view, result_assignments};
use rtc_protocol::{
    EventBody, MessageImage, Tool, ToolBinding, ToolCalled, ToolCompleted, ToolKind, ToolProgress,
};
use serde_json::{Map, Value, json};

use crate::broker::{ClientCall, ClientOutcome};
use crate::context::SessionCtx;
use crate::kernel::{Host, Kernel};
use crate::tool::{CallError, CallOutcome, ToolCx, ToolHandler};
use crate::{RuntimeError, mocks, variables};

/// A call of an HTTP or MCP tool, its arguments completed.
pub struct RemoteCall<'a> {
    pub workspace: &'a str,
    pub tool: &'a Tool,
    pub binding: &'a ToolBinding,
    pub args: Map<String, Value>,
    /// The session's variables, for the binding's templates.
    pub vars: &'a Map<String, Value>,
    /// Where the call's progress goes while it runs (MCP servers report
    /// some), if the caller wants it.
    pub progress: Option<ProgressSink>,
}

/// One progress report of a running call.
#[derive(Debug, Clone, PartialEq)]
pub struct CallProgress {
    pub progress: f64,
    pub total: Option<f64>,
    pub message: Option<String>,
}

/// What a remote call does with each progress report: at once, without
/// waiting (the kernel keeps them in a bounded queue).
pub type ProgressSink = std::sync::Arc<dyn Fn(CallProgress) + Send + Sync>;

/// Progress reports kept for a call before later ones are dropped, and
/// the shortest time between two `tool.progress` events of one call.
const PROGRESS_QUEUE: usize = 16;
const PROGRESS_EVERY: Duration = Duration::from_millis(250);

/// How HTTP and MCP tools run: the kernel's port, which the host wires to
/// `rtc-tools`' executors. An implementation reveals the secrets the tool
/// names, and scrubs them (in every encoding) from the result and the
/// error before it answers.
pub trait RemoteTools: Send + Sync {
    fn run<'a>(&'a self, call: RemoteCall<'a>) -> BoxFuture<'a, Result<ToolOutput, CallError>>;
}

/// What a bound tool gave: its result, and the images it returned (an MCP
/// tool's) for models that see images.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolOutput {
    pub value: Value,
    pub images: Vec<MessageImage>,
}

impl From<Value> for ToolOutput {
    fn from(value: Value) -> Self {
        Self {
            value,
            images: Vec::new(),
        }
    }
}

/// How a bound tool's call is answered.
pub enum CallMode {
    /// Over HTTP, MCP or the client.
    Live,
    /// Test mode (R-BX-10): a conversation test's scripted result, else
    /// the tool's `mockResponse`.
    Test(Option<rtc_protocol::ScriptedResult>),
}

/// The function of one binding (`toolBindings[index]`).
pub struct BoundTool {
    pub index: usize,
    pub spec: std::sync::Arc<ToolSpec>,
}

impl<H: Host> ToolHandler<H> for BoundTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec::clone(&self.spec)
    }

    fn call<'a>(&'a self, cx: ToolCx<'a, H>) -> BoxFuture<'a, Result<CallOutcome, RuntimeError>> {
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
                    Ok(output) => {
                        let mut outcome = CallOutcome::ok(model_view(binding, &output.value));
                        outcome.images = output.images;
                        outcome
                    }
                    Err(e) => CallOutcome::error(e.for_model()?),
                },
            )
        })
    }
}

/// One call of a bound tool: what [`Kernel::execute_bound`] runs.
pub struct BoundCall<'a> {
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

impl<H: Host> Kernel<H> {
    /// Startup actions (R-TB-3): deterministic calls before the first turn.
    pub async fn run_startup_actions(&self, ctx: &SessionCtx) -> Result<(), RuntimeError> {
        for (i, binding) in ctx.config.assistant.startup_actions.iter().enumerate() {
            let call_id = format!("startup_{i}");
            let name = ctx
                .config
                .tools
                .get(&binding.tool_id)
                .map(|t| t.name.clone())
                .unwrap_or_default();
            let called = ToolCalled {
                call_id: call_id.clone(),
                name: name.clone(),
                arguments: "{}".to_owned(),
                startup: true,
                origin: None,
            };
            ctx.events.emit(called.into()).await?;
            let (is_error, result) = match self.run_binding(ctx, binding, &call_id, "{}").await {
                Ok(output) => (false, model_view(binding, &output.value)),
                Err(e) => {
                    let e = e.for_model()?;
                    let message = format!("startup action {i} ({name}): {e}");
                    ctx.events
                        .emit(EventBody::error("startup_action_failed", message))
                        .await?;
                    (true, json!({"error": e}))
                }
            };
            let mut completed = ToolCompleted::new(&call_id, &name, is_error, result)
                .capped(self.settings.limits.max_event_result_bytes);
            completed.startup = true;
            ctx.events.emit(completed.into()).await?;
        }
        Ok(())
    }

    /// Run a bound tool and assign its result to the session's variables.
    pub async fn run_binding(
        &self,
        ctx: &SessionCtx,
        binding: &ToolBinding,
        call_id: &str,
        model_args: &str,
    ) -> Result<ToolOutput, CallError> {
        let Some(tool) = ctx.config.tools.get(&binding.tool_id) else {
            return Err(CallError::tool(format!(
                "tool `{}` is not available",
                binding.tool_id
            )));
        };
        let mode = match &ctx.config.test {
            Some(_) => CallMode::Test(mocks::next_scripted(ctx, &tool.name).await),
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
        let output = self.execute_bound(call, mode).await?;
        let changes = result_assignments(binding, &output.value);
        if !changes.is_empty() {
            let problems = variables::apply(
                ctx,
                &self.settings.limits,
                changes,
                &format!("tool:{}", tool.name),
            )
            .await?
            .problems;
            if !problems.is_empty() {
                ctx.events
                    .emit(EventBody::error(
                        "result_assignment_failed",
                        problems.join("; "),
                    ))
                    .await?;
            }
        }
        Ok(output)
    }

    /// One call of a bound tool without touching a session's state: the
    /// arguments completed from the binding's sources over `vars`, the
    /// call run over HTTP or MCP (a client tool needs `client`, the
    /// session and call whose host runs it), its result and error scrubbed
    /// of the secrets revealed for it. Conversations and the reasoner's
    /// tasks both call tools through here. In test mode nothing goes out:
    /// the completed arguments pick the mock's answer.
    pub async fn execute_bound(
        &self,
        call: BoundCall<'_>,
        mode: CallMode,
    ) -> Result<ToolOutput, CallError> {
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
                Some(result) => mocks::scripted_outcome(result),
                None => mocks::mock_answer(tool, &args).await,
            }
            .map(ToolOutput::from)
            .map_err(CallError::from);
        }
        match (tool.kind, client) {
            (ToolKind::Http | ToolKind::Mcp, client) => {
                let call = RemoteCall {
                    workspace,
                    tool,
                    binding,
                    args,
                    vars,
                    progress: None,
                };
                match client {
                    // A session's call: its progress reaches the host.
                    Some((ctx, call_id)) => self.remote_with_progress(ctx, call_id, call).await,
                    None => self.remote_tools.run(call).await,
                }
            }
            (ToolKind::Client, Some((ctx, call_id))) => self
                .run_client(ctx, tool, call_id, args)
                .await
                .map(ToolOutput::from),
            (ToolKind::Client, None) => {
                Err(CallError::tool("client tools run only in conversations"))
            }
        }
    }

    /// Run `call` remotely, telling the host its progress as `tool.progress`
    /// events of `call_id` (at most one per [`PROGRESS_EVERY`]).
    async fn remote_with_progress(
        &self,
        ctx: &SessionCtx,
        call_id: &str,
        mut call: RemoteCall<'_>,
    ) -> Result<ToolOutput, CallError> {
        let (tx, mut rx) = tokio::sync::mpsc::channel(PROGRESS_QUEUE);
        call.progress = Some(std::sync::Arc::new(move |p| {
            let _ = tx.try_send(p);
        }));
        let name = call.tool.name.clone();
        let run = self.remote_tools.run(call);
        tokio::pin!(run);
        let mut last: Option<tokio::time::Instant> = None;
        loop {
            tokio::select! {
                result = &mut run => return result,
                Some(p) = rx.recv() => {
                    if last.is_some_and(|t| t.elapsed() < PROGRESS_EVERY) {
                        continue;
                    }
                    last = Some(tokio::time::Instant::now());
                    let event = ToolProgress {
                        call_id: call_id.to_owned(),
                        name: name.clone(),
                        progress: p.progress,
                        total: p.total,
                        message: p.message,
                    };
                    ctx.events.emit(event.into()).await?;
                }
            }
        }
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
        match self.remote_clients.call(ctx, call).await {
            ClientOutcome::Result(v) => Ok(v),
            ClientOutcome::Error(e) => Err(CallError::Tool(e)),
        }
    }
}
