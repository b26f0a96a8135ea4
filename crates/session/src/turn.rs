//! The model loop of one turn (R-RN-1..3), run by the lifecycle: render the prompt with the current
//! variables, call the model with the history and the tools, run the tool
//! calls (concurrently), feed the results back, until a final answer, an
//! interrupting tool, the step limit, or cancellation by a new user message.

use std::sync::Arc;

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use rtc_core::llm::{ChatRequest, ChatResponse, FunctionList, LlmError, LlmEvent};
use rtc_core::model_tools::render_variables;
use rtc_protocol::{
    EventBody, Message, MessageCompleted, MessageDelta, MessageRole, MessageToolCall, StateUpdated,
    ToolCalled, ToolCompleted, TurnSkipped, TurnStarted,
};
use rtc_store::{SessionUpdate, new_id};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::answer::CheckedAnswer;
use crate::chat_history::{CANCELLED, RequestView};
use crate::compaction::{Pressure, StepContext};
use crate::context::SessionCtx;
use crate::events::Durability;
use crate::history::message;
use crate::kernel::{Host, Kernel, Provider};
use crate::registry::SessionTools;
use crate::step_tap::{StepStored, StepTap};
use crate::tool::{CallOutcome, Interrupt, ToolCx};
use crate::usage::{CallKind, UsageTag};
use crate::{RuntimeError, telemetry, variables};

/// How a turn's model loop ended.
#[derive(Debug, Default)]
pub struct TurnOutcome {
    /// It came to its end (a final answer or a tool that ends the turn),
    /// not cut off by a cancellation, a failed model call or the step
    /// limit.
    pub answered: bool,
    /// The finish reason of the turn's last model answer.
    pub finish_reason: Option<String>,
    /// The model's stream was cut after part of its answer was shown.
    pub cut: bool,
}

/// What one model call gave.
enum Streamed {
    Answer(ChatResponse),
    /// The stream was cut after `shown` reached the host.
    Cut {
        shown: String,
    },
    /// Cancelled, or the call failed (reported as an `error` event).
    Nothing,
    /// The provider refused the request as longer than the model's
    /// context window (its message).
    TooLong(String),
}

/// The request could not be made to fit: the host is told, the turn ends
/// (a shorter next message still gets an answer).
async fn too_long(ctx: &SessionCtx) -> Result<(), RuntimeError> {
    ctx.events
        .emit(EventBody::error(
            "context_length_exceeded",
            "the conversation does not fit the model's context window, even with its older messages summarized; this turn stopped",
        ))
        .await
}

impl<H: Host> Kernel<H> {
    /// One turn's model loop; whether it came to its end (a final answer
    /// or a tool that ends the turn), not cut off by a cancellation, a
    /// failed model call or the step limit.
    pub async fn turn_inner(
        &self,
        ctx: &Arc<SessionCtx>,
        cancel: &CancellationToken,
        turn_id: &str,
    ) -> Result<TurnOutcome, RuntimeError> {
        let assistant = self.turn_assistant(ctx);
        let span = telemetry::turn_span(ctx, &assistant, turn_id);
        let done = Box::pin(self.turn_steps(ctx, cancel, turn_id, &assistant))
            .instrument(span.clone())
            .await;
        if let Err(e) = &done {
            telemetry::record_error(&span, "turn_failed", &e.to_string());
        }
        done
    }

