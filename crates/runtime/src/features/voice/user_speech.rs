//! The runtime's own turns wait while the user speaks (design
//! `voice-pipeline.md` §4(f), "Goals, loops, sub-agent reports"): from
//! `speech.started` until that utterance is resolved, that is its
//! transcript recorded (a user message, or an askUser answer), found empty
//! (a cough), or lost (the STT failed, the host left).
//!
//! The session's [`UserSpeech`] says so, and `Voice::holds_turns` reads it,
//! so a goal's continuation, a loop tick and an inbox delivery wait. Two
//! parties write it: the listener's [`Hearing`] (the user speaks, or an
//! utterance awaits its transcript) and each transcript on its way to be
//! recorded ([`TranscriptHold`], dropped once it is). When the last of them
//! lets go, `Kernel::go_on` starts what waited unless a turn runs: the
//! user's own turn decides what follows it, as any turn does.

use std::sync::Arc;

use crate::Inner;
use crate::session::SessionCtx;

/// What of the user's speech is not resolved yet (the session's
/// extension).
#[derive(Debug, Default)]
pub(super) struct UserSpeech {
    /// Listeners hearing the user (one, but for the moment a second host
    /// takes the session over).
    hearing: u32,
    /// Transcripts not recorded yet.
    transcripts: u32,
}

impl UserSpeech {
    /// Whether the user speaks or their words are still on their way.
    pub(super) fn holds(&self) -> bool {
        self.hearing > 0 || self.transcripts > 0
    }

    /// A listener starts or stops hearing; whether the hold ended.
    fn hearing(&mut self, hears: bool) -> bool {
        let held = self.holds();
        if hears {
            self.hearing += 1;
        } else {
            self.hearing = self.hearing.saturating_sub(1);
        }
        held && !self.holds()
    }

    /// A transcript is handed on (`true`) or recorded; whether the hold
    /// ended.
    fn transcript(&mut self, handed_on: bool) -> bool {
        let held = self.holds();
        if handed_on {
            self.transcripts += 1;
        } else {
            self.transcripts = self.transcripts.saturating_sub(1);
        }
        held && !self.holds()
    }
}

/// Whether the user of `ctx` speaks now, or their last words are still
/// being transcribed or recorded.
pub(crate) fn user_speaking(ctx: &SessionCtx) -> bool {
    ctx.peek(UserSpeech::holds).unwrap_or(false)
}

/// The hold ended: start what waited, in the background.
fn released(inner: &Arc<Inner>, ctx: &Arc<SessionCtx>) {
    let (rt, ctx) = (inner.clone(), ctx.clone());
    inner.tasks.spawn(async move {
        rt.go_on(&ctx).await;
    });
}

/// The listener's part: whether it hears the user now. Dropped with the
/// listener, it lets go.
pub(super) struct Hearing {
    inner: Arc<Inner>,
    ctx: Arc<SessionCtx>,
    hears: bool,
}

impl Hearing {
    pub(super) fn new(inner: &Arc<Inner>, ctx: &Arc<SessionCtx>) -> Self {
        Self {
            inner: inner.clone(),
            ctx: ctx.clone(),
            hears: false,
        }
    }

    /// The user speaks, or an utterance awaits its transcript (`hears`),
    /// or neither.
    pub(super) fn set(&mut self, hears: bool) {
        if hears == self.hears {
            return;
        }
        self.hears = hears;
        if self.ctx.ext(|s: &mut UserSpeech| s.hearing(hears)) {
            released(&self.inner, &self.ctx);
        }
    }

    /// A transcript to record: it holds the session's own turns until it
    /// is dropped.
    pub(super) fn transcript(&self) -> TranscriptHold {
        self.ctx.ext(|s: &mut UserSpeech| s.transcript(true));
        TranscriptHold {
            inner: self.inner.clone(),
            ctx: self.ctx.clone(),
        }
    }
}

impl Drop for Hearing {
    fn drop(&mut self) {
        self.set(false);
    }
}

/// A transcript on its way to be recorded; dropped once it is (or once it
/// could not be), it lets go.
pub(super) struct TranscriptHold {
    inner: Arc<Inner>,
    ctx: Arc<SessionCtx>,
}

impl Drop for TranscriptHold {
    fn drop(&mut self) {
        if self.ctx.ext(|s: &mut UserSpeech| s.transcript(false)) {
            released(&self.inner, &self.ctx);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::UserSpeech;

    #[test]
    fn the_hold_ends_when_nothing_of_the_speech_is_left() {
        let mut s = UserSpeech::default();
        assert!(!s.holds());
        // The user speaks, then the utterance awaits its transcript.
        assert!(!s.hearing(true));
        assert!(s.holds());
        // The transcript is handed on before the listener stops hearing.
        assert!(!s.transcript(true));
        assert!(!s.hearing(false));
        assert!(s.holds(), "the transcript is not recorded yet");
        // Recorded: the hold ends, once.
        assert!(s.transcript(false));
        assert!(!s.holds());
        assert!(!s.transcript(false));
    }

    #[test]
    fn a_cough_ends_the_hold_when_the_listener_stops_hearing() {
        let mut s = UserSpeech::default();
        s.hearing(true);
        assert!(s.hearing(false));
        assert!(!s.holds());
    }

    #[test]
    fn a_second_listener_keeps_the_hold_while_it_hears() {
        let mut s = UserSpeech::default();
        s.hearing(true);
        s.hearing(true);
        // The first host's listener stops (taken over).
        assert!(!s.hearing(false));
        assert!(s.holds());
        assert!(s.hearing(false));
        // More lets-go than holds never underflow into a hold.
        assert!(!s.hearing(false));
        assert!(!s.holds());
    }

    #[test]
    fn speech_during_a_recording_keeps_the_hold() {
        let mut s = UserSpeech::default();
        s.hearing(true);
        s.transcript(true);
        s.hearing(false);
        // The user speaks again before the first transcript is recorded.
        s.hearing(true);
        assert!(!s.transcript(false));
        assert!(s.holds());
        assert!(s.hearing(false));
    }
}
