//! Turn-taking (design `voice-pipeline.md` §4(d)) as a pure state machine.
//!
//! It is driven in audio time by the VAD's frames (16 ms each, counted from
//! the session's first `audio.append`) and by what the assistant is doing,
//! and answers with [`TurnAction`]s for the voice engine to carry out.
//!
//! - **States**: `listening` → `user_speaking` → `thinking` → `speaking` /
//!   `tools` → `listening`. The user's side is decided here; the
//!   assistant's side (thinking; speaking, while audio is sent or still
//!   playing by the server's estimate; tools; idle) is told by the engine
//!   through [`TurnTaking::set_assistant`].
//! - **Speech starts** after 100 ms of voiced frames while the assistant is
//!   silent, or after `bargeIn.minSpeechMs` while it speaks (a barge-in). A
//!   run of voiced frames survives gaps of up to 48 ms; only voiced frames
//!   count toward the threshold, so an 80 ms blip starts nothing. With
//!   barge-in disabled, audio received while the assistant speaks is
//!   dropped. Speech while the assistant thinks or runs tools cancels the
//!   model step (tools run on).
//! - **The turn ends** by `turnDetection.type`: `server_vad` after
//!   `silenceDurationMs` without a voiced frame; `stt` at the STT's
//!   `speech_final` / `UtteranceEnd` ([`TurnTaking::stt_endpoint`]); `none`
//!   at `audio.commit` only ([`TurnTaking::commit`]). `maxUtteranceMs`
//!   forces an end in every mode.
//! - **The utterance** to transcribe runs from `prefixPaddingMs` before the
//!   speech started (never into the previous utterance or dropped audio) to
//!   the last voiced frame plus at most 200 ms of trailing silence.

/// Voiced time that starts the user's speech while the assistant is silent.
pub const SPEECH_START_MS: u64 = 100;
/// Unvoiced time a run of voiced frames survives before it is abandoned.
pub const START_GAP_TOLERANCE_MS: u64 = 48;
/// Trailing silence kept after the last voiced frame of an utterance.
pub const MAX_TRAILING_SILENCE_MS: u64 = 200;
/// The frame length the machine counts in.
pub const FRAME_MS: u64 = crate::vad::FRAME_MS;
/// Samples per ms at the VAD's 16 kHz.
const SAMPLES_PER_MS: u64 = crate::vad::SAMPLES_PER_MS;

/// `speech.turnDetection.type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TurnDetectionType {
    /// The server's VAD ends the turn after `silenceDurationMs`.
    #[default]
    ServerVad,
    /// The STT's endpointing ends the turn (Deepgram).
    Stt,
    /// The host's `audio.commit` ends the turn.
    None,
}

/// `speech.turnDetection`, with the design's defaults.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TurnDetection {
    /// `type`.
    pub kind: TurnDetectionType,
    /// The VAD score at which a frame is voiced (the [`crate::vad::Vad`]
    /// applies it).
    pub threshold: f32,
    pub prefix_padding_ms: u64,
    pub silence_duration_ms: u64,
    pub max_utterance_ms: u64,
}

impl Default for TurnDetection {
    fn default() -> Self {
        Self {
            kind: TurnDetectionType::ServerVad,
            threshold: 0.5,
            prefix_padding_ms: 300,
            silence_duration_ms: 500,
            max_utterance_ms: 30_000,
        }
    }
}

/// `speech.bargeIn`, with the design's defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BargeIn {
    pub enabled: bool,
    pub min_speech_ms: u64,
}

impl Default for BargeIn {
    fn default() -> Self {
        Self {
            enabled: true,
            min_speech_ms: 300,
        }
    }
}

/// The turn-taking part of an assistant's `speech` block.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct TurnSettings {
    pub turn_detection: TurnDetection,
    pub barge_in: BargeIn,
}

/// The conversation's state (§4(d)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnState {
    Listening,
    UserSpeaking,
    Thinking,
    Speaking,
    Tools,
}

