//! The bridge of one realtime session (design `realtime.md` §5): one task
//! owning the provider connection, fed by the host's socket and by the
//! provider's events. It turns provider events into the session's stored
//! events and messages (audio goes to the host only), runs the model's
//! function calls through the registry (never cancelled, each answered
//! exactly once), and follows [`ResponseBook`] on when to ask for a
//! response.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine;
use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use rtc_core::llm::ToolCall;
use rtc_protocol::{
    AudioDelta, BuiltInToolName, EndMessageType, EphemeralFrame, EventBody, Message,
    MessageCompleted, MessageDelta, MessageRole, MessageToolCall, RealtimeReady, SessionStatus,
    SpeechStarted, ToolCalled, TurnCompleted,
};
use rtc_realtime::resample::{Resampler, duration_ms};
use rtc_realtime::{RealtimeAdapter, ResponseOpts, RtCaps, RtEvent};
use rtc_store::{SessionUpdate, new_id};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::book::{Next, ResponseBook};
use super::calls::{Finished, run_call};
use super::setup::Plan;
use crate::events::Durability;
use crate::history::message;
use crate::session::SessionCtx;
use crate::{Inner, RuntimeError};

/// The least time between two connection attempts after a failure.
const RECONNECT_PAUSE: Duration = Duration::from_secs(2);

/// What the host's socket hands the bridge.
pub enum HostInput {
    /// `client.hello`'s audio rates.
    Rates {
        input: u32,
        output: u32,
    },
    /// PCM16 at the host's input rate.
    Audio(Vec<u8>),
    Commit,
    /// A typed user message; the reply says whether it was taken.
    Text(String, oneshot::Sender<Result<Message, RuntimeError>>),
    PlaybackInterrupted {
        item_id: String,
        played_ms: u32,
    },
}

/// The live provider connection.
struct Live {
    adapter: Box<dyn RealtimeAdapter>,
    events: mpsc::Receiver<RtEvent>,
    caps: RtCaps,
    plan: Plan,
    book: ResponseBook,
    /// The stored turn of each response.
    turns: HashMap<String, String>,
    /// Sending failed: nothing more is sent; the events still queued are
    /// read until the connection's `Closed`.
    broken: bool,
}

/// An assistant transcript item of the provider.
struct Item {
    message_id: String,
    response_id: Option<String>,
    text: String,
    final_text: Option<String>,
    /// Audio received, in bytes at the provider's output rate.
    audio_bytes: usize,
    interrupted: bool,
    stored: bool,
}

/// How the session ends after a goodbye.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ending {
    None,
    /// The next response we asked for is the goodbye.
    AfterGoodbye,
}

pub(crate) struct Bridge {
    pub rt: Arc<Inner>,
    pub ctx: Arc<SessionCtx>,
    pub cancel: CancellationToken,
    pub frames: mpsc::Sender<EphemeralFrame>,
    live: Option<Live>,
    host_rates: (u32, u32),
    up: Resampler,
    down: Resampler,
    items: HashMap<String, Item>,
    item_order: Vec<String>,
    running: FuturesUnordered<BoxFuture<'static, Finished>>,
    last_failure: Option<Instant>,
    ending: Ending,
    /// The goodbye response was asked for; its `response.done` ends the session.
    goodbye_asked: bool,
    /// Input audio is not forwarded (a goodbye that may not be interrupted).
    deaf: bool,
    greeted: bool,
}

impl Bridge {
    pub fn new(
        rt: Arc<Inner>,
        ctx: Arc<SessionCtx>,
        cancel: CancellationToken,
        frames: mpsc::Sender<EphemeralFrame>,
    ) -> Self {
        Self {
            rt,
            ctx,
            cancel,
            frames,
            live: None,
            host_rates: (0, 0),
            up: Resampler::new(1, 1),
            down: Resampler::new(1, 1),
            items: HashMap::new(),
            item_order: Vec::new(),
            running: FuturesUnordered::new(),
            last_failure: None,
            ending: Ending::None,
            goodbye_asked: false,
            deaf: false,
            greeted: false,
        }
    }