    /// The steps of [`Self::turn_inner`], inside the turn's span.
    async fn turn_steps(
        &self,
        ctx: &Arc<SessionCtx>,
        cancel: &CancellationToken,
        turn_id: &str,
        assistant: &Arc<rtc_protocol::Assistant>,
    ) -> Result<TurnOutcome, RuntimeError> {
        let mut outcome = TurnOutcome::default();
        self.begin(ctx, turn_id).await?;
        // A full history takes no more turns (by a user, a goal, a loop
        // tick or a report alike): the session stays readable.
        match self.check_history_room(ctx, None).await {
            Ok(()) => {}
            Err(RuntimeError::Conflict { code, message }) => {
                ctx.events.emit(EventBody::error(code, message)).await?;
                return Ok(outcome);
            }
            Err(e) => return Err(e),
        }
        let history_from = self.history_from(ctx);
        let provider = self.provider_for(assistant);
        let model = assistant
            .llm
            .model
            .clone()
            .unwrap_or_else(|| provider.default_model.clone());
        // Prepared once per snapshot: each step's request shares its list.
        let tools = self.session_tools(ctx, assistant);
        // Where this turn's messages start (its input is before).
        let turn_from = self
            .with_history(ctx, |h| h.len())
            .await?
            .saturating_sub(history_from);
        let view = RequestView {
            vision: provider.client.caps(&model).vision,
            turn_from,
            max_replayed_result_bytes: self.settings.limits.max_replayed_result_bytes,
        };
        let count = |t: &str| provider.client.count_tokens(&model, t);
        let usage_tag = UsageTag::of(ctx, CallKind::Turn);
        let provider_name = self.provider_name(assistant);
        let step = StepContext {
            assistant,
            provider,
            model: &model,
            history_from,
            view,
            tools_tokens: tools.functions().tokens(&model, &count),
        };
        // Set after the provider refused a request as too long: the next
        // one is compacted first, and a second refusal ends the turn.
        let mut pressure = None;
        for _step in 0..self.settings.max_steps_per_turn {
            if cancel.is_cancelled() {
                return Ok(outcome);
            }
            // A spent token quota ends the turn, naming the quota.
            match self.check_token_quota(&ctx.workspace).await {
                Ok(()) => {}
                Err(RuntimeError::Limited { code, message, .. }) => {
                    ctx.events.emit(EventBody::error(code, message)).await?;
                    return Ok(outcome);
                }
                Err(e) => return Err(e),
            }
            let (vars, ending) = {
                let state = ctx.state.lock().await;
                (state.variables.clone(), state.ending.is_some())
            };
            let system = render_variables(&assistant.system_prompt, &vars);
            let Some(messages) = self.step_messages(ctx, &step, &system, pressure).await? else {
                too_long(ctx).await?;
                return Ok(outcome);
            };
            // A feature that speaks the text takes it (`step_tap.rs`).
            let tap = crate::step_tap::tap_of(ctx);
            let request = ChatRequest {
                model: model.clone(),
                messages,
                // A spoken `generated` goodbye (voice design §4(f)): the
                // step after `endConversation` is offered no tools.
                tools: if ending && tap.is_some() {
                    FunctionList::default()
                } else {
                    tools.functions().clone()
                },
                temperature: assistant.llm.temperature,
                max_tokens: assistant.llm.max_tokens,
                output: rtc_core::llm::OutputFormat::Text,
            };
            let message_id = new_id("msg");
            if let Some(t) = &tap {
                t.step_started(&message_id);
            }
            let capture = self.settings.capture_content;
            let span = telemetry::chat_span(ctx, &model, &request.messages, capture);
            let answer = stream_answer(provider, request, ctx, cancel, &message_id, tap.as_deref())
                .instrument(span.clone())
                .await?;
            if let (Some(t), false) = (&tap, matches!(answer, Streamed::Answer(_)))
                && let Some(delivered) = t.step_abandoned(&message_id).await
            {
                Box::pin(self.record_delivered(ctx, delivered, &message_id)).await?;
            }
            if let Streamed::Answer(r) = &answer {
                telemetry::record_answer(&span, r, capture);
                self.meter(&usage_tag, provider_name, &model, r.usage.as_ref());
            }
            drop(span);
            let response = match answer {
                Streamed::Answer(response) => response,
                Streamed::Nothing => return Ok(outcome),
                Streamed::TooLong(message) if pressure.is_none() => {
                    let tokens = self.step_tokens(ctx, &step, &system).await?;
                    self.learn_window(ctx, tokens, &message);
                    pressure = Some(Pressure::Refused);
                    continue;
                }
                Streamed::TooLong(_) => {
                    too_long(ctx).await?;
                    return Ok(outcome);
                }
                Streamed::Cut { shown } => {
                    // With a tap, what it delivered was stored above.
                    let shown = if tap.is_some() { String::new() } else { shown };
                    Box::pin(self.record_cut(ctx, shown, message_id)).await?;
                    outcome.cut = true;
                    return Ok(outcome);
                }
            };
            pressure = None;
            outcome.finish_reason.clone_from(&response.finish_reason);
            let taken = self
                .with_history(ctx, |h| {
                    let known =
                        |id: &str| h.iter().any(|m| m.tool_calls.iter().any(|c| c.id == id));
                    response
                        .tool_calls
                        .iter()
                        .map(|c| known(&c.id))
                        .collect::<Vec<_>>()
                })
                .await?;
            let answer = crate::answer::check(response, &taken);
            // Boxed, as what runs before and after the model is (R-PF-5).
            Box::pin(self.record_answer(ctx, &answer, message_id, tap.as_deref())).await?;
            if answer.response.finish_reason.as_deref() == Some("content_filter") {
                let message = "the provider's content filter stopped the model's answer";
                ctx.events
                    .emit(EventBody::error("content_filter", message))
                    .await?;
            }
            if answer.response.tool_calls.is_empty() {
                outcome.answered = true;
                return Ok(outcome);
            }
            // Boxed: a turn waiting on its model does not carry the state
            // of its tool calls.
            if let Some(interrupt) =
                Box::pin(self.run_calls(ctx, assistant, cancel, &answer, &tools)).await?
            {
                if interrupt == Interrupt::Skip {
                    let skipped = TurnSkipped {
                        turn_id: turn_id.to_owned(),
                    };
                    ctx.events.emit(skipped.into()).await?;
                }
                outcome.answered = true;
                return Ok(outcome);
            }
        }
        let limit = format!(
            "the turn stopped after {} model calls",
            self.settings.max_steps_per_turn
        );
        ctx.events
            .emit(EventBody::error("step_limit", limit))
            .await?;
        Ok(outcome)
    }

