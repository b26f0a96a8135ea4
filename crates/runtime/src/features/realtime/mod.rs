//! Realtime sessions (R-RT-7, design `realtime.md` §5): a realtime
//! assistant's session is bridged to its interface's provider while a
//! host socket is attached. [`Runtime::attach_realtime`] starts the bridge
//! (`bridge.rs`) and hands the socket a [`RealtimeLink`]: audio and
//! control in, ephemeral audio frames out; everything else reaches the
//! host as stored events. One bridge per session: a new socket replaces
//! the previous one's. `book.rs` decides when to ask for a response,
//! `calls.rs` runs function calls, `setup.rs` builds what a connection
//! needs.

mod book;
mod bridge;
mod budget;
mod calls;
mod feature;
mod setup;

pub(crate) use feature::Realtime;

use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use base64::Engine;
use rtc_protocol::{EphemeralFrame, HelloAudio, Message, SessionStatus};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

pub use bridge::HostInput;
pub(crate) use setup::{api_key_secret, connection_of};

use crate::{Runtime, RuntimeError};

/// The realtime feature's operations on its host.
pub(crate) type RealtimeService<'a> = crate::feature::Service<'a, feature::Realtime>;

/// The host rates a `client.hello` may ask for.
pub const HOST_RATES: [u32; 2] = [16_000, 24_000];
/// The most audio one `audio.append` may carry, decoded (about 5 s at 24 kHz).
pub const MAX_AUDIO_FRAME_BYTES: usize = 256 * 1024;
/// Audio frames waiting for a slow host before they are dropped.
const FRAME_BUFFER: usize = 256;
/// Host inputs waiting for the bridge.
const INPUT_BUFFER: usize = 64;

/// The bridges of this process, by session id.
pub(crate) struct Bridges {
    next: AtomicU64,
    attached: Mutex<HashMap<String, Attached>>,
    /// How often each session may connect to its provider.
    connects: budget::ConnectBudget,
}

struct Attached {
    id: u64,
    cancel: CancellationToken,
    /// Weak: the bridge ends when its socket's link is dropped.
    input: mpsc::WeakSender<HostInput>,
}

impl Bridges {
    /// No bridge yet; each session may open `connects_per_minute`
    /// provider connections a minute (after a short burst).
    pub(crate) fn new(connects_per_minute: u32) -> Self {
        Self {
            next: AtomicU64::new(0),
            attached: Mutex::default(),
            connects: budget::ConnectBudget::new(connects_per_minute),
        }
    }

    /// Stop the bridge of `session`, if this process runs one.
    pub(crate) fn detach(&self, session: &str) {
        let removed = self.attached.lock().remove(session);
        if let Some(a) = removed {
            a.cancel.cancel();
        }
    }

    /// Stop every bridge (shutdown): their sockets are going too.
    pub(crate) fn detach_all(&self) {
        {
            let mut map = self.attached.lock();
            for (_, a) in map.drain() {
                a.cancel.cancel();
            }
        }
    }

    fn input_of(&self, session: &str) -> Option<mpsc::Sender<HostInput>> {
        self.attached
            .lock()
            .get(session)
            .and_then(|a| a.input.upgrade())
    }
}

/// A host socket's side of its session's bridge.
pub struct RealtimeLink {
    input: mpsc::Sender<HostInput>,
    /// Audio for the host; ends when the bridge stops (the session ended,
    /// or another socket took the session over).
    pub frames: mpsc::Receiver<EphemeralFrame>,
}

impl RealtimeLink {
    /// `client.hello`'s audio rates.
    pub async fn hello(&self, audio: HelloAudio) -> Result<(), RuntimeError> {
        check_host_rates(audio)?;
        self.send(HostInput::Rates {
            input: audio.input_rate,
            output: audio.output_rate,
        })
        .await
    }

    /// `audio.append`: base64 PCM16 at the host's input rate.
    pub async fn audio(&self, base64_pcm: &str) -> Result<(), RuntimeError> {
        let pcm = decode_audio(base64_pcm)?;
        // Audio never waits: a bridge busy with the provider loses some
        // rather than stopping the socket.
        match self.input.try_send(HostInput::Audio(pcm)) {
            Ok(()) | Err(mpsc::error::TrySendError::Full(_)) => Ok(()),
            Err(mpsc::error::TrySendError::Closed(_)) => Err(stopped()),
        }
    }

    /// `audio.commit`.
    pub async fn commit(&self) -> Result<(), RuntimeError> {
        self.send(HostInput::Commit).await
    }

    /// `playback.interrupted`.
    pub async fn playback_interrupted(
        &self,
        item_id: String,
        played_ms: u32,
    ) -> Result<(), RuntimeError> {
        self.send(HostInput::PlaybackInterrupted { item_id, played_ms })
            .await
    }