    /// Run until the host goes, the session ends or the bridge is replaced.
    pub async fn run(mut self, mut input: mpsc::Receiver<HostInput>) {
        if let Err(e) = self.connect().await {
            tracing::error!(session = %self.ctx.id, error = %e, "realtime connect failed");
        }
        loop {
            let step = tokio::select! {
                () = self.cancel.cancelled() => break,
                host = input.recv() => match host {
                    None => break,
                    Some(h) => self.host(h).await,
                },
                event = next_event(&mut self.live) => self.provider(event).await,
                Some(done) = self.running.next(), if !self.running.is_empty() => {
                    self.call_finished(done).await
                }
            };
            match step {
                Ok(true) => {}
                Ok(false) => break,
                Err(e) => {
                    tracing::error!(session = %self.ctx.id, error = %e, "realtime bridge failed");
                    let _ = self
                        .ctx
                        .events
                        .emit(EventBody::error(
                            "realtime_failed",
                            "the realtime session failed; see the server log",
                        ))
                        .await;
                    break;
                }
            }
        }
        self.close().await;
    }

    /// Close the provider; calls still running finish and are recorded.
    async fn close(&mut self) {
        if let Some(mut live) = self.live.take() {
            let _ = live.adapter.close().await;
            let active = live.book.active().map(str::to_owned);
            if let Some(id) = active {
                let _ = self.end_turn(&mut live, &id, "cancelled", true).await;
            }
        }
        let running = std::mem::take(&mut self.running);
        if !running.is_empty() {
            self.rt.tasks.spawn(async move {
                running.for_each(|_| async {}).await;
            });
        }
    }

    /// Open the provider session (after a pause if the last attempt failed).
    async fn connect(&mut self) -> Result<bool, RuntimeError> {
        if self.live.is_some() {
            return Ok(true);
        }
        if self
            .last_failure
            .is_some_and(|t| t.elapsed() < RECONNECT_PAUSE)
        {
            return Ok(false);
        }
        let plan = match self.rt.realtime_plan(&self.ctx).await? {
            Ok(plan) => plan,
            Err(refusal) => {
                self.last_failure = Some(Instant::now());
                self.ctx
                    .events
                    .emit(EventBody::error(refusal.code, refusal.message))
                    .await?;
                return Ok(false);
            }
        };
        let opened = async {
            let (mut adapter, events) = rtc_realtime::connect(&plan.cfg).await?;
            adapter.update_session(&plan.spec).await?;
            Ok::<_, rtc_realtime::RealtimeError>((adapter, events))
        }
        .await;
        let (adapter, events) = match opened {
            Ok(pair) => pair,
            Err(e) => {
                self.last_failure = Some(Instant::now());
                let message = plan.scrubber.scrub_str(&e.to_string());
                self.ctx
                    .events
                    .emit(EventBody::error("realtime_connect_failed", message))
                    .await?;
                return Ok(false);
            }
        };
        self.last_failure = None;
        let caps = adapter.caps();
        if self.host_rates == (0, 0) {
            self.host_rates = (caps.input.rate, caps.output.rate);
        }
        self.up = Resampler::new(self.host_rates.0, caps.input.rate);
        self.down = Resampler::new(caps.output.rate, self.host_rates.1);
        self.live = Some(Live {
            adapter,
            events,
            caps,
            plan,
            book: ResponseBook::default(),
            turns: HashMap::new(),
            broken: false,
        });
        Ok(true)
    }

