//! Running one tool call: the platform built-ins (R-BI-2..5) and bound
//! tool resources (HTTP, MCP, client), with argument completion, result
//! assignments and the model's filtered view.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use rtc_core::llm::ToolCall;
use rtc_core::model_tools::{
    ToolTarget, complete_arguments, model_view, result_assignments, template_inputs,
};
use rtc_core::placeholders::{self, Placeholder};
use rtc_core::tool_rules::referenced_secrets;
use rtc_expr::evaluate;
use rtc_protocol::{
    BuiltInToolName, EndMessageType, EventBody, HandoffRequested, McpServer, McpTransport,
    SessionStatus, Tool, ToolBinding, ToolKind,
};
use rtc_tools::http_exec::CallSecrets;
use rtc_tools::mcp::{McpCall, ResolvedHeaders};
use serde_json::{Map, Value, json};

use crate::broker::{ClientCall, ClientOutcome};
use crate::llm_tools::LlmTool;
use crate::session::SessionCtx;
use crate::small_model::SmallModel;
use crate::{Inner, RuntimeError, variables};

/// The call's parsed arguments, or (from a function answering
/// `Result<CallOutcome, _>`) the parse error handed back to the model.
macro_rules! parsed {
    ($parse:expr) => {
        match $parse {
            Ok(args) => args,
            Err(e) => return Ok($crate::execute::CallOutcome::error(e)),
        }
    };
}
pub(crate) use parsed;

/// A tool call that stops the turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Interrupt {
    End,
    Skip,
    Handoff,
    /// askUser: the session waits for the user's answers.
    Ask,
    /// subAgent in sync mode: the session waits for the sub-agent's report.
    AwaitSubAgent,
}

/// What the model is told, and whether the turn stops.
pub(crate) struct CallOutcome {
    pub content: String,
    pub is_error: bool,
    pub interrupt: Option<Interrupt>,
    /// The result for the `tool.completed` event (already filtered).
    pub shown: Value,
    /// No result now: it is recorded when it arrives (askUser's answers).
    pub deferred: bool,
}

/// What a model-visible function runs: a core target (platform built-in or
/// binding) or one of the LLM's built-ins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    Model(ToolTarget),
    Llm(LlmTool),
}

impl CallOutcome {
    pub(crate) fn ok(shown: Value) -> Self {
        let content = match &shown {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        Self {
            content,
            is_error: false,
            interrupt: None,
            shown,
            deferred: false,
        }
    }

    pub(crate) fn error(message: impl Into<String>) -> Self {
        let message = message.into();
        Self {
            content: format!("Error: {message}"),
            is_error: true,
            interrupt: None,
            shown: json!({"error": message}),
            deferred: false,
        }
    }

    pub(crate) fn interrupt(mut self, i: Interrupt) -> Self {
        self.interrupt = Some(i);
        self
    }
}

impl Inner {
    pub(crate) async fn execute_call(
        self: &Arc<Self>,
        ctx: &Arc<SessionCtx>,
        call: &ToolCall,
        target: Option<Target>,
    ) -> Result<CallOutcome, RuntimeError> {
        match target {
            None => Ok(CallOutcome::error(format!(
                "there is no tool named `{}`",
                call.name
            ))),
            Some(Target::Llm(tool)) => self.run_llm_tool(ctx, tool, call).await,
            Some(Target::Model(ToolTarget::BuiltIn(name))) => self.built_in(ctx, call, name).await,
            Some(Target::Model(ToolTarget::Binding(i))) => {
                let Some(binding) = ctx.config.assistant.tool_bindings.get(i) else {
                    return Ok(CallOutcome::error("the binding is gone"));
                };
                Ok(
                    match self
                        .run_binding(ctx, binding, &call.id, &call.arguments)
                        .await?
                    {
                        Ok(result) => CallOutcome::ok(model_view(binding, &result)),
                        Err(message) => CallOutcome::error(message),
                    },
                )
            }
        }
    }

