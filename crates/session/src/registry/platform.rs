//! The platform built-ins (R-BI-2..5): `endConversation`, `updateState`,
//! `skipTurn` and `requestHumanHandoff`, enabled and described by the
//! assistant's `builtInTools`.

use futures::future::BoxFuture;
use rtc_core::llm::{ToolCall, ToolSpec};
use rtc_protocol::{Assistant, BuiltInToolName, EndMessageType, HandoffRequested, SessionStatus};
use serde_json::{Map, Value, json};

use crate::context::SessionCtx;
use crate::kernel::{Host, Kernel};
use crate::small_model::SmallModel;
use crate::tool::{CallOutcome, Interrupt, ToolCx, ToolHandler};
use crate::{RuntimeError, variables};

/// A platform built-in the assistant enabled, with the spec its
/// configuration gives it.
pub struct PlatformTool {
    pub name: BuiltInToolName,
    pub spec: std::sync::Arc<ToolSpec>,
}

impl<H: Host> ToolHandler<H> for PlatformTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec::clone(&self.spec)
    }

    fn call<'a>(&'a self, cx: ToolCx<'a, H>) -> BoxFuture<'a, Result<CallOutcome, RuntimeError>> {
        Box::pin(self.run(cx.rt, cx.session, cx.assistant, cx.call))
    }
}

/// The calls, run on the kernel `k`.
impl PlatformTool {
    async fn run<H: Host>(
        &self,
        k: &Kernel<H>,
        ctx: &SessionCtx,
        assistant: &Assistant,
        call: &ToolCall,
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
        let built_ins = &assistant.built_in_tools;
        match self.name {
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
                        // A realtime model speaks it (the bridge asks).
                        if !k.says_fixed_lines(ctx) {
                            k.say(ctx, &cfg.custom_message).await?;
                        }
                        Ok(CallOutcome::ok(json!({"ended": true})).interrupt(Interrupt::End))
                    }
                }
            }
            BuiltInToolName::UpdateState => Ok(Self::update_state(k, ctx, assistant).await?),
            BuiltInToolName::SkipTurn => {
                Ok(CallOutcome::ok(json!({"skipped": true})).interrupt(Interrupt::Skip))
            }
            BuiltInToolName::RequestHumanHandoff => {
                {
                    let mut state = ctx.state.lock().await;
                    state.status = SessionStatus::Handoff;
                }
                k.store
                    .set_session_status(&ctx.id, SessionStatus::Handoff, None, None)
                    .await?;
                ctx.events.emit(HandoffRequested { reason }.into()).await?;
                if let Some(message) = built_ins
                    .request_human_handoff
                    .as_ref()
                    .and_then(|h| h.message.clone())
                    .filter(|_| !k.says_fixed_lines(ctx))
                {
                    k.say(ctx, &message).await?;
                }
                Ok(CallOutcome::ok(json!({"handedOff": true})).interrupt(Interrupt::Handoff))
            }
        }
    }

    /// Evaluate the `updateState` rules in order (R-BI-3).
    async fn update_state<H: Host>(
        k: &Kernel<H>,
        ctx: &SessionCtx,
        assistant: &Assistant,
    ) -> Result<CallOutcome, RuntimeError> {
        let Some(cfg) = &assistant.built_in_tools.update_state else {
            return Ok(CallOutcome::error("updateState is not enabled"));
        };
        let tag = crate::usage::UsageTag::of(ctx, crate::usage::CallKind::Small);
        let leaf = SmallModel::for_assistant(&k.settings, assistant)
            .metered(&k.usage, tag)
            .leaves(k.transcript(ctx).await?);
        let applied =
            variables::apply_rules(ctx, &k.settings.limits, &cfg.rules, &leaf, "updateState")
                .await?;
        Ok(CallOutcome::ok(
            json!({"updated": applied.changes, "errors": applied.problems}),
        ))
    }
}