    /// One input of the host; `false` ends the bridge.
    async fn host(&mut self, input: HostInput) -> Result<bool, RuntimeError> {
        if let HostInput::Rates { input, output } = input {
            let changed = self.host_rates != (input, output);
            self.host_rates = (input, output);
            if let Some(live) = self.live.as_ref().filter(|_| changed) {
                self.up = Resampler::new(input, live.caps.input.rate);
                self.down = Resampler::new(live.caps.output.rate, output);
                let ready = RealtimeReady {
                    input_rate: input,
                    output_rate: output,
                    dialect: live.plan.connection.dialect,
                };
                self.ctx.events.emit(ready.into()).await?;
            }
            return Ok(true);
        }
        if let HostInput::Audio(_) = &input
            && (self.deaf || self.ctx.state.lock().await.status != SessionStatus::Active)
        {
            // A goodbye that may not be interrupted, a human agent, an end.
            return Ok(true);
        }
        if let HostInput::Text(text, reply) = input {
            let taken = self.text(&text).await;
            // A platform fault is the host's answer here, not the bridge's end.
            let _ = reply.send(taken);
            return Ok(true);
        }
        if matches!(input, HostInput::Audio(_)) && !self.connect().await? {
            return Ok(true);
        }
        let Some(mut live) = self.live.take() else {
            return Ok(true);
        };
        if live.broken {
            self.live = Some(live);
            return Ok(true);
        }
        let sent = match input {
            HostInput::Audio(pcm) => {
                let pcm = self.up.process(&pcm);
                live.adapter.send_audio(&pcm).await
            }
            HostInput::Commit => match live.adapter.commit_audio().await {
                Ok(()) => {
                    let next = live.book.want(ResponseOpts::default());
                    self.follow_on(&mut live, next).await?;
                    Ok(())
                }
                Err(e) => Err(e),
            },
            HostInput::PlaybackInterrupted { item_id, played_ms } => {
                self.playback_interrupted(&mut live, &item_id, played_ms)
                    .await
            }
            HostInput::Rates { .. } | HostInput::Text(..) => Ok(()),
        };
        if let Err(e) = sent {
            // What the provider sent before it went is still to be read:
            // its `Closed` comes after it, and ends the connection.
            tracing::debug!(session = %self.ctx.id, error = %e, "sending to the realtime provider failed");
            live.broken = true;
        }
        self.live = Some(live);
        Ok(true)
    }

    /// A typed message: stored, then given to the model (not while a
    /// human agent has the conversation).
    async fn text(&mut self, text: &str) -> Result<Message, RuntimeError> {
        let status = self.ctx.state.lock().await.status;
        if status == SessionStatus::Ended {
            return Err(RuntimeError::Conflict {
                code: "session_ended",
                message: "the session has ended".into(),
            });
        }
        let m = message(MessageRole::User, text);
        let (rt, ctx) = (self.rt.clone(), self.ctx.clone());
        let store = |m: Message| async move {
            let event = MessageCompleted::of(&m).into();
            rt.append(&ctx, m, vec![event], Durability::Committed).await
        };
        if status == SessionStatus::Handoff {
            store(m.clone()).await?;
            return Ok(m);
        }
        let unavailable = || RuntimeError::Conflict {
            code: "realtime_unavailable",
            message: "the realtime provider cannot be reached right now".into(),
        };
        if !self.connect().await? {
            return Err(unavailable());
        }
        let Some(mut live) = self.live.take() else {
            return Err(unavailable());
        };
        if !live.caps.supports_text_input {
            let dialect = live.plan.connection.dialect.as_str();
            self.live = Some(live);
            return Err(RuntimeError::Conflict {
                code: "text_input_unsupported",
                message: format!(
                    "the {dialect} realtime provider takes audio only; send `audio.append`"
                ),
            });
        }
        if let Err(e) = store(m.clone()).await {
            self.live = Some(live);
            return Err(e);
        }
        let mut sent = live.adapter.send_text(text).await;
        if sent.is_ok() && live.book.active().is_some() {
            // Typing over the assistant interrupts it, as speech would.
            sent = live.adapter.cancel().await;
        }
        match sent {
            Ok(()) => {
                let next = live.book.want(ResponseOpts::default());
                let r = self.follow_on(&mut live, next).await;
                self.live = Some(live);
                r.map(|()| m)
            }
            Err(e) => {
                tracing::debug!(session = %self.ctx.id, error = %e, "sending to the realtime provider failed");
                live.broken = true;
                self.live = Some(live);
                Err(unavailable())
            }
        }
    }

