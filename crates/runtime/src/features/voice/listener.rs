//! The hearing side of a voice engine (design `voice-pipeline.md` §4(d)):
//! host audio resampled to 16 kHz, scored by the VAD, fed to the
//! turn-taking machine; `speech.started`/`speech.stopped` recorded; each
//! utterance cut from the kept audio, resampled to the STT's rate and
//! transcribed (one upload per utterance for OpenAI and the mock, audio
//! then `Finalize` otherwise); a non-empty transcript becomes the user
//! message (`source: "audio"`) that starts the next turn.
//!
//! The listener runs whether or not its STT is connected (`stt_link.rs`).
//! While it is not, the VAD still records `speech.started`/`stopped` and
//! barge-in works; a streaming STT is reconnected when the user starts
//! speaking and is sent the utterance's audio from its prefix padding, a
//! batch one at the utterance's end; each failed attempt records one
//! `speech_connect_failed`, an utterance inside the backoff window is not
//! transcribed.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

use rtc_protocol::{EphemeralFrame, EventBody, SpeechStarted, SpeechStopped, TranscriptInterim};
use rtc_realtime::resample::Resampler;
use rtc_speech::turn_taking::{
    AssistantActivity, TurnAction, TurnDetectionType, TurnState, TurnTaking,
};
use rtc_speech::vad::Vad;
use rtc_speech::{SpeechError, SttEvent};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::item::Floor;
use super::setup::VoiceSetup;
use super::sleep_until_some;
use super::speaker::Cmd;
use super::stt_link::{LinkEvent, SttLink};
use super::user_speech::{Hearing, TranscriptHold};
use crate::Inner;
use crate::session::SessionCtx;

/// What the host sends the listener.
pub(super) enum Heard {
    Audio(Vec<u8>),
    Commit,
}

/// The VAD's rate.
const VAD_RATE: u32 = 16_000;
/// Audio kept beyond the longest utterance and its padding, in ms.
const KEPT_SLACK_MS: u64 = 2_000;

/// How long a streaming STT's `Finalize` may take to answer.
const FINALIZE_WITHIN: std::time::Duration = std::time::Duration::from_secs(1);

/// One utterance sent for transcription.
/// The longest an utterance's transcript is awaited before it counts as
/// lost (a provider that never answers).
const TRANSCRIPT_AT_MOST: std::time::Duration = std::time::Duration::from_secs(30);
/// How often a held session looks again whether the hold still stands.
const HOLD_RECHECK: std::time::Duration = std::time::Duration::from_secs(1);

struct Pending {
    /// When the last voiced frame reached the server.
    speech_end: Instant,
    /// When the end of the turn was decided.
    decided: Instant,
}

pub(super) struct Listener {
    pub ctx: Arc<SessionCtx>,
    pub speaker: mpsc::UnboundedSender<Cmd>,
    floor: Floor,
    /// `transcript.interim` frames for the host.
    frames: mpsc::Sender<EphemeralFrame>,
    /// The STT connection, up or not.
    link: SttLink,
    /// A streaming STT (Deepgram) hears all audio, resampled by `down`;
    /// the end of a turn only sends `Finalize`.
    streaming: bool,
    /// Where the utterance being spoken starts, its padding included (ms
    /// of the session's audio); `None` between utterances.
    utterance_from_ms: Option<u64>,
    /// A background connect's audio to send first: from this ms on.
    resend_from_ms: Option<u64>,
    /// An utterance that ended while its connect was under way.
    cut_while_connecting: Option<Pending>,
    down: Resampler,
    /// Audio for a streaming STT, sent by the run loop.
    forward: Vec<u8>,
    /// Turn detection `stt`: the STT's endpointing ends the turn.
    stt_endpoints: bool,
    /// A streaming STT's `Finalize` may get no answer when nothing was
    /// pending: the transcript is what it finalized by then (§4(d)).
    finalize_by: Option<tokio::time::Instant>,
    up: Resampler,
    vad: Vad,
    turns: TurnTaking,
    /// 16 kHz audio kept for cutting utterances; `kept_from` is the
    /// stream offset of its first sample.
    kept: VecDeque<i16>,
    kept_from: u64,
    max_kept: usize,
    stt_rate: u32,
    last_voiced: Option<Instant>,
    decided: Option<Instant>,
    pending: VecDeque<Pending>,
    /// Final segments of the utterance being transcribed.
    finals: Vec<String>,
    /// Transcripts to record as user messages, in order.
    transcripts: mpsc::UnboundedSender<(String, TranscriptHold)>,
    /// Holds the runtime's own turns while the user speaks.
    hearing: Hearing,
    /// When the hold is looked at again (while it stands).
    hold_check: Option<tokio::time::Instant>,
    /// When host audio last arrived; a host quiet for `max_utterance`
    /// mid-utterance no longer holds the session's own turns.
    last_audio: Instant,
    max_utterance: std::time::Duration,
}