    async fn built_in(
        &self,
        ctx: &SessionCtx,
        call: &ToolCall,
        name: BuiltInToolName,
    ) -> Result<CallOutcome, RuntimeError> {
        let args: Map<String, Value> = serde_json::from_str(if call.arguments.trim().is_empty() {
            "{}"
        } else {
            &call.arguments
        })
        .unwrap_or_default();
        let reason = args
            .get("reason")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let built_ins = &ctx.config.assistant.built_in_tools;
        match name {
            BuiltInToolName::EndConversation => {
                let Some(cfg) = &built_ins.end_conversation else {
                    return Ok(CallOutcome::error("endConversation is not enabled"));
                };
                if cfg.capture_reason && reason.as_deref().is_none_or(|r| r.trim().is_empty()) {
                    return Ok(CallOutcome::error(
                        "`reason` is required: say in a few words why the conversation ends",
                    ));
                }
                ctx.state.lock().await.ending = Some((reason.clone(), cfg.allow_end_interruption));
                match cfg.message_type {
                    EndMessageType::Generated => Ok(CallOutcome::ok(json!(
                        "The conversation ends after your reply. Say a short goodbye now."
                    ))),
                    EndMessageType::None => {
                        Ok(CallOutcome::ok(json!({"ended": true})).interrupt(Interrupt::End))
                    }
                    EndMessageType::Custom => {
                        self.say(ctx, &cfg.custom_message).await?;
                        Ok(CallOutcome::ok(json!({"ended": true})).interrupt(Interrupt::End))
                    }
                }
            }
            BuiltInToolName::UpdateState => Ok(self.update_state(ctx).await?),
            BuiltInToolName::SkipTurn => {
                Ok(CallOutcome::ok(json!({"skipped": true})).interrupt(Interrupt::Skip))
            }
            BuiltInToolName::RequestHumanHandoff => {
                {
                    let mut state = ctx.state.lock().await;
                    state.status = SessionStatus::Handoff;
                }
                self.store
                    .set_session_status(&ctx.id, SessionStatus::Handoff, None, None)
                    .await?;
                ctx.events.emit(HandoffRequested { reason }.into()).await?;
                if let Some(message) = built_ins
                    .request_human_handoff
                    .as_ref()
                    .and_then(|h| h.message.clone())
                {
                    self.say(ctx, &message).await?;
                }
                Ok(CallOutcome::ok(json!({"handedOff": true})).interrupt(Interrupt::Handoff))
            }
        }
    }

    /// Evaluate the `updateState` rules in order (R-BI-3).
    async fn update_state(&self, ctx: &SessionCtx) -> Result<CallOutcome, RuntimeError> {
        let Some(cfg) = &ctx.config.assistant.built_in_tools.update_state else {
            return Ok(CallOutcome::error("updateState is not enabled"));
        };
        let leaf = SmallModel::for_assistant(&self.config, &ctx.config.assistant)
            .leaves(self.transcript(ctx).await?);
        let mut vars: BTreeMap<String, Value> = ctx
            .state
            .lock()
            .await
            .variables
            .clone()
            .into_iter()
            .collect();
        let mut changes = Vec::new();
        let mut errors = Vec::new();
        for rule in &cfg.rules {
            match evaluate(&rule.expression, &vars, &leaf).await {
                Ok(v) => {
                    vars.insert(rule.variable.clone(), v.clone());
                    changes.push((rule.variable.clone(), v));
                }
                Err(e) => errors.push(format!("`{}` unchanged: {e}", rule.variable)),
            }
        }
        let (applied, problems) = variables::apply(ctx, changes, "updateState").await?;
        errors.extend(problems);
        if !errors.is_empty() {
            ctx.events
                .emit(EventBody::error("update_state_failed", errors.join("; ")))
                .await?;
        }
        Ok(CallOutcome::ok(
            json!({"updated": applied, "errors": errors}),
        ))
    }

