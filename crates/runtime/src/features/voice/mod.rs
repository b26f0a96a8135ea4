//! The voice engine (R-RT-8, design `voice-pipeline.md` §4(b)–(g)): a
//! pipeline session with a `speech` block speaks through a text-to-speech
//! interface and hears through a speech-to-text one while a voice host
//! (a socket that sent `client.hello{audio}`) is attached. Its turns are
//! the kernel's text turns: the engine takes each model step's text
//! through the kernel's step tap (`rtc_session::step_tap`) and speaks it.
//!
//! [`Runtime::attach_voice`] gives a session's socket a [`VoiceLink`];
//! its `hello` starts the engine (`engine.rs`), and a later socket's takes
//! the session over. `speaker.rs` turns released text into `audio.delta`
//! frames, `listener.rs` hears the host (VAD, turn-taking, the STT over
//! `stt_link.rs`, which reconnects with backoff) and `transcripts.rs`
//! records what it heard, `setup.rs` builds the provider configurations
//! (the built-in mocks in test mode), `latency.rs` keeps a turn's figures,
//! `user_speech.rs` holds the runtime's own turns while the user speaks.

mod engine;
mod feature;
mod item;
mod latency;
mod listener;
mod setup;
mod speaker;
mod stt_link;
mod tap;
mod transcripts;
mod user_speech;

pub(crate) use feature::{Voice, voiced};
pub(crate) use user_speech::user_speaking;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;
use rtc_protocol::{EphemeralFrame, HelloAudio};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::session::SessionCtx;
use crate::{Inner, Runtime, RuntimeError};

/// Audio frames waiting for the host socket before the speaker waits.
const FRAME_BUFFER: usize = 256;

/// The voice engines of this process, by session id.
pub(crate) struct Voices {
    next: AtomicU64,
    /// Most engines at once per workspace.
    max_per_workspace: usize,
    attached: Mutex<HashMap<String, Attached>>,
}

struct Attached {
    id: u64,
    workspace: String,
    cancel: CancellationToken,
}

impl Voices {
    pub(crate) fn new(max_per_workspace: usize) -> Self {
        Self {
            next: AtomicU64::new(1),
            max_per_workspace,
            attached: Mutex::default(),
        }
    }