impl Listener {
    pub fn new(
        inner: Arc<Inner>,
        ctx: Arc<SessionCtx>,
        (speaker, floor, frames): (
            mpsc::UnboundedSender<Cmd>,
            Floor,
            mpsc::Sender<EphemeralFrame>,
        ),
        setup: &VoiceSetup,
        (link, input_rate): (SttLink, u32),
    ) -> Self {
        let settings = setup.turn_settings();
        let kept_ms = settings.turn_detection.max_utterance_ms
            + settings.turn_detection.prefix_padding_ms
            + KEPT_SLACK_MS;
        let transcripts = super::transcripts::spawn_sender(&inner, &ctx, floor.clone());
        let hearing = Hearing::new(&inner, &ctx);
        Self {
            ctx,
            speaker,
            floor,
            frames,
            streaming: link.streaming(),
            link,
            utterance_from_ms: None,
            resend_from_ms: None,
            cut_while_connecting: None,
            down: Resampler::new(VAD_RATE, setup.stt.sample_rate),
            forward: Vec::new(),
            stt_endpoints: settings.turn_detection.kind == TurnDetectionType::Stt,
            finalize_by: None,
            up: Resampler::new(input_rate, VAD_RATE),
            vad: Vad::new(settings.turn_detection.threshold),
            turns: TurnTaking::new(settings),
            kept: VecDeque::new(),
            kept_from: 0,
            max_kept: usize::try_from(kept_ms * 16).unwrap_or(usize::MAX),
            stt_rate: setup.stt.sample_rate,
            last_voiced: None,
            decided: None,
            pending: VecDeque::new(),
            finals: Vec::new(),
            transcripts,
            hearing,
            hold_check: None,
            last_audio: Instant::now(),
            max_utterance: std::time::Duration::from_millis(
                settings.turn_detection.max_utterance_ms,
            ),
        }
    }

    /// Run until cancelled or the host is gone.
    pub async fn run(mut self, mut heard: mpsc::Receiver<Heard>, cancel: CancellationToken) {
        loop {
            tokio::select! {
                () = cancel.cancelled() => break,
                h = heard.recv() => {
                    let actions = match h {
                        Some(Heard::Audio(pcm)) => {
                            self.last_audio = Instant::now();
                            self.audio(&pcm)
                        }
                        Some(Heard::Commit) => self.turns.commit(),
                        None => break,
                    };
                    let audio = std::mem::take(&mut self.forward);
                    if let Some(stt) = self.link.stream().filter(|_| !audio.is_empty())
                        && let Err(e) = stt.audio(&audio).await
                    {
                        tracing::debug!(error = %e, "streaming audio to the STT failed");
                    }
                    for action in actions {
                        self.act(action).await;
                    }
                }
                () = sleep_until_some(self.finalize_by) => {
                    self.finalize_by = None;
                    self.transcribed();
                }
                () = sleep_until_some(self.hold_check) => {}
                ev = self.link.next() => match ev {
                    LinkEvent::Heard(ev) => self.heard_from_stt(ev).await,
                    LinkEvent::Connected => self.reconnected().await,
                    LinkEvent::ConnectFailed(e) => {
                        // The utterance waiting for it is not transcribed.
                        self.resend_from_ms = None;
                        self.cut_while_connecting = None;
                        self.connect_failed(&e).await;
                    }
                },
            }
            self.update_hold();
        }
        self.link.close().await;
    }

