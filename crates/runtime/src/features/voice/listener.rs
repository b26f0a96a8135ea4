//! The hearing side of a voice engine (design `voice-pipeline.md` §4(d)):
//! host audio resampled to 16 kHz, scored by the VAD, fed to the
//! turn-taking machine; `speech.started`/`speech.stopped` recorded; each
//! utterance cut from the kept audio, resampled to the STT's rate and
//! transcribed (one upload per utterance for OpenAI and the mock, audio
//! then `Finalize` otherwise); a non-empty transcript becomes the user
//! message (`source: "audio"`) that starts the next turn.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

use rtc_protocol::{
    AnswerParams, AnswerValue, Answers, EphemeralFrame, EventBody, SpeechStarted, SpeechStopped,
    TranscriptInterim,
};
use rtc_speech::voice_ask::match_answer;

use crate::features::interaction::service::pending_question;
use rtc_realtime::resample::Resampler;
use rtc_speech::turn_taking::{
    AssistantActivity, BargeIn, TurnAction, TurnDetection, TurnDetectionType, TurnSettings,
    TurnTaking,
};
use rtc_speech::vad::Vad;
use rtc_speech::{SttDialect, SttEvent, SttStream};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::item::Floor;
use super::setup::VoiceSetup;
use super::speaker::Cmd;
use crate::session::SessionCtx;
use crate::{Inner, Runtime};

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

/// Sleep until `at`; never without one.
async fn sleep_until_some(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// The longest a transcript waits for running tools before it is sent.
const TOOLS_WAIT: std::time::Duration = std::time::Duration::from_secs(120);

/// One utterance sent for transcription.
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
    /// A streaming STT (Deepgram) hears all audio, resampled by `down`;
    /// the end of a turn only sends `Finalize`.
    streaming: bool,
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
    transcripts: mpsc::UnboundedSender<String>,
}

