//! A voice engine's connection to its speech-to-text provider (design
//! `voice-pipeline.md` §4(c) `speech_connect_failed`, §4(d)): the stream
//! when one is up, a connect under way, or none; and when the next attempt
//! may be made. A failed attempt waits 2 s before the next, doubling to
//! 60 s ([`Backoff`], realtime's figures); a connect that succeeds resets
//! the wait, so a stream the provider drops later may be reopened at once.
//!
//! The listener decides *when* to connect (a streaming STT when the user
//! starts speaking, a batch one at the utterance's end); this module keeps
//! the state, runs a streaming connect in the background so the VAD and
//! barge-in go on during a slow handshake, and reports what happened
//! through [`SttLink::next`].

use std::time::Duration;

use rtc_speech::{SpeechError, SttConfig, SttDialect, SttEvent, SttStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// The wait after the first failed attempt.
const FIRST_WAIT: Duration = Duration::from_secs(2);
/// The longest wait between attempts.
const LONGEST_WAIT: Duration = Duration::from_secs(60);
/// A stream lost sooner than this after it connected counts as a failed
/// attempt (a provider or proxy that accepts and drops at once).
const STABLE_AFTER: Duration = Duration::from_secs(5);

/// When the next connect attempt may be made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Backoff {
    /// The wait a failure starts next.
    wait: Duration,
    /// No attempt before this; `None`: one may be made now.
    not_before: Option<Instant>,
}

impl Default for Backoff {
    fn default() -> Self {
        Self {
            wait: FIRST_WAIT,
            not_before: None,
        }
    }
}

impl Backoff {
    /// Whether an attempt may be made at `now`.
    pub(super) fn allows(&self, now: Instant) -> bool {
        self.not_before.is_none_or(|t| now >= t)
    }

    /// An attempt failed at `now`: the next waits, and the one after twice
    /// as long (at most [`LONGEST_WAIT`]).
    pub(super) fn failed(&mut self, now: Instant) {
        self.not_before = Some(now + self.wait);
        self.wait = (self.wait * 2).min(LONGEST_WAIT);
    }

    /// An attempt succeeded: the next may be made at once. The wait goes
    /// back to [`FIRST_WAIT`] only once the stream has lived
    /// [`STABLE_AFTER`] ([`Self::stable`]): a provider that accepts and
    /// drops at once still backs off.
    pub(super) fn succeeded(&mut self) {
        self.not_before = None;
    }

    /// The stream lived long enough: a failure waits [`FIRST_WAIT`] again.
    pub(super) fn stable(&mut self) {
        *self = Self::default();
    }
}

/// An open STT stream and its events.
type Connection = (Box<dyn SttStream>, mpsc::Receiver<SttEvent>);

enum State {
    /// The stream sits in a mutex only so that the listener is `Sync`
    /// (its `&self` methods are awaited); it is reached through
    /// `get_mut`, never locked.
    Up(
        (
            tokio::sync::Mutex<Box<dyn SttStream>>,
            mpsc::Receiver<SttEvent>,
        ),
    ),
    Connecting(JoinHandle<rtc_speech::Result<Connection>>),
    Down,
}

/// What [`SttLink::next`] saw.
pub(super) enum LinkEvent {
    /// The provider said something. [`SttEvent::Closed`] also stands for
    /// an event channel that ended.
    Heard(SttEvent),
    /// A background connect succeeded: the stream is up.
    Connected,
    /// A background connect failed: the link is down, the backoff started.
    ConnectFailed(SpeechError),
}

/// The STT connection of one voice engine.
pub(super) struct SttLink {
    config: SttConfig,
    state: State,
    backoff: Backoff,
    /// When the stream that is up connected.
    up_since: Option<Instant>,
}

