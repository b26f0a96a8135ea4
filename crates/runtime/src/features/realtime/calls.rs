//! A realtime model's function calls: run through the session's tools
//! like a text turn's (bindings, secrets, scrubbing, result assignments,
//! client tools through the broker), recorded with `tool.completed`, never
//! cancelled by a barge-in (design `realtime.md` pitfall 6). Each call
//! ends in exactly one [`Finished`], whose content the bridge submits.

use std::collections::BTreeMap;
use std::sync::Arc;

use rtc_core::llm::ToolCall;
use rtc_core::model_tools::{ToolTarget, model_tools};
use rtc_protocol::{
    Assistant, BuiltInToolName, MessageRole, RealtimePromptTools, Tool, ToolCompleted,
};

use crate::events::Durability;
use crate::history::message;
use crate::registry::{BoundTool, Offered, PlatformTool, SessionTools};
use crate::session::SessionCtx;
use crate::tool::{CallOutcome, Interrupt, ToolCx, ToolHandler};
use crate::{Inner, RuntimeError};

/// A call's output for the provider.
pub(crate) struct Finished {
    pub call_id: String,
    pub name: String,
    /// What the model reads (the `function_call_output`).
    pub content: String,
    pub interrupt: Option<Interrupt>,
    pub is_error: bool,
    /// Whether the model is asked to go on after it.
    pub follow_up: bool,
}

/// Run `call` and record its result.
pub(crate) async fn run_call(
    rt: Arc<Inner>,
    ctx: Arc<SessionCtx>,
    tools: Arc<SessionTools<Inner>>,
    call: ToolCall,
) -> Finished {
    let nul = rtc_core::text::nul_field_in_json(&call.arguments);
    let outcome = match tools.find(&call.name) {
        Some(_) if let Some(field) = &nul => Ok(CallOutcome::error(format!(
            "the argument `{field}` must not contain the NUL character (U+0000)"
        ))),
        Some(handler) => {
            let cx = ToolCx {
                rt: &rt,
                session: &ctx,
                assistant: &ctx.config.assistant,
                call: &call,
            };
            handler.call(cx).await
        }
        None => Ok(CallOutcome::error(format!(
            "there is no tool named `{}`",
            call.name
        ))),
    };
    let outcome = outcome.unwrap_or_else(|e| {
        tracing::error!(session = %ctx.id, call = %call.id, error = %e, "a realtime tool call failed");
        CallOutcome::error("the call failed inside the platform")
    });
    // Ending and handing off are not answered by the model.
    let follow_up = !matches!(outcome.interrupt, Some(Interrupt::End | Interrupt::Handoff));
    if let Err(e) = record(&rt, &ctx, &call, &outcome).await {
        tracing::error!(session = %ctx.id, call = %call.id, error = %e, "recording a realtime tool result failed");
    }
    Finished {
        call_id: call.id,
        name: call.name,
        is_error: outcome.is_error,
        content: outcome.content,
        interrupt: outcome.interrupt,
        follow_up,
    }
}

/// Answer `call` with `refusal` at once (an undeclared tool, a client
/// function no host runs); the model is not asked to go on.
pub(crate) async fn refuse(
    rt: &Inner,
    ctx: &SessionCtx,
    call: ToolCall,
    refusal: String,
) -> Result<Finished, RuntimeError> {
    let outcome = CallOutcome::error(refusal);
    record(rt, ctx, &call, &outcome).await?;
    Ok(Finished {
        call_id: call.id,
        name: call.name,
        content: outcome.content,
        interrupt: None,
        is_error: true,
        follow_up: false,
    })
}

async fn record(
    rt: &Inner,
    ctx: &SessionCtx,
    call: &ToolCall,
    outcome: &CallOutcome,
) -> Result<(), RuntimeError> {
    if outcome.deferred {
        return Ok(());
    }
    let mut m = message(MessageRole::Tool, &outcome.content);
    m.tool_call_id = Some(call.id.clone());
    m.name = Some(call.name.clone());
    let event = ToolCompleted::new(
        &call.id,
        &call.name,
        outcome.is_error,
        outcome.shown.clone(),
    )
    .capped(rt.settings.limits.max_event_result_bytes)
    .into();
    rt.append(ctx, m, vec![event], Durability::Queued).await
}

/// What a realtime model is offered (design `realtime.md` §5c): the
/// bindings whose tool type and the platform built-ins the interface
/// declares, never `skipTurn` and none of the LLM built-ins; each with
/// the client function it runs, if it is a client tool.
pub(crate) fn realtime_tools(
    assistant: &Assistant,
    session_tools: &BTreeMap<String, Tool>,
    caps: &RealtimePromptTools,
) -> (SessionTools<Inner>, BTreeMap<String, String>) {
    let mut tools: Vec<Offered<Inner>> = Vec::new();
    let mut client_functions = BTreeMap::new();
    for (spec, target) in model_tools(assistant, session_tools) {
        let spec = Arc::new(spec);
        let handler: Arc<dyn ToolHandler<Inner>> = match target {
            ToolTarget::BuiltIn(BuiltInToolName::SkipTurn) => continue,
            ToolTarget::BuiltIn(name) if !caps.built_in_tools.contains(&name) => continue,
            ToolTarget::BuiltIn(name) => Arc::new(PlatformTool {
                name,
                spec: spec.clone(),
            }),
            ToolTarget::Binding(_) if crate::is_reserved_tool_name(&spec.name) => continue,
            ToolTarget::Binding(index) => {
                let Some(tool) = assistant
                    .tool_bindings
                    .get(index)
                    .and_then(|b| session_tools.get(&b.tool_id))
                else {
                    continue;
                };
                if !caps.tool_types.contains(&tool.kind) {
                    continue;
                }
                if let Some(client) = &tool.client {
                    client_functions.insert(spec.name.clone(), client.function_name.clone());
                }
                Arc::new(BoundTool {
                    index,
                    spec: spec.clone(),
                })
            }
        };
        tools.push((spec, handler));
    }
    (SessionTools::new(tools), client_functions)
}