    /// Run a bound tool; the outer error is a fault of the platform, the
    /// inner one is told to the model.
    pub(crate) async fn run_binding(
        &self,
        ctx: &SessionCtx,
        binding: &ToolBinding,
        call_id: &str,
        model_args: &str,
    ) -> Result<Result<Value, String>, RuntimeError> {
        let Some(tool) = ctx.config.tools.get(&binding.tool_id) else {
            return Ok(Err(format!("tool `{}` is not available", binding.tool_id)));
        };
        let vars = ctx.state.lock().await.variables.clone();
        let args = match complete_arguments(tool, binding, model_args, &vars) {
            Ok(a) => a,
            Err(e) => return Ok(Err(e.to_string())),
        };
        let result = match tool.kind {
            ToolKind::Http => self.run_http(ctx, tool, binding, &args, &vars).await?,
            ToolKind::Mcp => self.run_mcp(ctx, tool, args).await?,
            ToolKind::Client => self.run_client(ctx, tool, call_id, args).await,
        };
        let Ok(value) = result else { return Ok(result) };
        let changes = result_assignments(binding, &value);
        if !changes.is_empty() {
            let (_, problems) =
                variables::apply(ctx, changes, &format!("tool:{}", tool.name)).await?;
            if !problems.is_empty() {
                ctx.events
                    .emit(EventBody::error(
                        "result_assignment_failed",
                        problems.join("; "),
                    ))
                    .await?;
            }
        }
        Ok(Ok(value))
    }

    async fn run_http(
        &self,
        ctx: &SessionCtx,
        tool: &Tool,
        binding: &ToolBinding,
        args: &Map<String, Value>,
        vars: &Map<String, Value>,
    ) -> Result<Result<Value, String>, RuntimeError> {
        let Some(http) = &tool.http else {
            return Ok(Err("the tool has no HTTP configuration".into()));
        };
        let mut secrets = CallSecrets::default();
        for name in referenced_secrets(tool) {
            match self.store.reveal_secret(&ctx.workspace, &name).await? {
                Some(v) => {
                    secrets.0.insert(name, v.expose().to_owned());
                }
                None => return Ok(Err(format!("the tool's secret `{name}` was deleted"))),
            }
        }
        let inputs = template_inputs(binding, vars);
        Ok(self
            .config
            .http
            .execute(http, args, &inputs, &secrets)
            .await
            .map_err(|e| e.to_string()))
    }

    async fn run_mcp(
        &self,
        ctx: &SessionCtx,
        tool: &Tool,
        args: Map<String, Value>,
    ) -> Result<Result<Value, String>, RuntimeError> {
        let Some(mcp) = &tool.mcp else {
            return Ok(Err("the tool has no MCP configuration".into()));
        };
        let Some(server) = self
            .store
            .get::<McpServer>(&ctx.workspace, &mcp.server_id)
            .await?
        else {
            return Ok(Err(format!(
                "MCP server `{}` no longer exists",
                mcp.server_id
            )));
        };
        let headers = match self.mcp_headers(&ctx.workspace, &server.transport).await? {
            Ok(h) => h,
            Err(e) => return Ok(Err(e)),
        };
        let key = format!(
            "{}/{}/{}",
            ctx.workspace,
            mcp.server_id,
            server.updated_at.as_deref().unwrap_or("")
        );
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
        Ok(self
            .mcp_pool
            .call(&self.config.mcp, call)
            .await
            .map_err(|e| e.to_string()))
    }

    /// Headers of a streamable-HTTP MCP server with secrets filled in.
    pub(crate) async fn mcp_headers(
        &self,
        workspace: &str,
        transport: &McpTransport,
    ) -> Result<Result<ResolvedHeaders, String>, RuntimeError> {
        let McpTransport::StreamableHttp { headers, .. } = transport else {
            return Ok(Ok(ResolvedHeaders(BTreeMap::new())));
        };
        let mut out = BTreeMap::new();
        for (name, template) in headers {
            let mut values = BTreeMap::new();
            for p in placeholders::parse(template, name).unwrap_or_default() {
                if let Placeholder::Secret(secret) = p {
                    match self.store.reveal_secret(workspace, secret).await? {
                        Some(v) => values.insert(secret.to_owned(), v.expose().to_owned()),
                        None => return Ok(Err(format!("secret `{secret}` does not exist"))),
                    };
                }
            }
            out.insert(
                name.clone(),
                placeholders::render(template, |n| values.get(n).cloned()),
            );
        }
        Ok(Ok(ResolvedHeaders(out)))
    }

    async fn run_client(
        &self,
        ctx: &SessionCtx,
        tool: &Tool,
        call_id: &str,
        args: Map<String, Value>,
    ) -> Result<Value, String> {
        let Some(client) = &tool.client else {
            return Err("the tool has no client configuration".into());
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
        match ctx.broker.call(&ctx.events, call).await {
            ClientOutcome::Result(v) => Ok(v),
            ClientOutcome::Error(e) => Err(e),
        }
    }
}
