//! The voice engine's step tap (`rtc_session::step_tap`): what the
//! kernel's turn tells it of each model step, forwarded in order to the
//! speaker's task (`speaker.rs`), and what the listener asks of it.

use std::time::Instant;

use futures::future::BoxFuture;
use rtc_session::step_tap::{StepStored, StepTap, TurnNote};
use tokio::sync::{mpsc, oneshot};

/// What the tap, the engine and the listener ask of the speaker.
pub(super) enum Cmd {
    StepStarted(Instant),
    Delta {
        id: String,
        text: String,
    },
    StepEnded {
        id: String,
        calls: Vec<String>,
        reply: oneshot::Sender<StepStored>,
    },
    Abandoned {
        id: String,
        reply: oneshot::Sender<Option<StepStored>>,
    },
    /// Speak an already stored line (the first message).
    Fixed {
        id: String,
        text: String,
    },
    /// Speak a fixed line about to be stored; answered once it was sent.
    Say {
        id: String,
        text: String,
        reply: oneshot::Sender<StepStored>,
    },
    TurnEnding(oneshot::Sender<TurnNote>),
    /// The user's speech that starts the next turn: it ended at
    /// `speech_end`, its end was decided at `decided`, its transcript came
    /// at `transcribed`.
    Heard {
        speech_end: Instant,
        decided: Instant,
        transcribed: Instant,
    },
    /// The user cut in: stop speaking and record `started` (answered once
    /// the audio stopped).
    BargeIn {
        started: rtc_protocol::SpeechStarted,
        ack: oneshot::Sender<()>,
    },
}

/// The session's step tap: it forwards to the speaker's task.
pub(super) struct Tap {
    pub cmds: mpsc::UnboundedSender<Cmd>,
}

impl StepTap for Tap {
    fn step_started(&self, _message_id: &str) {
        let _ = self.cmds.send(Cmd::StepStarted(Instant::now()));
    }

    fn delta(&self, message_id: &str, text: &str) {
        let _ = self.cmds.send(Cmd::Delta {
            id: message_id.to_owned(),
            text: text.to_owned(),
        });
    }

    fn step_ended<'a>(
        &'a self,
        message_id: &'a str,
        _content: &'a str,
        calls: &'a [String],
    ) -> BoxFuture<'a, StepStored> {
        Box::pin(async move {
            let (reply, told) = oneshot::channel();
            let cmd = Cmd::StepEnded {
                id: message_id.to_owned(),
                calls: calls.to_vec(),
                reply,
            };
            if self.cmds.send(cmd).is_err() {
                return StepStored::default();
            }
            // A speaker that stopped (its host left) stores the text as typed.
            told.await.unwrap_or_default()
        })
    }

    fn step_abandoned<'a>(&'a self, message_id: &'a str) -> BoxFuture<'a, Option<StepStored>> {
        Box::pin(async move {
            let (reply, told) = oneshot::channel();
            let cmd = Cmd::Abandoned {
                id: message_id.to_owned(),
                reply,
            };
            self.cmds.send(cmd).ok()?;
            told.await.ok().flatten()
        })
    }

    fn say<'a>(&'a self, message_id: &'a str, text: &'a str) -> BoxFuture<'a, StepStored> {
        Box::pin(async move {
            let (reply, told) = oneshot::channel();
            let cmd = Cmd::Say {
                id: message_id.to_owned(),
                text: text.to_owned(),
                reply,
            };
            if self.cmds.send(cmd).is_err() {
                return StepStored::default();
            }
            told.await.unwrap_or_default()
        })
    }

    fn turn_ending(&self) -> BoxFuture<'_, TurnNote> {
        Box::pin(async move {
            let (reply, told) = oneshot::channel();
            if self.cmds.send(Cmd::TurnEnding(reply)).is_err() {
                return TurnNote::default();
            }
            told.await.unwrap_or_default()
        })
    }
}