    /// The runtime's own turns wait while the user speaks or an utterance
    /// awaits its transcript (`user_speech.rs`); never longer than a host
    /// that went quiet mid-utterance or a transcript that never came
    /// allows, looked at again every [`HOLD_RECHECK`] while held.
    fn update_hold(&mut self) {
        let now = Instant::now();
        while self
            .pending
            .front()
            .is_some_and(|p| now.saturating_duration_since(p.decided) > TRANSCRIPT_AT_MOST)
        {
            self.pending.pop_front();
        }
        let speaking = self.turns.state() == TurnState::UserSpeaking
            && now.saturating_duration_since(self.last_audio) < self.max_utterance;
        let hears = speaking || !self.pending.is_empty() || self.cut_while_connecting.is_some();
        self.hearing.set(hears);
        self.hold_check = hears.then(|| tokio::time::Instant::now() + HOLD_RECHECK);
    }

    /// One event of the STT; the stream may be gone after it.
    async fn heard_from_stt(&mut self, ev: SttEvent) {
        let endpoint = matches!(
            ev,
            SttEvent::Final {
                speech_final: true,
                ..
            } | SttEvent::UtteranceEnd
        );
        if let Some(why) = self.stt_event(ev).await {
            self.stream_lost(why).await;
            return;
        }
        if endpoint && self.stt_endpoints {
            for action in self.turns.stt_endpoint() {
                self.act(action).await;
            }
        }
    }

    /// Host audio: kept at 16 kHz and scored; what the machine decides.
    fn audio(&mut self, pcm: &[u8]) -> Vec<TurnAction> {
        let audio = self.up.process(pcm);
        let samples: Vec<i16> = audio
            .chunks_exact(2)
            .map(|b| i16::from_le_bytes([b[0], b[1]]))
            .collect();
        self.kept.extend(samples.iter().copied());
        while self.kept.len() > self.max_kept {
            self.kept.pop_front();
            self.kept_from += 1;
        }
        // What the assistant does decides how much speech starts a turn.
        let activity = {
            let floor = self.floor.lock();
            if floor.playing_until.is_some_and(|t| Instant::now() < t) {
                AssistantActivity::Speaking
            } else if floor.turn_active {
                AssistantActivity::Thinking
            } else {
                AssistantActivity::Idle
            }
        };
        self.turns.set_assistant(activity);
        // A goodbye that may not be interrupted: the user is not heard.
        if let Ok(state) = self.ctx.state.try_lock() {
            self.turns
                .set_input_muted(matches!(state.ending, Some((_, false))));
        }
        // Turn detection `stt` with the provider down: silence ends turns.
        self.turns
            .set_silence_ends_turns(self.stt_endpoints && !self.link.is_up());
        // A streaming STT that is down hears the utterance from `kept`
        // once it is back (`reconnected`).
        if self.streaming && self.link.is_up() {
            let down = self.down.process(&audio);
            // Dropped audio (barge-in off while the assistant speaks, or a
            // goodbye that may not be interrupted) reaches a streaming STT
            // as silence of the same length: not transcribed, and its
            // timeline stays aligned (§4(d)).
            if self.turns.drops_input() {
                self.forward.resize(self.forward.len() + down.len(), 0);
            } else {
                self.forward.extend_from_slice(&down);
            }
        }
        let mut actions = Vec::new();
        for frame in self.vad.push_samples(&samples) {
            if frame.voiced {
                self.last_voiced = Some(Instant::now());
            }
            actions.extend(self.turns.on_frame(frame.start_sample, frame.voiced));
        }
        actions
    }