    async fn playback_interrupted(
        &mut self,
        live: &mut Live,
        item_id: &str,
        played_ms: u32,
    ) -> rtc_realtime::Result<()> {
        let Some(item) = self.items.get_mut(item_id) else {
            return Ok(());
        };
        item.interrupted = true;
        // Never more than the item holds: a longer `audio_end_ms` is an
        // error (the pitfall of truncating by a stale position).
        let held = duration_ms(item.audio_bytes, live.caps.output.rate);
        if live.caps.supports_truncate {
            live.adapter.truncate(item_id, played_ms.min(held)).await?;
        }
        Ok(())
    }

    /// One provider event; `false` ends the bridge.
    async fn provider(&mut self, event: RtEvent) -> Result<bool, RuntimeError> {
        let Some(mut live) = self.live.take() else {
            return Ok(true);
        };
        let go_on = self.provider_event(&mut live, event).await;
        if self.live.is_none() && !matches!(go_on, Ok(Flow::Lost)) {
            self.live = Some(live);
        }
        match go_on? {
            Flow::Go | Flow::Lost => Ok(true),
            Flow::Stop => Ok(false),
        }
    }

    async fn provider_event(
        &mut self,
        live: &mut Live,
        event: RtEvent,
    ) -> Result<Flow, RuntimeError> {
        match event {
            RtEvent::Ready { .. } => {
                self.live_ready(live).await?;
            }
            RtEvent::SpeechStarted { audio_start_ms } => {
                if let Some(active) = live.book.speech_started() {
                    for item in self.items.values_mut() {
                        if item.response_id.as_deref() == Some(active.as_str()) {
                            item.interrupted = true;
                        }
                    }
                }
                self.speech_during_goodbye().await;
                self.ctx
                    .events
                    .emit(SpeechStarted { audio_start_ms }.into())
                    .await?;
            }
            RtEvent::SpeechStopped { .. } | RtEvent::Truncated { .. } => {}
            RtEvent::UserTranscript { text, is_final, .. } => {
                if is_final && !text.trim().is_empty() {
                    let mut m = message(MessageRole::User, text.trim());
                    m.source = Some("audio".to_owned());
                    let event = MessageCompleted::of(&m).into();
                    self.rt
                        .append(&self.ctx, m, vec![event], Durability::Queued)
                        .await?;
                }
            }
            RtEvent::ResponseStarted { response_id } => {
                live.book.started(&response_id);
                let turn_id = new_id("turn");
                self.rt.begin(&self.ctx, &turn_id).await?;
                live.turns.insert(response_id, turn_id);
            }
            RtEvent::Audio {
                response_id,
                item_id,
                pcm,
            } => {
                if live.book.is_barged(&response_id) {
                    return Ok(Flow::Go);
                }
                self.item(&item_id, Some(&response_id)).audio_bytes += pcm.len();
                let audio = self.down.process(&pcm);
                let frame = EphemeralFrame::AudioDelta(AudioDelta {
                    item_id,
                    audio: base64::engine::general_purpose::STANDARD.encode(audio),
                    rate: self.host_rates.1,
                });
                // A host that cannot keep up loses audio, never the session.
                let _ = self.frames.try_send(frame);
            }
            RtEvent::AssistantTranscript {
                item_id,
                delta,
                is_final,
            } => {
                let active = live.book.active().map(str::to_owned);
                let item = self.item(&item_id, active.as_deref());
                if is_final {
                    item.final_text = Some(if delta.is_empty() {
                        item.text.clone()
                    } else {
                        delta
                    });
                } else if !delta.is_empty() {
                    item.text.push_str(&delta);
                    let mut event = MessageDelta::text(&item.message_id, delta);
                    event.source = Some("audio".to_owned());
                    event.role = Some(MessageRole::Assistant);
                    event.item_id = Some(item_id);
                    self.ctx.events.emit(event.into()).await?;
                }
            }
            RtEvent::ToolCall {
                response_id,
                call_id,
                name,
                arguments,
            } => {
                self.tool_call(live, response_id, call_id, name, arguments)
                    .await?;
            }
            RtEvent::ResponseDone {
                response_id,
                status,
                ..
            } => {
                let interrupted = status == rtc_realtime::RespStatus::Cancelled
                    || live.book.is_barged(&response_id);
                self.end_turn(live, &response_id, status.as_str(), interrupted)
                    .await?;
                let next = live.book.done(&response_id);
                if self.goodbye_asked && self.ending == Ending::AfterGoodbye {
                    return self.finish_ending(live).await;
                }
                self.follow_on(live, next).await?;
            }
            RtEvent::Error {
                code,
                message,
                fatal,
            } => {
                let message = live.plan.scrubber.scrub_str(&message);
                self.ctx
                    .events
                    .emit(EventBody::error(
                        "realtime_provider_error",
                        format!("{code}: {message}"),
                    ))
                    .await?;
                if fatal {
                    let _ = live.adapter.close().await;
                }
            }
            RtEvent::Closed { reason } => {
                let reason = live.plan.scrubber.scrub_str(&reason);
                self.upstream_closed(live, &reason).await?;
                return Ok(Flow::Lost);
            }
        }
        Ok(Flow::Go)
    }