    /// `user.message` on a realtime session.
    pub async fn text(&self, text: String) -> Result<Message, RuntimeError> {
        send_text(&self.input, text).await
    }

    async fn send(&self, input: HostInput) -> Result<(), RuntimeError> {
        self.input.send(input).await.map_err(|_| stopped())
    }
}

/// An `audio.append`'s PCM16, at most [`MAX_AUDIO_FRAME_BYTES`] decoded.
pub(crate) fn decode_audio(base64_pcm: &str) -> Result<Vec<u8>, RuntimeError> {
    let invalid = |message: String| -> RuntimeError {
        rtc_core::ValidationError::new("invalid_audio", "audio", message).into()
    };
    if base64_pcm.len() > MAX_AUDIO_FRAME_BYTES / 3 * 4 + 4 {
        return Err(invalid(format!(
            "one frame carries at most {MAX_AUDIO_FRAME_BYTES} bytes of audio; send smaller chunks"
        )));
    }
    let pcm = base64::engine::general_purpose::STANDARD
        .decode(base64_pcm)
        .map_err(|e| invalid(format!("`audio` must be base64 PCM16: {e}")))?;
    if pcm.len() % 2 != 0 {
        return Err(invalid(
            "PCM16 audio has an even number of bytes".to_owned(),
        ));
    }
    Ok(pcm)
}

/// `client.hello`'s audio rates are ones a host may ask for.
pub(crate) fn check_host_rates(audio: HelloAudio) -> Result<(), RuntimeError> {
    for (rate, field) in [
        (audio.input_rate, "audio.inputRate"),
        (audio.output_rate, "audio.outputRate"),
    ] {
        if !HOST_RATES.contains(&rate) {
            return Err(rtc_core::ValidationError::new(
                "invalid_rate",
                field,
                format!("audio rates are 16000 or 24000 Hz; got {rate}"),
            )
            .into());
        }
    }
    Ok(())
}

fn stopped() -> RuntimeError {
    RuntimeError::Conflict {
        code: "realtime_detached",
        message: "the realtime bridge of this socket has stopped (the session ended, or another connection took it over)".into(),
    }
}

async fn send_text(input: &mpsc::Sender<HostInput>, text: String) -> Result<Message, RuntimeError> {
    let (reply, answer) = oneshot::channel();
    input
        .send(HostInput::Text(text, reply))
        .await
        .map_err(|_| stopped())?;
    answer.await.map_err(|_| stopped())?
}

impl Runtime {
    /// Whether session `id` runs a realtime assistant (not a workflow).
    pub async fn is_realtime_session(
        &self,
        workspace: &str,
        id: &str,
    ) -> Result<bool, RuntimeError> {
        let ctx = self.inner.session_in(workspace, id).await?;
        Ok(feature::bridged(&ctx))
    }

    /// Start the bridge of a realtime session for a new host socket (the
    /// provider is connected now); a bridge of an earlier socket stops.
    pub async fn attach_realtime(
        &self,
        workspace: &str,
        id: &str,
    ) -> Result<RealtimeLink, RuntimeError> {
        let inner = &self.inner;
        let ctx = inner.session_in(workspace, id).await?;
        let (input, inputs) = mpsc::channel(INPUT_BUFFER);
        let (frames_tx, frames) = mpsc::channel(FRAME_BUFFER);
        let cancel = CancellationToken::new();
        let bridge_id = inner
            .service::<Bridges>()
            .next
            .fetch_add(1, Ordering::Relaxed);
        {
            let mut map = inner.service::<Bridges>().attached.lock();
            let attached = Attached {
                id: bridge_id,
                cancel: cancel.clone(),
                input: input.downgrade(),
            };
            if let Some(previous) = map.insert(ctx.id.clone(), attached) {
                previous.cancel.cancel();
            }
        }
        // An end that came meanwhile (it sets Ended, then detaches) stops it.
        if ctx.state.lock().await.status == SessionStatus::Ended {
            cancel.cancel();
        }
        let bridge = bridge::Bridge::new(inner.clone(), ctx.clone(), cancel, frames_tx);
        let rt = inner.clone();
        let session = ctx.id.clone();
        inner.tasks.spawn(async move {
            bridge.run(inputs).await;
            let mut map = rt.service::<Bridges>().attached.lock();
            if map.get(&session).is_some_and(|a| a.id == bridge_id) {
                map.remove(&session);
            }
        });
        Ok(RealtimeLink { input, frames })
    }
}

impl RealtimeService<'_> {
    /// A typed message for a realtime session's bridge in this process;
    /// `None` when none runs here.
    pub(crate) async fn realtime_text(
        self,
        session: &str,
        text: &str,
    ) -> Option<Result<Message, RuntimeError>> {
        let input = self.service::<Bridges>().input_of(session)?;
        Some(send_text(&input, text.to_owned()).await)
    }
}