    async fn act(&mut self, action: TurnAction) {
        match action {
            TurnAction::SpeechStarted { audio_start_ms } => {
                self.hearing.set(true);
                let padding = self.turns.settings().turn_detection.prefix_padding_ms;
                let from_ms = audio_start_ms.saturating_sub(padding);
                self.utterance_from_ms = Some(from_ms);
                self.reconnect_for_utterance(from_ms);
                let started = SpeechStarted {
                    audio_start_ms: u32::try_from(audio_start_ms).unwrap_or(u32::MAX),
                };
                // A barge-in: the speaker stops the audio, then tells the host.
                if self.floor.lock().playing_until.is_some() {
                    let (ack, stopped) = tokio::sync::oneshot::channel();
                    if self.speaker.send(Cmd::BargeIn { started, ack }).is_ok() {
                        let _ = stopped.await;
                    }
                    return;
                }
                self.emit(started.into()).await;
            }
            TurnAction::SpeechStopped { audio_end_ms, .. } => {
                self.decided = Some(Instant::now());
                let stopped = SpeechStopped {
                    audio_end_ms: u32::try_from(audio_end_ms).unwrap_or(u32::MAX),
                };
                self.emit(stopped.into()).await;
            }
            TurnAction::CutUtterance(_) if self.streaming => {
                self.utterance_from_ms = None;
                let pending = self.pending_now();
                if self.link.is_connecting() {
                    self.cut_while_connecting.get_or_insert(pending);
                } else {
                    self.finalize(pending).await;
                }
            }
            TurnAction::CutUtterance(span) => {
                self.utterance_from_ms = None;
                let pending = self.pending_now();
                // One upload per utterance: (re)connect at its end.
                match self
                    .link
                    .connect_if_allowed(tokio::time::Instant::now())
                    .await
                {
                    Ok(true) => {}
                    Ok(false) => {
                        tracing::debug!("an utterance inside the STT's backoff is not transcribed");
                        return;
                    }
                    Err(e) => return self.connect_failed(&e).await,
                }
                let from = span.start_sample(VAD_RATE).saturating_sub(self.kept_from);
                let to = span.end_sample(VAD_RATE).saturating_sub(self.kept_from);
                let (from, to) = (
                    usize::try_from(from).unwrap_or(usize::MAX),
                    usize::try_from(to)
                        .unwrap_or(usize::MAX)
                        .min(self.kept.len()),
                );
                let pcm: Vec<u8> = self
                    .kept
                    .range(from.min(to)..to)
                    .flat_map(|s| s.to_le_bytes())
                    .collect();
                let audio = Resampler::new(VAD_RATE, self.stt_rate).process(&pcm);
                let Some(stt) = self.link.stream() else {
                    return;
                };
                self.pending.push_back(pending);
                let sent = match stt.audio(&audio).await {
                    Ok(()) => stt.finalize().await,
                    Err(e) => Err(e),
                };
                if let Err(e) = sent {
                    self.pending.pop_back();
                    self.emit(EventBody::error("stt_failed", e.to_string()))
                        .await;
                }
            }
            // Already recorded: `speech.started` comes first in the actions.
            TurnAction::BargeIn | TurnAction::CancelModelStep => self.cancel_turn(),
            // Not transcribed: nothing to do with it.
            TurnAction::DropAudio(_) => {}
        }
    }

    /// The utterance that just ended, for its latency figures.
    fn pending_now(&mut self) -> Pending {
        let now = Instant::now();
        Pending {
            speech_end: self.last_voiced.unwrap_or(now),
            decided: self.decided.take().unwrap_or(now),
        }
    }

    /// A streaming STT's end of an utterance: `Finalize`, then wait for
    /// its transcript. Without a stream the utterance is not transcribed.
    async fn finalize(&mut self, pending: Pending) {
        let Some(stt) = self.link.stream() else {
            tracing::debug!("an utterance heard while the STT is down is not transcribed");
            return;
        };
        self.pending.push_back(pending);
        if let Err(e) = stt.finalize().await {
            self.pending.pop_back();
            self.emit(EventBody::error("stt_failed", e.to_string()))
                .await;
        } else {
            self.finalize_by = Some(tokio::time::Instant::now() + FINALIZE_WITHIN);
        }
    }

    /// The user speaks (from `from_ms`, padding included) and a streaming
    /// STT is down: connect in the background if the backoff allows, and
    /// send it the utterance once connected.
    fn reconnect_for_utterance(&mut self, from_ms: u64) {
        if self.streaming && self.link.begin_connect(tokio::time::Instant::now()) {
            self.resend_from_ms = Some(from_ms);
        }
    }

    /// A background connect succeeded: the stream hears the utterance
    /// kept so far, and is finalized if it already ended.
    async fn reconnected(&mut self) {
        self.down = Resampler::new(VAD_RATE, self.stt_rate);
        if let Some(from_ms) = self.resend_from_ms.take() {
            let from =
                (from_ms.saturating_mul(u64::from(VAD_RATE)) / 1000).saturating_sub(self.kept_from);
            let from = usize::try_from(from)
                .unwrap_or(usize::MAX)
                .min(self.kept.len());
            let pcm: Vec<u8> = self
                .kept
                .range(from..)
                .flat_map(|s| s.to_le_bytes())
                .collect();
            let audio = self.down.process(&pcm);
            // In frames of 100 ms, like a host's.
            let frame = usize::try_from(self.stt_rate / 10 * 2)
                .unwrap_or(3_200)
                .max(2);
            if let Some(stt) = self.link.stream() {
                for chunk in audio.chunks(frame) {
                    if let Err(e) = stt.audio(chunk).await {
                        tracing::debug!(error = %e, "sending the utterance to the STT failed");
                        break;
                    }
                }
            }
        }
        if let Some(pending) = self.cut_while_connecting.take() {
            self.finalize(pending).await;
        }
    }