    /// The provider is configured: tell the host, and greet once.
    async fn live_ready(&mut self, live: &mut Live) -> Result<(), RuntimeError> {
        self.ctx
            .events
            .emit(
                RealtimeReady {
                    input_rate: self.host_rates.0,
                    output_rate: self.host_rates.1,
                    dialect: live.plan.connection.dialect,
                }
                .into(),
            )
            .await?;
        if self.greeted {
            return Ok(());
        }
        self.greeted = true;
        let first = self.ctx.config.assistant.first_message.clone();
        let spoke = self
            .rt
            .with_history(&self.ctx, |h| {
                h.iter().any(|m| m.role == MessageRole::Assistant)
            })
            .await?;
        if let Some(first) = first.filter(|_| !spoke) {
            let vars = self.ctx.state.lock().await.variables.clone();
            let text = rtc_core::model_tools::render_variables(&first, &vars);
            let next = live.book.want(say_exactly(&text));
            self.follow_on(live, next).await?;
        }
        Ok(())
    }

    /// A function call of the model: recorded, then run (or refused).
    async fn tool_call(
        &mut self,
        live: &mut Live,
        response_id: String,
        call_id: String,
        name: String,
        arguments: String,
    ) -> Result<(), RuntimeError> {
        // What the model said before the call comes first in the history.
        self.store_items(Some(&response_id), false).await?;
        let mut m = message(MessageRole::Assistant, "");
        m.source = Some("audio".to_owned());
        m.tool_calls = vec![MessageToolCall {
            id: call_id.clone(),
            name: name.clone(),
            arguments: arguments.clone(),
        }];
        let called = ToolCalled {
            call_id: call_id.clone(),
            name: name.clone(),
            arguments: arguments.clone(),
            startup: false,
            origin: None,
        };
        self.rt
            .append(&self.ctx, m, vec![called.into()], Durability::Queued)
            .await?;
        live.book.call(&response_id, &call_id);
        let call = ToolCall {
            id: call_id,
            name,
            arguments,
        };
        let refusal = if !live.plan.declared.contains(&call.name) {
            Some(format!(
                "the tool `{}` is not available in this realtime session",
                call.name
            ))
        } else {
            live.plan
                .client_functions
                .get(&call.name)
                .filter(|f| !self.ctx.broker.supports(f))
                .map(|f| {
                    format!(
                        "no connected client supports `{f}`; the user's app cannot do this right now"
                    )
                })
        };
        if let Some(refusal) = refusal {
            // Answered at once, and the model is not asked to go on (design §5a).
            let done = super::calls::refuse(&self.rt, &self.ctx, call, refusal).await?;
            return self.submit(live, done).await;
        }
        self.running.push(Box::pin(run_call(
            self.rt.clone(),
            self.ctx.clone(),
            live.plan.tools.clone(),
            call,
        )));
        Ok(())
    }