    /// Whether `m` is one of the platform's own reports (a feature's, see
    /// `Feature::report_names`).
    pub(crate) fn is_report(&self, m: &Message) -> bool {
        m.name.as_deref().is_some_and(|name| {
            self.features
                .iter()
                .any(|f| f.report_names().contains(&name))
        })
    }

    /// The turn begins: what another instance wrote is reloaded, the
    /// platform's variables move on, `turn.started` is recorded.
    pub async fn begin(&self, ctx: &SessionCtx, turn_id: &str) -> Result<(), RuntimeError> {
        Box::pin(self.refresh_if_stale(ctx)).await?;
        let (variables, changes) = variables::begin_turn(ctx).await;
        let state = StateUpdated {
            changes,
            variables: variables.clone(),
            source: "system".to_owned(),
        };
        let update = SessionUpdate {
            variables: Some(variables),
            turn_running: Some(true),
            ..SessionUpdate::default()
        };
        let started = TurnStarted {
            turn_id: turn_id.to_owned(),
        };
        ctx.events
            .emit_with(vec![started.into(), state.into()], update)
            .await
    }

    /// Store the model's answer with its `message.completed` and
    /// `tool.called` events.
    async fn record_answer(
        &self,
        ctx: &SessionCtx,
        answer: &CheckedAnswer,
        message_id: String,
        tap: Option<&dyn StepTap>,
    ) -> Result<(), RuntimeError> {
        let response = &answer.response;
        let told = match tap {
            Some(t) => {
                let calls: Vec<String> =
                    response.tool_calls.iter().map(|c| c.name.clone()).collect();
                t.step_ended(&message_id, &response.content, &calls).await
            }
            None => StepStored::default(),
        };
        let content = told.content.as_deref().unwrap_or(&response.content);
        let mut stored = message(MessageRole::Assistant, content);
        stored.id = message_id;
        stored.source = told.source;
        stored.interrupted = told.interrupted;
        stored.tool_calls = response
            .tool_calls
            .iter()
            .map(|c| MessageToolCall {
                id: c.id.clone(),
                name: c.name.clone(),
                arguments: c.arguments.clone(),
            })
            .collect();
        let mut events: Vec<EventBody> = Vec::new();
        if !stored.content.is_empty() || response.tool_calls.is_empty() {
            let mut completed = MessageCompleted::of(&stored);
            completed.refusal = answer.refusal;
            completed.item_id = told.item_id;
            events.push(completed.into());
        }
        for c in &response.tool_calls {
            let called = ToolCalled {
                call_id: c.id.clone(),
                name: c.name.clone(),
                arguments: answer.written.get(&c.id).unwrap_or(&c.arguments).clone(),
                startup: false,
                origin: None,
            };
            events.push(called.into());
        }
        self.append(ctx, stored, events, Durability::Queued).await
    }