    /// A connect attempt failed: one `speech_connect_failed` (the error
    /// never carries the key: `rtc_speech` scrubs it).
    async fn connect_failed(&self, e: &SpeechError) {
        tracing::info!(session = %self.ctx.id, error = %e, "the speech-to-text connection failed");
        self.emit(EventBody::error("speech_connect_failed", e.to_string()))
            .await;
    }

    /// The stream closed or failed for good (`why`): the link is down;
    /// transcripts still awaited are lost (one `stt_failed`); an utterance
    /// being spoken reconnects at once if the backoff allows.
    async fn stream_lost(&mut self, why: String) {
        tracing::info!(session = %self.ctx.id, reason = %why, "the speech-to-text stream was lost");
        self.link.lost(tokio::time::Instant::now());
        self.finalize_by = None;
        self.finals.clear();
        if !std::mem::take(&mut self.pending).is_empty() {
            self.emit(EventBody::error("stt_failed", why)).await;
        }
        if self.turns.state() == TurnState::UserSpeaking
            && let Some(from_ms) = self.utterance_from_ms
        {
            self.reconnect_for_utterance(from_ms);
        }
    }

    /// What the STT said; `Some(why)` when its stream is gone.
    async fn stt_event(&mut self, ev: SttEvent) -> Option<String> {
        match ev {
            SttEvent::Final {
                text,
                from_finalize,
                ..
            } => {
                if !text.trim().is_empty() {
                    self.finals.push(text.trim().to_owned());
                }
                if from_finalize {
                    self.finalize_by = None;
                    self.transcribed();
                }
            }
            SttEvent::Error {
                message,
                fatal: true,
                ..
            } => return Some(message),
            SttEvent::Error { message, .. } => {
                self.pending.pop_front();
                self.finals.clear();
                self.emit(EventBody::error("stt_failed", message)).await;
            }
            SttEvent::Closed => {
                return Some("the speech-to-text provider closed the connection".into());
            }
            SttEvent::Interim { text } => {
                // Ephemeral, like audio: a slow host loses some.
                let _ =
                    self.frames
                        .try_send(EphemeralFrame::TranscriptInterim(TranscriptInterim {
                            text,
                        }));
            }
            SttEvent::SpeechStarted | SttEvent::UtteranceEnd => {}
        }
        None
    }

    /// The utterance's transcript is complete: a non-empty one is the
    /// next user message.
    fn transcribed(&mut self) {
        let text = std::mem::take(&mut self.finals).join(" ");
        let pending = self.pending.pop_front();
        // A streaming STT's next finalized utterance gets its own wait.
        if self.link.streaming() && !self.pending.is_empty() {
            self.finalize_by = Some(tokio::time::Instant::now() + FINALIZE_WITHIN);
        }
        if text.is_empty() {
            return;
        }
        if let Some(p) = pending {
            let _ = self.speaker.send(Cmd::Heard {
                speech_end: p.speech_end,
                decided: p.decided,
                transcribed: Instant::now(),
            });
        }
        let _ = self.transcripts.send((text, self.hearing.transcript()));
    }

    /// The user spoke over the assistant: its running turn (the model's
    /// stream) is cancelled, in the background; while tools run, only
    /// once they are done, so each started call finishes and is stored.
    fn cancel_turn(&self) {
        {
            let mut floor = self.floor.lock();
            if floor.tools_running {
                floor.cancel_next_step = true;
                return;
            }
        }
        let ctx = self.ctx.clone();
        tokio::spawn(async move {
            ctx.cancel_turn().await;
        });
    }

    async fn emit(&self, event: EventBody) {
        if let Err(e) = self.ctx.events.emit(event).await {
            tracing::warn!(error = %e, "recording a voice event failed");
        }
    }
}