    /// A call ran to its end: its output goes to the provider.
    async fn call_finished(&mut self, done: Finished) -> Result<bool, RuntimeError> {
        let Some(mut live) = self.live.take() else {
            // The provider is gone; the result is stored and the next
            // connection's instructions carry it.
            return Ok(true);
        };
        if !live.book.is_pending(&done.call_id) {
            self.live = Some(live);
            return Ok(true);
        }
        let name = done.name.clone();
        let interrupt = done.interrupt;
        if name == BuiltInToolName::EndConversation.as_str() && !done.is_error {
            self.prepare_goodbye().await;
        }
        let result = self.submit(&mut live, done).await;
        let flow = match result {
            Ok(()) => self.after_platform_call(&mut live, &name, interrupt).await,
            Err(e) => Err(e),
        };
        let keep = !matches!(flow, Ok(Flow::Stop));
        if self.live.is_none() {
            self.live = Some(live);
        }
        flow.map(|_| keep)
    }

    async fn submit(&mut self, live: &mut Live, done: Finished) -> Result<(), RuntimeError> {
        if let Err(e) = live
            .adapter
            .submit_tool_result(&done.call_id, &done.content)
            .await
        {
            tracing::warn!(session = %self.ctx.id, error = %e, "submitting a tool result failed");
            return Ok(());
        }
        let next = live.book.output(&done.call_id, done.follow_up);
        self.follow_on(live, next).await
    }

    /// What endConversation and requestHumanHandoff mean for the audio.
    async fn after_platform_call(
        &mut self,
        live: &mut Live,
        name: &str,
        interrupt: Option<crate::tool::Interrupt>,
    ) -> Result<Flow, RuntimeError> {
        let built_ins = &self.ctx.config.assistant.built_in_tools;
        if name == BuiltInToolName::EndConversation.as_str() {
            if self.ctx.state.lock().await.ending.is_none() {
                return Ok(Flow::Go);
            }
            let Some(cfg) = built_ins.end_conversation.clone() else {
                return Ok(Flow::Go);
            };
            match cfg.message_type {
                EndMessageType::None => return self.finish_ending(live).await,
                EndMessageType::Custom => {
                    let next = live.book.want(say_exactly(&cfg.custom_message));
                    self.follow_on(live, next).await?;
                }
                // The follow-up response (asked for with the output) is the goodbye.
                EndMessageType::Generated => {}
            }
        } else if interrupt == Some(crate::tool::Interrupt::Handoff)
            && let Some(text) = built_ins
                .request_human_handoff
                .as_ref()
                .and_then(|h| h.message.clone())
        {
            let next = live.book.want(say_exactly(&text));
            self.follow_on(live, next).await?;
        }
        Ok(Flow::Go)
    }

    /// endConversation succeeded: the next response we ask for is the
    /// goodbye (asked for with its output, or a custom message), after
    /// which the session ends; without `allowEndInterruption` the user's
    /// audio is no longer forwarded.
    async fn prepare_goodbye(&mut self) {
        let Some((_, allow)) = self.ctx.state.lock().await.ending.clone() else {
            return;
        };
        let spoken = self
            .ctx
            .config
            .assistant
            .built_in_tools
            .end_conversation
            .as_ref()
            .is_some_and(|c| c.message_type != EndMessageType::None);
        if spoken {
            self.ending = Ending::AfterGoodbye;
            self.deaf = !allow;
        }
    }

    /// The user spoke during a goodbye that allows it: the end is off.
    async fn speech_during_goodbye(&mut self) {
        if self.ending == Ending::AfterGoodbye && !self.deaf {
            self.ending = Ending::None;
            self.goodbye_asked = false;
            self.ctx.state.lock().await.ending = None;
        }
    }

    async fn finish_ending(&mut self, live: &mut Live) -> Result<Flow, RuntimeError> {
        self.rt.finish_ending(&self.ctx).await?;
        let _ = live.adapter.close().await;
        self.rt.forget(&self.ctx.id);
        Ok(Flow::Stop)
    }

    async fn follow_on(&mut self, live: &mut Live, next: Next) -> Result<(), RuntimeError> {
        let Next::Create(opts) = next else {
            return Ok(());
        };
        if self.ending == Ending::AfterGoodbye {
            self.goodbye_asked = true;
        }
        if let Err(e) = live.adapter.create_response(opts).await {
            tracing::warn!(session = %self.ctx.id, error = %e, "response.create failed");
        }
        Ok(())
    }