fn turn_settings(setup: &VoiceSetup) -> TurnSettings {
    let t = &setup.turn_detection;
    let kind = match t.kind {
        rtc_protocol::SpeechTurnDetectionKind::ServerVad => TurnDetectionType::ServerVad,
        rtc_protocol::SpeechTurnDetectionKind::Stt => TurnDetectionType::Stt,
        rtc_protocol::SpeechTurnDetectionKind::None => TurnDetectionType::None,
    };
    #[allow(clippy::cast_possible_truncation, reason = "a 0–1 threshold")]
    TurnSettings {
        turn_detection: TurnDetection {
            kind,
            threshold: t.threshold as f32,
            prefix_padding_ms: u64::from(t.prefix_padding_ms),
            silence_duration_ms: u64::from(t.silence_duration_ms),
            max_utterance_ms: u64::from(t.max_utterance_ms),
        },
        barge_in: BargeIn {
            enabled: setup.barge_in.enabled,
            min_speech_ms: u64::from(setup.barge_in.min_speech_ms),
        },
    }
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
        input_rate: u32,
    ) -> Self {
        let settings = turn_settings(setup);
        let kept_ms = settings.turn_detection.max_utterance_ms
            + settings.turn_detection.prefix_padding_ms
            + KEPT_SLACK_MS;
        let transcripts = spawn_sender(&inner, &ctx, floor.clone());
        Self {
            ctx,
            speaker,
            floor,
            frames,
            streaming: setup.stt.dialect == SttDialect::Deepgram,
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
        }
    }

    /// Run until cancelled or the host is gone.
    pub async fn run(
        mut self,
        mut heard: mpsc::Receiver<Heard>,
        mut stt: Box<dyn SttStream>,
        mut stt_events: mpsc::Receiver<SttEvent>,
        cancel: CancellationToken,
    ) {
        loop {
            tokio::select! {
                () = cancel.cancelled() => break,
                h = heard.recv() => {
                    let actions = match h {
                        Some(Heard::Audio(pcm)) => self.audio(&pcm),
                        Some(Heard::Commit) => self.turns.commit(),
                        None => break,
                    };
                    if !self.forward.is_empty() {
                        let audio = std::mem::take(&mut self.forward);
                        if let Err(e) = stt.audio(&audio).await {
                            tracing::debug!(error = %e, "streaming audio to the STT failed");
                        }
                    }
                    for action in actions {
                        self.act(action, stt.as_mut()).await;
                    }
                }
                () = sleep_until_some(self.finalize_by) => {
                    self.finalize_by = None;
                    self.transcribed();
                }
                ev = stt_events.recv() => {
                    let Some(ev) = ev else { break };
                    let endpoint = matches!(ev, SttEvent::Final { speech_final: true, .. } | SttEvent::UtteranceEnd);
                    if !self.stt_event(ev).await {
                        break;
                    }
                    if endpoint && self.stt_endpoints {
                        for action in self.turns.stt_endpoint() {
                            self.act(action, stt.as_mut()).await;
                        }
                    }
                }
            }
        }
        if let Err(e) = stt.close().await {
            tracing::debug!(error = %e, "closing the STT stream failed");
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
        if self.streaming {
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

    async fn act(&mut self, action: TurnAction, stt: &mut dyn SttStream) {
        match action {
            TurnAction::SpeechStarted { audio_start_ms } => {
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
                let now = Instant::now();
                self.pending.push_back(Pending {
                    speech_end: self.last_voiced.unwrap_or(now),
                    decided: self.decided.take().unwrap_or(now),
                });
                if let Err(e) = stt.finalize().await {
                    self.pending.pop_back();
                    self.emit(EventBody::error("stt_failed", e.to_string()))
                        .await;
                } else {
                    self.finalize_by = Some(tokio::time::Instant::now() + FINALIZE_WITHIN);
                }
            }
            TurnAction::CutUtterance(span) => {
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
                let now = Instant::now();
                self.pending.push_back(Pending {
                    speech_end: self.last_voiced.unwrap_or(now),
                    decided: self.decided.take().unwrap_or(now),
                });
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

    /// `false` when the STT is gone.
    async fn stt_event(&mut self, ev: SttEvent) -> bool {
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
            SttEvent::Error { message, fatal, .. } => {
                self.pending.pop_front();
                self.finals.clear();
                self.emit(EventBody::error("stt_failed", message)).await;
                return !fatal;
            }
            SttEvent::Closed => return false,
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
        true
    }

    /// The utterance's transcript is complete: a non-empty one is the
    /// next user message.
    fn transcribed(&mut self) {
        let text = std::mem::take(&mut self.finals).join(" ");
        let pending = self.pending.pop_front();
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
        let _ = self.transcripts.send(text);
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

/// The task that records transcripts as user messages, one after another
/// (each may wait for the running turn to end).
fn spawn_sender(
    inner: &Arc<Inner>,
    ctx: &Arc<SessionCtx>,
    floor: Floor,
) -> mpsc::UnboundedSender<String> {
    let (tx, mut rx) = mpsc::unbounded_channel::<String>();
    let rt = Runtime {
        inner: inner.clone(),
    };
    let (workspace, session) = (ctx.workspace.clone(), ctx.id.clone());
    let events = ctx.clone();
    let asker = inner.clone();
    inner.tasks.spawn(async move {
        // Answers heard so far to the question that waits (its call id).
        let mut heard: (String, Vec<AnswerValue>) = (String::new(), Vec::new());
        while let Some(text) = rx.recv().await {
            // A waiting question takes the transcript as its answer.
            if let Some(pending) = pending_question(&events) {
                if heard.0 != pending.call_id {
                    heard = (pending.call_id.clone(), Vec::new());
                }
                if let Some(q) = pending.questions.get(heard.1.len()) {
                    let labels: Vec<&str> = q.options.iter().map(|o| o.label.as_str()).collect();
                    let chosen = match_answer(&text, &labels, q.multi_select).to_labels(&labels);
                    heard.1.push(match chosen.as_slice() {
                        [one] => AnswerValue::One(one.clone()),
                        _ => AnswerValue::Many(chosen),
                    });
                }
                if heard.1.len() < pending.questions.len() {
                    let item = rtc_store::new_id("ask");
                    super::ask(&asker, &events, &item, &pending, heard.1.len());
                    continue;
                }
                let params = AnswerParams {
                    call_id: Some(pending.call_id.clone()),
                    answers: Answers::InOrder(std::mem::take(&mut heard.1)),
                };
                if let Err(e) = asker.answer_question(&events, params).await {
                    let _ = events
                        .events
                        .emit(EventBody::error("voice_answer_failed", e.to_string()))
                        .await;
                }
                continue;
            }
            // A new message cancels the running turn: started tools finish
            // first (their outputs are stored; §4(d) barge-in, step 3).
            let deadline = Instant::now() + TOOLS_WAIT;
            while floor.lock().tools_running && Instant::now() < deadline {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
            let sent = rt
                .user_message_from(&workspace, &session, &text, Some("audio"))
                .await;
            if let Err(e) = sent {
                let (code, message) = match &e {
                    crate::RuntimeError::Limited { code, message, .. }
                    | crate::RuntimeError::Conflict { code, message } => (*code, message.clone()),
                    other => ("voice_message_failed", other.to_string()),
                };
                let _ = events.events.emit(EventBody::error(code, message)).await;
            }
        }
    });
    tx
}