/// What the assistant is doing, as the engine tells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AssistantActivity {
    /// Nothing running, nothing playing.
    #[default]
    Idle,
    /// Waiting for the transcript or the model.
    Thinking,
    /// Audio being sent or still playing (`t0 + sentMs + 300 ms`).
    Speaking,
    /// Tools running, nothing playing.
    Tools,
}

/// Why the user's turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndReason {
    /// `silenceDurationMs` without voiced frames (`server_vad`).
    Silence,
    /// The STT's endpointing (`stt`).
    SttEndpoint,
    /// The host's `audio.commit`.
    Commit,
    /// `maxUtteranceMs` was reached.
    MaxUtterance,
}

/// A stretch of the session's audio, in ms from its first `audio.append`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AudioSpan {
    pub start_ms: u64,
    pub end_ms: u64,
}

impl AudioSpan {
    pub fn duration_ms(&self) -> u64 {
        self.end_ms.saturating_sub(self.start_ms)
    }

    /// The first sample of the span in a stream at `rate` Hz.
    pub fn start_sample(&self, rate: u32) -> u64 {
        ms_to_samples(self.start_ms, rate)
    }

    /// The sample after the span's last in a stream at `rate` Hz.
    pub fn end_sample(&self, rate: u32) -> u64 {
        ms_to_samples(self.end_ms, rate)
    }
}

fn ms_to_samples(ms: u64, rate: u32) -> u64 {
    ms.saturating_mul(u64::from(rate)) / 1000
}

/// What the engine must do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnAction {
    /// Emit `speech.started{audioStartMs}`.
    SpeechStarted { audio_start_ms: u64 },
    /// The user cut in while the assistant spoke: stop its audio, cancel
    /// TTS and the LLM stream (not started tools), store what was played.
    BargeIn,
    /// The user spoke while the assistant thought or ran tools: cancel the
    /// running model step (tools run to their end).
    CancelModelStep,
    /// Emit `speech.stopped{audioEndMs}`: the user's turn is over.
    SpeechStopped {
        audio_end_ms: u64,
        reason: EndReason,
    },
    /// Transcribe this stretch of audio (openai STT: upload it; deepgram:
    /// `Finalize`).
    CutUtterance(AudioSpan),
    /// Do not transcribe this audio (barge-in disabled while the assistant
    /// speaks, or input muted); Deepgram gets silence in its place.
    DropAudio(AudioSpan),
}

/// A run of voiced frames that may become speech.
#[derive(Debug, Clone, Copy)]
struct VoicedRun {
    start_ms: u64,
    voiced_ms: u64,
    gap_ms: u64,
    last_voiced_end_ms: u64,
}

#[derive(Debug, Clone, Copy)]
enum UserPhase {
    Silent {
        run: Option<VoicedRun>,
    },
    Speaking {
        start_ms: u64,
        last_voiced_end_ms: u64,
    },
}

/// The turn-taking machine of one voice session.
#[derive(Debug, Clone)]
pub struct TurnTaking {
    settings: TurnSettings,
    user: UserPhase,
    assistant: AssistantActivity,
    muted: bool,
    /// Turn detection `stt` without a provider to endpoint (its
    /// connection is down): silence ends turns as with `server_vad`.
    silence_ends_turns: bool,
    /// The end of the audio seen so far.
    now_ms: u64,
    /// Where the next utterance may begin: the end of the previous one or
    /// of dropped audio.
    segment_start_ms: u64,
}

impl TurnTaking {
    pub fn new(settings: TurnSettings) -> Self {
        Self {
            settings,
            user: UserPhase::Silent { run: None },
            assistant: AssistantActivity::Idle,
            muted: false,
            silence_ends_turns: false,
            now_ms: 0,
            segment_start_ms: 0,
        }
    }

    pub fn settings(&self) -> &TurnSettings {
        &self.settings
    }

    pub fn state(&self) -> TurnState {
        if matches!(self.user, UserPhase::Speaking { .. }) {
            return TurnState::UserSpeaking;
        }
        match self.assistant {
            AssistantActivity::Idle => TurnState::Listening,
            AssistantActivity::Thinking => TurnState::Thinking,
            AssistantActivity::Speaking => TurnState::Speaking,
            AssistantActivity::Tools => TurnState::Tools,
        }
    }

