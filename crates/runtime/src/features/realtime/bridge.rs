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

mod endings;
mod tool_calls;
mod transcripts;

use super::Bridges;
use super::book::{Next, ResponseBook};
use super::budget::Grant;
use super::calls::{Finished, run_call};
use super::setup::{Plan, PlanError};
use crate::events::Durability;
use crate::features::realtime::RealtimeService;
use crate::history::message;
use crate::session::SessionCtx;
use crate::{Inner, RuntimeError};

/// The pause after a failed connection, doubling per failure up to
/// [`MAX_RECONNECT_PAUSE`].
const RECONNECT_PAUSE: Duration = Duration::from_secs(2);
const MAX_RECONNECT_PAUSE: Duration = Duration::from_secs(60);
/// A connection that lived shorter than this and closed counts as failed.
const SHORT_LIVED: Duration = Duration::from_secs(10);
/// Answers kept for `playback.interrupted` after they were stored.
const MAX_PLAYING_ITEMS: usize = 16;

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
    /// It was stored (as `message_id`) while its audio may still be
    /// playing: a later interruption marks the stored message.
    stored_playing: bool,
    /// Order of arrival.
    serial: usize,
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
    serial: usize,
    running: FuturesUnordered<BoxFuture<'static, Finished>>,
    last_failure: Option<Instant>,
    failures: u32,
    connected_at: Option<Instant>,
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
            serial: 0,
            running: FuturesUnordered::new(),
            last_failure: None,
            failures: 0,
            connected_at: None,
            ending: Ending::None,
            goodbye_asked: false,
            deaf: false,
            greeted: false,
        }
    }

    /// A connection failed (or closed soon after it opened).
    fn failed(&mut self) {
        self.failures = self.failures.saturating_add(1);
        self.last_failure = Some(Instant::now());
    }

    /// The pause before the next attempt: doubling, at most a minute.
    fn reconnect_pause(&self) -> Duration {
        let doublings = self.failures.saturating_sub(1).min(5);
        (RECONNECT_PAUSE * 2u32.pow(doublings)).min(MAX_RECONNECT_PAUSE)
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
            let ended = self.ctx.state.lock().await.status == SessionStatus::Ended;
            // An open turn is closed, unless the session ended (nothing
            // is written after `session.ended`).
            let open: Vec<String> = live.turns.keys().cloned().collect();
            for id in open.iter().filter(|_| !ended) {
                let _ = self.end_turn(&mut live, id, "cancelled", true).await;
            }
            if !ended {
                let _ = self.store_items(None, true).await;
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
            .is_some_and(|t| t.elapsed() < self.reconnect_pause())
        {
            return Ok(false);
        }
        if self.ctx.state.lock().await.status == SessionStatus::Ended {
            return Ok(false);
        }
        let connects = &self.rt.service::<Bridges>().connects;
        if let Grant::Wait { report } = connects.take(&self.ctx.id, Instant::now()) {
            if report {
                let message = format!(
                    "this session opened its provider connection too often (at most {} a minute after a burst of {}); the next audio connects when the limit allows",
                    connects.per_minute(),
                    super::budget::BURST
                );
                self.ctx
                    .events
                    .emit(EventBody::error("realtime_connect_limited", message))
                    .await?;
            }
            return Ok(false);
        }
        let plan = match RealtimeService::of(&self.rt).realtime_plan(&self.ctx).await {
            Ok(plan) => plan,
            Err(PlanError::Platform(e)) => return Err(e),
            Err(PlanError::Refused(refusal)) => {
                self.failed();
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
                self.failed();
                let message = plan.scrubber.scrub_str(&e.to_string());
                self.ctx
                    .events
                    .emit(EventBody::error("realtime_connect_failed", message))
                    .await?;
                return Ok(false);
            }
        };
        self.connected_at = Some(Instant::now());
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
        if let HostInput::PlaybackInterrupted { item_id, .. } = &input {
            self.mark_stored_interrupted(item_id).await?;
        }
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
            return Err(RuntimeError::session_ended());
        }
        let m = message(MessageRole::User, text);
        let (rt, ctx) = (self.rt.clone(), self.ctx.clone());
        let store = |m: Message| async move {
            let event = MessageCompleted::of(&m).into();
            rt.append(&ctx, m, vec![event], Durability::Committed).await
        };
        if status == SessionStatus::Handoff || self.deaf {
            // A human agent has the conversation, or a goodbye that may
            // not be interrupted is being said: kept, not sent.
            store(m.clone()).await?;
            return Ok(m);
        }
        self.speech_during_goodbye().await;
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
        // As in text sessions, a report mark the user typed reaches the
        // model quoted (the stored message keeps what was typed).
        let quoted = rtc_core::report_marks::quote_marks(text);
        let mut sent = live.adapter.send_text(&quoted).await;
        if sent.is_ok()
            && let Some(active) = live.book.barge_active()
        {
            // Typing over the assistant interrupts it, as speech would.
            self.mark_interrupted(&active);
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
        let of_active =
            item.response_id.is_some() && item.response_id.as_deref() == live.book.active();
        if live.caps.supports_truncate {
            live.adapter.truncate(item_id, played_ms.min(held)).await?;
        }
        // The host stopped an answer the provider is still generating
        // (no server VAD barged it): it is cancelled.
        if of_active
            && let Some(active) = live.book.active().map(str::to_owned)
            && !live.book.is_barged(&active)
        {
            live.book.barge_active();
            self.mark_interrupted(&active);
            live.adapter.cancel().await?;
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
            // A goodbye that may not be interrupted ignores speech the
            // provider still had buffered.
            RtEvent::SpeechStarted { .. } if self.deaf => {}
            RtEvent::SpeechStarted { audio_start_ms } => {
                if let Some(active) = live.book.speech_started() {
                    self.mark_interrupted(&active);
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
                    let max = self.rt.settings.limits.max_message_bytes;
                    let text = within(text.trim(), max);
                    // A history past its bound takes no more speech: the
                    // bridge stops (R-SEC-7, `history_full`).
                    if let Err(RuntimeError::Conflict { code, message }) =
                        self.rt.check_history_room(&self.ctx, Some(text)).await
                    {
                        self.ctx
                            .events
                            .emit(EventBody::error(code, message))
                            .await?;
                        return Ok(Flow::Stop);
                    }
                    let mut m = message(MessageRole::User, text);
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
                let max = self.rt.settings.limits.max_message_bytes;
                let item = self.item(&item_id, active.as_deref());
                if is_final {
                    item.final_text = Some(if delta.is_empty() {
                        item.text.clone()
                    } else {
                        within(&delta, max).to_owned()
                    });
                } else if !delta.is_empty() && item.text.len() < max {
                    // What a provider says past a message's bound is
                    // neither stored nor streamed (R-SEC-7).
                    let delta = within(&delta, max - item.text.len()).to_owned();
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
                if status == rtc_realtime::RespStatus::Completed {
                    // The connection works: failures are forgotten.
                    self.failures = 0;
                }
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

    async fn follow_on(&mut self, live: &mut Live, next: Next) -> Result<(), RuntimeError> {
        let Next::Create(opts) = next else {
            return Ok(());
        };
        if self.ending == Ending::AfterGoodbye {
            self.goodbye_asked = true;
        }
        if let Err(e) = live.adapter.create_response(opts).await {
            tracing::warn!(session = %self.ctx.id, error = %e, "response.create failed");
            live.book.create_failed();
            live.broken = true;
        }
        Ok(())
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
        // A provider that keeps accepting and soon closing again is not
        // hammered: the first such close reconnects at once, the next wait.
        if self.connected_at.is_some_and(|t| t.elapsed() < SHORT_LIVED) {
            self.failed();
            if self.failures <= 1 {
                self.last_failure = None;
            }
        } else {
            self.failures = 0;
            self.last_failure = None;
        }
        Ok(())
    }
}

/// Whether the bridge goes on after a provider event.
enum Flow {
    Go,
    /// The provider connection is gone (the bridge stays).
    Lost,
    /// The session ended, or its history is full.
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

/// `text` cut to at most `max` bytes, on a character boundary.
fn within(text: &str, max: usize) -> &str {
    &text[..text.floor_char_boundary(max)]
}