    /// Store what a step tap delivered of a step that ended without an
    /// answer (the played part of an interrupted answer).
    async fn record_delivered(
        &self,
        ctx: &SessionCtx,
        delivered: StepStored,
        message_id: &str,
    ) -> Result<(), RuntimeError> {
        let content = delivered.content.unwrap_or_default();
        if content.is_empty() {
            return Ok(());
        }
        let mut stored = message(MessageRole::Assistant, &content);
        stored.id = message_id.to_owned();
        stored.interrupted = delivered.interrupted;
        stored.source = delivered.source;
        let mut completed = MessageCompleted::of(&stored);
        completed.item_id = delivered.item_id;
        self.append(ctx, stored, vec![completed.into()], Durability::Queued)
            .await
    }

    /// Store the part of an answer that reached the host before its
    /// stream was cut, marked interrupted, with a `stream_cut` error.
    async fn record_cut(
        &self,
        ctx: &SessionCtx,
        shown: String,
        message_id: String,
    ) -> Result<(), RuntimeError> {
        let mut stored = message(MessageRole::Assistant, &shown);
        stored.id = message_id;
        stored.interrupted = true;
        if shown.is_empty() {
            let error = EventBody::error(
                "stream_cut",
                "the model's answer was cut off: the provider's stream ended before the answer was complete",
            );
            return ctx.events.emit(error).await;
        }
        let events = vec![
            MessageCompleted::of(&stored).into(),
            EventBody::error(
                "stream_cut",
                "the model's answer was cut off: the provider's stream ended before the answer was complete; only what arrived is kept",
            ),
        ];
        self.append(ctx, stored, events, Durability::Queued).await
    }