    /// The end of the audio seen so far, in ms.
    pub fn now_ms(&self) -> u64 {
        self.now_ms
    }

    /// The engine's word on the assistant: thinking when a turn starts,
    /// speaking from its first `audio.delta` until playback ends by the
    /// server's estimate, tools while calls run with nothing playing, idle
    /// when the turn is over (or an empty transcript started none).
    pub fn set_assistant(&mut self, activity: AssistantActivity) {
        self.assistant = activity;
    }

    /// Barge-in on or off from now on (an `endConversation` goodbye with
    /// `allowEndInterruption:true` keeps it; see also [`Self::set_input_muted`]).
    pub fn set_barge_in_enabled(&mut self, enabled: bool) {
        self.settings.barge_in.enabled = enabled;
    }

    /// With turn detection `stt`, whether silence ends turns for now (the
    /// provider that would endpoint them is not connected).
    pub fn set_silence_ends_turns(&mut self, on: bool) {
        self.silence_ends_turns = on;
    }

    /// Drop every frame from now on (`allowEndInterruption:false`): no
    /// speech is detected and no utterance is cut. An utterance in progress
    /// is abandoned.
    pub fn set_input_muted(&mut self, muted: bool) {
        self.muted = muted;
        if muted {
            self.user = UserPhase::Silent { run: None };
            self.segment_start_ms = self.now_ms;
        }
    }

    /// Whether audio arriving now is dropped (not heard, not transcribed):
    /// input is muted, or the assistant speaks with barge-in off and the
    /// user is not mid-utterance.
    pub fn drops_input(&self) -> bool {
        !matches!(self.user, UserPhase::Speaking { .. })
            && (self.muted
                || (self.assistant == AssistantActivity::Speaking
                    && !self.settings.barge_in.enabled))
    }

    /// One VAD frame (256 samples at 16 kHz) starting at `start_sample`.
    pub fn on_frame(&mut self, start_sample: u64, voiced: bool) -> Vec<TurnAction> {
        let start_ms = start_sample / SAMPLES_PER_MS;
        let end_ms = start_ms + FRAME_MS;
        self.now_ms = self.now_ms.max(end_ms);
        match self.user {
            UserPhase::Silent { run } => self.while_silent(run, start_ms, end_ms, voiced),
            UserPhase::Speaking {
                start_ms: speech_start,
                last_voiced_end_ms,
            } => {
                let last_voiced = if voiced { end_ms } else { last_voiced_end_ms };
                self.user = UserPhase::Speaking {
                    start_ms: speech_start,
                    last_voiced_end_ms: last_voiced,
                };
                let td = self.settings.turn_detection;
                if end_ms.saturating_sub(speech_start) >= td.max_utterance_ms {
                    return self.end_turn(EndReason::MaxUtterance);
                }
                let silence_ends = td.kind == TurnDetectionType::ServerVad
                    || (td.kind == TurnDetectionType::Stt && self.silence_ends_turns);
                if silence_ends && end_ms.saturating_sub(last_voiced) >= td.silence_duration_ms {
                    return self.end_turn(EndReason::Silence);
                }
                Vec::new()
            }
        }
    }

    /// The host's `audio.commit`. With `none` it always ends the turn;
    /// in the other modes it ends one the user is speaking.
    pub fn commit(&mut self) -> Vec<TurnAction> {
        let speaking = matches!(self.user, UserPhase::Speaking { .. });
        if self.muted || !(speaking || self.settings.turn_detection.kind == TurnDetectionType::None)
        {
            return Vec::new();
        }
        self.end_turn(EndReason::Commit)
    }

    /// The STT's `speech_final`, or `UtteranceEnd` with finals pending:
    /// ends the turn in `stt` mode (ignored otherwise).
    pub fn stt_endpoint(&mut self) -> Vec<TurnAction> {
        if self.muted || self.settings.turn_detection.kind != TurnDetectionType::Stt {
            return Vec::new();
        }
        self.end_turn(EndReason::SttEndpoint)
    }