impl SttLink {
    /// Connect now (at `client.hello{audio}`); a failure leaves the link
    /// down with the backoff started, and is returned to be recorded.
    pub(super) async fn open(config: SttConfig, now: Instant) -> (Self, Option<SpeechError>) {
        let mut link = Self {
            config,
            state: State::Down,
            backoff: Backoff::default(),
            up_since: None,
        };
        let failure = link.connect_now(now).await.err();
        (link, failure)
    }

    /// Whether the provider hears a stream of all the audio (Deepgram),
    /// rather than one upload per utterance.
    pub(super) fn streaming(&self) -> bool {
        self.config.dialect == SttDialect::Deepgram
    }

    pub(super) fn is_up(&self) -> bool {
        matches!(self.state, State::Up(_))
    }

    pub(super) fn is_connecting(&self) -> bool {
        matches!(self.state, State::Connecting(_))
    }

    /// The open stream, if one is up.
    pub(super) fn stream(&mut self) -> Option<&mut dyn SttStream> {
        match &mut self.state {
            State::Up((stream, _)) => Some(stream.get_mut().as_mut()),
            _ => None,
        }
    }

    /// Connect in place if the link is down and the backoff allows at
    /// `now`: `Ok(true)` when the stream is up, `Ok(false)` when no
    /// attempt was made (nothing to record), `Err` for a failed attempt.
    pub(super) async fn connect_if_allowed(&mut self, now: Instant) -> Result<bool, SpeechError> {
        match self.state {
            State::Up(_) => return Ok(true),
            State::Connecting(_) => return Ok(false),
            State::Down => {}
        }
        if !self.backoff.allows(now) {
            return Ok(false);
        }
        self.connect_now(now).await.map(|()| true)
    }

    /// Start connecting in the background if the link is down and the
    /// backoff allows at `now`; whether an attempt started.
    /// [`Self::next`] reports its outcome.
    pub(super) fn begin_connect(&mut self, now: Instant) -> bool {
        if !matches!(self.state, State::Down) || !self.backoff.allows(now) {
            return false;
        }
        let config = self.config.clone();
        let attempt = tokio::spawn(async move { rtc_speech::connect_stt(&config).await });
        self.state = State::Connecting(attempt);
        true
    }

    /// The provider closed the stream or failed for good at `now`: the
    /// link is down. A stream that lived [`STABLE_AFTER`] may reconnect at
    /// once; one lost sooner counts as a failed attempt.
    pub(super) fn lost(&mut self, now: Instant) {
        self.state = State::Down;
        match self.up_since.take() {
            Some(at) if now.saturating_duration_since(at) >= STABLE_AFTER => self.backoff.stable(),
            _ => self.backoff.failed(now),
        }
    }

    /// The next thing that happens on the link; never while it is down.
    /// Cancel-safe: a connect under way goes on.
    pub(super) async fn next(&mut self) -> LinkEvent {
        let outcome = match &mut self.state {
            State::Up((_, events)) => {
                return LinkEvent::Heard(events.recv().await.unwrap_or(SttEvent::Closed));
            }
            State::Connecting(attempt) => attempt.await,
            State::Down => std::future::pending().await,
        };
        let outcome = outcome.unwrap_or_else(|e| {
            Err(SpeechError::Unavailable(format!(
                "the connect attempt stopped: {e}"
            )))
        });
        match self.settle(outcome, Instant::now()) {
            Ok(()) => LinkEvent::Connected,
            Err(e) => LinkEvent::ConnectFailed(e),
        }
    }

    /// Close the stream (Deepgram `CloseStream`) or stop a connect.
    pub(super) async fn close(&mut self) {
        match std::mem::replace(&mut self.state, State::Down) {
            State::Up((stream, _)) => {
                if let Err(e) = stream.into_inner().close().await {
                    tracing::debug!(error = %e, "closing the STT stream failed");
                }
            }
            State::Connecting(attempt) => attempt.abort(),
            State::Down => {}
        }
    }

    /// Connect in place; a failure counts from `now`.
    async fn connect_now(&mut self, now: Instant) -> Result<(), SpeechError> {
        let outcome = rtc_speech::connect_stt(&self.config).await;
        self.settle(outcome, now)
    }