    /// Store what was said in a response, then close its turn.
    async fn end_turn(
        &mut self,
        live: &mut Live,
        response_id: &str,
        status: &str,
        interrupted: bool,
    ) -> Result<(), RuntimeError> {
        self.store_items(Some(response_id), true).await?;
        let Some(turn_id) = live.turns.remove(response_id) else {
            return Ok(());
        };
        let completed = TurnCompleted {
            turn_id: Some(turn_id),
            interrupted,
            reason: None,
            status: Some(status.to_owned()),
        };
        let update = SessionUpdate {
            turn_running: Some(false),
            ..SessionUpdate::default()
        };
        self.ctx
            .events
            .emit_with(vec![completed.into()], update)
            .await
    }

    /// Store the transcripts of `response_id`'s items: those finished, or
    /// (`all`) every one with text.
    async fn store_items(
        &mut self,
        response_id: Option<&str>,
        all: bool,
    ) -> Result<(), RuntimeError> {
        for id in self.item_order.clone() {
            let Some(item) = self.items.get_mut(&id) else {
                continue;
            };
            if item.stored || item.response_id.as_deref() != response_id {
                continue;
            }
            let text = match (&item.final_text, all) {
                (Some(t), _) => t.clone(),
                (None, true) => item.text.clone(),
                (None, false) => continue,
            };
            item.stored = true;
            if text.trim().is_empty() {
                continue;
            }
            let mut m = message(MessageRole::Assistant, &text);
            m.id = item.message_id.clone();
            m.source = Some("audio".to_owned());
            m.interrupted = item.interrupted;
            let mut event = MessageCompleted::of(&m);
            event.item_id = Some(id.clone());
            self.rt
                .append(&self.ctx, m, vec![event.into()], Durability::Queued)
                .await?;
        }
        let before = self.item_order.len();
        let items = &self.items;
        self.item_order
            .retain(|id| items.get(id).is_some_and(|i| !i.stored));
        if self.item_order.len() != before {
            self.items.retain(|_, i| !i.stored || i.audio_bytes > 0);
        }
        Ok(())
    }

    fn item(&mut self, item_id: &str, response_id: Option<&str>) -> &mut Item {
        if !self.items.contains_key(item_id) {
            self.item_order.push(item_id.to_owned());
        }
        self.items
            .entry(item_id.to_owned())
            .or_insert_with(|| Item {
                message_id: new_id("msg"),
                response_id: response_id.map(str::to_owned),
                text: String::new(),
                final_text: None,
                audio_bytes: 0,
                interrupted: false,
                stored: false,
            })
    }

    /// The provider went away: the turn ends, the session stays; the next
    /// input connects again.
    async fn upstream_closed(&mut self, live: &mut Live, reason: &str) -> Result<(), RuntimeError> {
        self.ctx
            .events
            .emit(EventBody::error(
                "realtime_upstream_closed",
                format!("the realtime provider closed the connection: {reason}"),
            ))
            .await?;
        if let Some(active) = live.book.active().map(str::to_owned) {
            self.end_turn(live, &active, "failed", true).await?;
        }
        for id in live.turns.keys().cloned().collect::<Vec<_>>() {
            self.end_turn(live, &id, "failed", true).await?;
        }
        self.store_items(None, true).await?;
        self.last_failure = None;
        Ok(())
    }
}

/// Whether the bridge goes on after a provider event.
enum Flow {
    Go,
    /// The provider connection is gone (the bridge stays).
    Lost,
    /// The session ended.
    Stop,
}

fn say_exactly(text: &str) -> ResponseOpts {
    ResponseOpts {
        instructions: Some(format!(
            "Say exactly this, word for word, and nothing else: {text}"
        )),
    }
}

/// The next provider event, or never while there is no connection.
async fn next_event(live: &mut Option<Live>) -> RtEvent {
    match live.as_mut() {
        Some(l) => match l.events.recv().await {
            Some(e) => e,
            None => RtEvent::Closed {
                reason: "the connection ended".to_owned(),
            },
        },
        None => std::future::pending().await,
    }
}