    /// Register a new engine for `session`, stopping the one of an
    /// earlier socket; refused when the workspace has its most engines.
    fn register(
        &self,
        session: &str,
        workspace: &str,
        cancel: CancellationToken,
    ) -> Result<u64, RuntimeError> {
        let mut map = self.attached.lock();
        let others = map
            .iter()
            .filter(|(s, a)| a.workspace == workspace && s.as_str() != session)
            .count();
        if others >= self.max_per_workspace {
            return Err(RuntimeError::Limited {
                code: "voice_sessions_limited",
                message: format!(
                    "the workspace has {others} voice hosts attached, its most (RTC_VOICE_MAX_SESSIONS); close one first"
                ),
                retry_after_secs: 1,
            });
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let attached = Attached {
            id,
            workspace: workspace.to_owned(),
            cancel,
        };
        if let Some(previous) = map.insert(session.to_owned(), attached) {
            previous.cancel.cancel();
        }
        Ok(id)
    }

    /// Forget engine `id` of `session` once it stopped.
    fn unregister(&self, session: &str, id: u64) {
        let mut map = self.attached.lock();
        if map.get(session).is_some_and(|a| a.id == id) {
            map.remove(session);
        }
    }

    /// Stop the engine of `session`, if this process runs one.
    pub(crate) fn stop(&self, session: &str) {
        let removed = self.attached.lock().remove(session);
        if let Some(a) = removed {
            a.cancel.cancel();
        }
    }

    /// Stop every engine (shutdown).
    pub(crate) fn stop_all(&self) {
        let mut map = self.attached.lock();
        for (_, a) in map.drain() {
            a.cancel.cancel();
        }
    }
}

/// Sleep until `at`; never without one (a `select!` branch that may have
/// no deadline).
async fn sleep_until_some(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// A host socket's side of its voice session.
pub struct VoiceLink {
    inner: Arc<Inner>,
    ctx: Arc<SessionCtx>,
    frames_tx: mpsc::Sender<EphemeralFrame>,
    /// Audio for the host (`audio.delta`).
    pub frames: mpsc::Receiver<EphemeralFrame>,
    /// The running engine, once the host said hello with audio.
    engine: Mutex<Option<engine::EngineHandle>>,
}

impl VoiceLink {
    /// `client.hello{audio}`: the socket becomes the session's voice host.
    pub async fn hello(&self, audio: HelloAudio) -> Result<(), RuntimeError> {
        crate::features::realtime::check_host_rates(audio)?;
        let previous = self.engine.lock().take();
        if let Some(p) = previous {
            p.stop();
        }
        let handle = engine::start(
            self.inner.clone(),
            self.ctx.clone(),
            audio,
            self.frames_tx.clone(),
        )
        .await?;
        *self.engine.lock() = Some(handle);
        Ok(())
    }

    /// `audio.append`: base64 PCM16 at the host's input rate.
    pub fn audio(&self, base64_pcm: &str) -> Result<(), RuntimeError> {
        let pcm = crate::features::realtime::decode_audio(base64_pcm)?;
        self.hear(listener::Heard::Audio(pcm))
    }

    /// `audio.commit` (turn detection `none`).
    pub fn commit(&self) -> Result<(), RuntimeError> {
        self.hear(listener::Heard::Commit)
    }

    /// `playback.interrupted{itemId, playedMs}`: how much of an item the
    /// host played before it flushed its audio (used by a barge-in).
    pub fn playback_interrupted(&self, item_id: String, played_ms: u64) {
        if let Some(engine) = self.engine.lock().as_ref() {
            // A host that floods them loses the extra ones.
            let _ = engine.played.try_send((item_id, played_ms));
        }
    }

    fn hear(&self, heard: listener::Heard) -> Result<(), RuntimeError> {
        let input = self.engine.lock().as_ref().map(|e| e.heard.clone());
        let Some(input) = input else {
            return Err(RuntimeError::Conflict {
                code: "not_voice_host",
                message: "audio frames need a `client.hello` with `audio` first".into(),
            });
        };
        // Audio never waits: a listener that cannot keep up loses some
        // rather than stopping the socket.
        match input.try_send(heard) {
            Ok(()) | Err(mpsc::error::TrySendError::Full(_)) => Ok(()),
            Err(mpsc::error::TrySendError::Closed(_)) => Err(RuntimeError::Conflict {
                code: "voice_detached",
                message: "the voice engine of this socket has stopped (the session ended, or another connection took it over)".into(),
            }),
        }
    }

    /// Whether the socket is a voice host (it said hello with audio).
    pub fn is_host(&self) -> bool {
        self.engine.lock().is_some()
    }
}

impl Drop for VoiceLink {
    fn drop(&mut self) {
        if let Some(e) = self.engine.lock().take() {
            e.stop();
        }
    }
}

/// Have the voice host of `ctx`, if one is attached, speak `text` as item
/// `id` (a line already stored: a human agent's during a handoff).
pub(crate) fn speak_line(inner: &Inner, ctx: &SessionCtx, id: &str, text: &str) {
    let Some(tap) = rtc_session::step_tap::tap_of(ctx) else {
        return;
    };
    let (id, text) = (id.to_owned(), text.to_owned());
    inner.tasks.spawn(async move {
        tap.say(&id, &text).await;
    });
}

/// Hand the turn of a message just stored for `ctx` to the instance
/// holding its voice host, if that is another one (several instances,
/// design §4(b)): whether it was handed over. A failed lookup or notice
/// hands nothing over, and the message is answered here, unspoken.
pub(crate) async fn hand_turn_over(inner: &Inner, ctx: &SessionCtx) -> bool {
    let host = match inner.remote_clients.turn_host_elsewhere(&ctx.id).await {
        Ok(Some(host)) => host,
        Ok(None) => return false,
        Err(e) => {
            tracing::warn!(session = %ctx.id, error = %e, "looking up the voice host's instance failed");
            return false;
        }
    };
    let sent = inner
        .store
        .send_control(&host, rtc_store::ControlOp::StartTurn, &ctx.id)
        .await;
    if let Err(e) = sent {
        tracing::warn!(session = %ctx.id, error = %e, "handing a turn to the voice host's instance failed");
        return false;
    }
    true
}

/// Whether a voice host of `ctx` speaks and hears now.
pub(crate) fn hears(ctx: &SessionCtx) -> bool {
    rtc_session::step_tap::tap_of(ctx).is_some()
}

/// Speak question `index` of `pending` to the voice host of `ctx` as item
/// `id` (design §4(f): the question, then its options' labels).
pub(crate) fn ask(
    inner: &Inner,
    ctx: &SessionCtx,
    id: &str,
    pending: &rtc_protocol::PendingQuestion,
    index: usize,
) {
    let Some(q) = pending.questions.get(index) else {
        return;
    };
    let labels: Vec<&str> = q.options.iter().map(|o| o.label.as_str()).collect();
    let title = pending.sub_session_title.as_deref();
    let text = rtc_speech::voice_ask::spoken_question(&q.question, &labels, title);
    speak_line(inner, ctx, id, &text);
}

impl Runtime {
    /// Whether session `id` is a voice session (a pipeline assistant with
    /// `speech`, not a workflow).
    pub async fn is_voice_session(&self, workspace: &str, id: &str) -> Result<bool, RuntimeError> {
        let ctx = self.inner.session_in(workspace, id).await?;
        Ok(feature::voiced(&ctx))
    }

    /// The voice side of a new socket on a voice session; nothing starts
    /// until its `client.hello{audio}`.
    pub async fn attach_voice(&self, workspace: &str, id: &str) -> Result<VoiceLink, RuntimeError> {
        let ctx = self.inner.session_in(workspace, id).await?;
        let (frames_tx, frames) = mpsc::channel(FRAME_BUFFER);
        Ok(VoiceLink {
            inner: self.inner.clone(),
            ctx,
            frames_tx,
            frames,
            engine: Mutex::new(None),
        })
    }
}