    /// Run the calls of one model answer concurrently, recording each
    /// result as it arrives; on cancellation, record the rest as cancelled.
    async fn run_calls(
        &self,
        ctx: &Arc<SessionCtx>,
        assistant: &rtc_protocol::Assistant,
        cancel: &CancellationToken,
        answer: &CheckedAnswer,
        tools: &SessionTools<H>,
    ) -> Result<Option<Interrupt>, RuntimeError> {
        let calls = &answer.response.tool_calls;
        let host = self.host();
        let host = &host;
        let mut running: FuturesUnordered<_> = calls
            .iter()
            .map(|call| {
                let handler = tools.find(&call.name);
                let capture = self.settings.capture_content;
                let span = telemetry::tool_span(ctx, call, capture);
                let recorded = span.clone();
                async move {
                    let nul = rtc_core::text::nul_field_in_json(&call.arguments);
                    let outcome = match handler {
                        // Arguments cut off or not JSON: not run.
                        Some(_) if let Some(problem) = answer.refused.get(&call.id) => {
                            Ok(CallOutcome::error(problem.clone()))
                        }
                        // Nothing a NUL reaches could be stored on PostgreSQL.
                        Some(_) if let Some(field) = &nul => Ok(CallOutcome::error(format!(
                            "the argument `{field}` must not contain the NUL character (U+0000)"
                        ))),
                        Some(h) => {
                            let cx = ToolCx {
                                rt: host,
                                session: ctx,
                                assistant,
                                call,
                            };
                            h.call(cx).await
                        }
                        None => Ok(CallOutcome::error(format!(
                            "there is no tool named `{}`",
                            call.name
                        ))),
                    };
                    if let Ok(o) = &outcome {
                        telemetry::record_tool(&recorded, o.is_error, &o.content, capture);
                    }
                    (call, outcome)
                }
                .instrument(span)
            })
            .collect();
        let mut pending: Vec<&str> = calls.iter().map(|c| c.id.as_str()).collect();
        let mut interrupt = None;
        loop {
            let next = tokio::select! {
                () = cancel.cancelled() => break,
                next = running.next() => next,
            };
            let Some((call, outcome)) = next else { break };
            let outcome = outcome?;
            pending.retain(|id| *id != call.id);
            interrupt = interrupt.or(outcome.interrupt);
            if outcome.deferred {
                continue;
            }
            let mut m = message(MessageRole::Tool, &outcome.content);
            m.tool_call_id = Some(call.id.clone());
            m.name = Some(call.name.clone());
            m.images = outcome.images;
            let event = ToolCompleted::new(&call.id, &call.name, outcome.is_error, outcome.shown)
                .capped(self.settings.limits.max_event_result_bytes)
                .into();
            self.append(ctx, m, vec![event], Durability::Queued).await?;
        }
        drop(running);
        for id in pending {
            let name = calls
                .iter()
                .find(|c| c.id == id)
                .map_or("", |c| c.name.as_str());
            let mut m = message(MessageRole::Tool, CANCELLED);
            m.tool_call_id = Some(id.to_owned());
            m.name = Some(name.to_owned());
            let event = ToolCompleted::cancelled(id, name).into();
            self.append(ctx, m, vec![event], Durability::Queued).await?;
        }
        Ok(interrupt)
    }
}

/// Stream the model's answer to `request`, emitting `message.delta`s and
/// counting its tokens.
async fn stream_answer(
    provider: &Provider,
    request: ChatRequest,
    ctx: &SessionCtx,
    cancel: &CancellationToken,
    message_id: &str,
    tap: Option<&dyn StepTap>,
) -> Result<Streamed, RuntimeError> {
    let mut stream = provider.client.stream(request);
    // What reached the host, kept if the stream is cut.
    let mut shown = String::new();
    loop {
        let next = tokio::select! {
            () = cancel.cancelled() => return Ok(Streamed::Nothing),
            next = stream.next() => next,
        };
        match next {
            Some(Ok(LlmEvent::TextDelta(delta))) => {
                shown.push_str(&delta);
                if let Some(t) = tap {
                    t.delta(message_id, &delta);
                    continue;
                }
                let delta = MessageDelta::text(message_id, delta);
                ctx.events.emit(delta.into()).await?;
            }
            Some(Ok(LlmEvent::Done(r))) => {
                if let Some(u) = &r.usage {
                    let used = i64::try_from(u.prompt_tokens.saturating_add(u.completion_tokens))
                        .unwrap_or(i64::MAX);
                    ctx.turn_tokens
                        .fetch_add(used, std::sync::atomic::Ordering::Relaxed);
                }
                return Ok(Streamed::Answer(r));
            }
            Some(Err(LlmError::ContextLength(message))) if shown.is_empty() => {
                telemetry::record_error(
                    &tracing::Span::current(),
                    "context_length_exceeded",
                    &message,
                );
                return Ok(Streamed::TooLong(message));
            }
            Some(Err(LlmError::Cut)) if !shown.is_empty() => {
                telemetry::record_error(&tracing::Span::current(), "stream_cut", "cut");
                return Ok(Streamed::Cut { shown });
            }
            Some(Err(e)) => {
                telemetry::record_error(&tracing::Span::current(), "llm_failed", &e.to_string());
                ctx.events
                    .emit(EventBody::error("llm_failed", e.to_string()))
                    .await?;
                return Ok(Streamed::Nothing);
            }
            None => {
                ctx.events
                    .emit(EventBody::error(
                        "llm_failed",
                        "the model stream ended without an answer",
                    ))
                    .await?;
                return Ok(Streamed::Nothing);
            }
        }
    }
}