    /// Take an attempt's outcome: the stream is up, or the link is down
    /// with the backoff started at `now`.
    fn settle(
        &mut self,
        outcome: rtc_speech::Result<Connection>,
        now: Instant,
    ) -> Result<(), SpeechError> {
        match outcome {
            Ok((stream, events)) => {
                self.backoff.succeeded();
                self.up_since = Some(now);
                self.state = State::Up((tokio::sync::Mutex::new(stream), events));
                Ok(())
            }
            Err(e) => {
                self.backoff.failed(now);
                self.state = State::Down;
                Err(e)
            }
        }
    }
}

impl Drop for SttLink {
    fn drop(&mut self) {
        if let State::Connecting(attempt) = &self.state {
            attempt.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    #[test]
    fn failures_wait_two_seconds_doubling_to_a_minute() {
        let t0 = Instant::now();
        let mut b = Backoff::default();
        assert!(b.allows(t0), "the first attempt is never held back");
        let mut at = t0;
        for wait in [2, 4, 8, 16, 32, 60, 60] {
            b.failed(at);
            assert!(!b.allows(at + secs(wait) - Duration::from_millis(1)));
            assert!(b.allows(at + secs(wait)), "after {wait} s");
            at += secs(wait);
        }
    }

    #[test]
    fn a_success_resets_the_wait() {
        let t0 = Instant::now();
        let mut b = Backoff::default();
        b.failed(t0);
        b.failed(t0 + secs(2));
        assert!(!b.allows(t0 + secs(5)), "the second failure waits 4 s");
        b.succeeded();
        assert!(b.allows(t0 + secs(5)), "a success allows one at once");
        b.failed(t0 + secs(10));
        assert!(
            !b.allows(t0 + secs(17)),
            "a stream that did not last: the wait went on doubling (8 s)"
        );
        b.succeeded();
        b.stable();
        b.failed(t0 + secs(30));
        assert!(!b.allows(t0 + secs(31)));
        assert!(b.allows(t0 + secs(32)), "2 s again after a stable stream");
    }

    #[tokio::test]
    async fn a_refused_connect_starts_the_backoff() {
        // A mock STT at a rate no dialect takes: connect_stt refuses it.
        let mut config = SttConfig::new(SttDialect::Mock, "");
        config.sample_rate = 0;
        let t0 = Instant::now();
        let (mut link, failure) = SttLink::open(config, t0).await;
        assert!(failure.is_some());
        assert!(!link.is_up());
        let at = |s: u64| t0 + secs(s);
        assert!(matches!(link.connect_if_allowed(at(1)).await, Ok(false)));
        assert!(!link.begin_connect(at(1)), "inside the window");
        assert!(link.connect_if_allowed(at(2)).await.is_err(), "tried again");
        assert!(!link.begin_connect(at(5)), "the window doubled to 4 s");
        link.config.sample_rate = 16_000;
        assert!(link.begin_connect(at(6)));
        assert!(link.is_connecting());
        assert!(matches!(link.next().await, LinkEvent::Connected));
        assert!(link.is_up() && link.stream().is_some());
        // Up since about now (the connect ran in real time).
        let up = Instant::now();
        link.lost(up + Duration::from_millis(100));
        assert!(link.stream().is_none());
        assert!(
            !link.begin_connect(up + secs(1)),
            "a stream dropped at once counts as a failure"
        );
        assert!(link.begin_connect(up + secs(9)), "after the 8 s it began");
        assert!(matches!(link.next().await, LinkEvent::Connected));
        link.lost(Instant::now() + secs(6));
        assert!(
            link.begin_connect(Instant::now() + secs(6)),
            "a stream that lasted may reconnect at once"
        );
        assert!(matches!(link.next().await, LinkEvent::Connected));
        link.close().await;
        assert!(!link.is_up());
    }
}