    fn while_silent(
        &mut self,
        run: Option<VoicedRun>,
        start_ms: u64,
        end_ms: u64,
        voiced: bool,
    ) -> Vec<TurnAction> {
        let speaking = self.assistant == AssistantActivity::Speaking;
        if self.muted || (speaking && !self.settings.barge_in.enabled) {
            self.user = UserPhase::Silent { run: None };
            self.segment_start_ms = end_ms;
            return vec![TurnAction::DropAudio(AudioSpan { start_ms, end_ms })];
        }
        let run = match (run, voiced) {
            (None, false) => None,
            (None, true) => Some(VoicedRun {
                start_ms,
                voiced_ms: FRAME_MS,
                gap_ms: 0,
                last_voiced_end_ms: end_ms,
            }),
            (Some(run), true) => Some(VoicedRun {
                voiced_ms: run.voiced_ms + FRAME_MS,
                gap_ms: 0,
                last_voiced_end_ms: end_ms,
                ..run
            }),
            (Some(run), false) => {
                let gap_ms = run.gap_ms + FRAME_MS;
                (gap_ms <= START_GAP_TOLERANCE_MS).then_some(VoicedRun { gap_ms, ..run })
            }
        };
        let needed = if speaking {
            self.settings.barge_in.min_speech_ms
        } else {
            SPEECH_START_MS
        };
        let Some(run) = run.filter(|run| run.voiced_ms >= needed.max(FRAME_MS)) else {
            self.user = UserPhase::Silent { run };
            return Vec::new();
        };
        self.user = UserPhase::Speaking {
            start_ms: run.start_ms,
            last_voiced_end_ms: run.last_voiced_end_ms,
        };
        let mut actions = vec![TurnAction::SpeechStarted {
            audio_start_ms: run.start_ms,
        }];
        match self.assistant {
            AssistantActivity::Speaking => actions.push(TurnAction::BargeIn),
            AssistantActivity::Thinking | AssistantActivity::Tools => {
                actions.push(TurnAction::CancelModelStep);
            }
            AssistantActivity::Idle => {}
        }
        self.assistant = AssistantActivity::Idle;
        actions
    }

    /// End the user's turn now: `speech.stopped`, the utterance to
    /// transcribe, and the assistant starts thinking.
    fn end_turn(&mut self, reason: EndReason) -> Vec<TurnAction> {
        let td = self.settings.turn_detection;
        let now = self.now_ms;
        let recent_start = self
            .segment_start_ms
            .max(now.saturating_sub(td.max_utterance_ms));
        let (audio_end_ms, span) = match self.user {
            // `none`, or an end with no speech detected: everything since
            // the previous utterance, up to `maxUtteranceMs`.
            _ if td.kind == TurnDetectionType::None => (now, Self::span(recent_start, now)),
            UserPhase::Silent { .. } => (now, Self::span(recent_start, now)),
            UserPhase::Speaking { start_ms, .. } if reason == EndReason::MaxUtterance => {
                (now, Self::span(self.padded_start(start_ms), now))
            }
            UserPhase::Speaking {
                start_ms,
                last_voiced_end_ms,
            } => (
                last_voiced_end_ms,
                Self::span(
                    self.padded_start(start_ms),
                    now.min(last_voiced_end_ms + MAX_TRAILING_SILENCE_MS),
                ),
            ),
        };
        self.user = UserPhase::Silent { run: None };
        self.assistant = AssistantActivity::Thinking;
        self.segment_start_ms = span.end_ms;
        vec![
            TurnAction::SpeechStopped {
                audio_end_ms,
                reason,
            },
            TurnAction::CutUtterance(span),
        ]
    }

    fn span(start_ms: u64, end_ms: u64) -> AudioSpan {
        AudioSpan { start_ms, end_ms }
    }

    /// `prefixPaddingMs` before the speech started, not before the segment.
    fn padded_start(&self, speech_start_ms: u64) -> u64 {
        speech_start_ms
            .saturating_sub(self.settings.turn_detection.prefix_padding_ms)
            .max(self.segment_start_ms)
    }
}

#[cfg(test)]
#[path = "turn_taking_tests.rs"]
mod tests;
