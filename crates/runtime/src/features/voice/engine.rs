//! One voice host's engine (design `voice-pipeline.md` §4(b)): started by
//! `client.hello{audio}`, it installs the session's step tap so turns are
//! spoken, records `session.speech_ready`, speaks the first message of a
//! session nobody has spoken to yet, and stops with its socket, when a
//! later socket takes the session over, or when the session ends.

use std::sync::Arc;

use rtc_protocol::{HelloAudio, MessageRole, SpeechReady};
use rtc_session::step_tap::StepTapSlot;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::listener::{Heard, Listener};
use super::speaker::{Cmd, Speaker, SpeakerOptions, Tap};
use super::stt_link::SttLink;
use super::{Voices, setup};
use crate::session::SessionCtx;
use crate::{Inner, RuntimeError};

/// Which engine installed the session's step tap.
struct TapOwner(u64);

/// The host's `playback.interrupted` reports waiting for the speaker
/// before more are dropped (a host may send them in a loop).
const PLAYED_BUFFER: usize = 8;

/// Host audio waiting for the listener before it is dropped.
const HEARD_BUFFER: usize = 512;

/// A running engine; stopping it stops its speaker and listener.
pub(super) struct EngineHandle {
    cancel: CancellationToken,
    /// The listener's input (it runs whether or not its STT connected).
    pub(super) heard: mpsc::Sender<Heard>,
    /// The host's `playback.interrupted` reports, for the speaker.
    pub(super) played: mpsc::Sender<(String, u64)>,
}

impl EngineHandle {
    pub(super) fn stop(&self) {
        self.cancel.cancel();
    }
}

/// Start the engine of a voice host of `ctx`.
pub(super) async fn start(
    inner: Arc<Inner>,
    ctx: Arc<SessionCtx>,
    audio: HelloAudio,
    frames: mpsc::Sender<rtc_protocol::EphemeralFrame>,
) -> Result<EngineHandle, RuntimeError> {
    if !ctx.state.lock().await.is_open() {
        return Err(RuntimeError::session_ended());
    }
    let setup = setup::of(&inner, &ctx, audio.output_rate).await?;
    let cancel = CancellationToken::new();
    let id = inner
        .service::<Voices>()
        .register(&ctx.id, &ctx.workspace, cancel.clone())?;
    let (cmds, commands) = mpsc::unbounded_channel();
    {
        let mut ext = ctx.extensions.lock();
        ext.insert(StepTapSlot(Arc::new(Tap { cmds: cmds.clone() })));
        ext.insert(TapOwner(id));
    }
    let ready = SpeechReady {
        input_rate: audio.input_rate,
        output_rate: audio.output_rate,
        stt: setup.stt_side.clone(),
        tts: setup.tts_side.clone(),
    };
    let floor = super::item::Floor::default();
    let (played_tx, played) = mpsc::channel(PLAYED_BUFFER);
    let speaker = Speaker::new(
        (inner.clone(), ctx.clone()),
        played,
        frames.clone(),
        setup.tts.clone(),
        SpeakerOptions {
            output_rate: audio.output_rate,
            hold: setup.hold,
            filler: setup.tool_filler.clone(),
        },
        floor.clone(),
    );
    let (rt, session, token) = (inner.clone(), ctx.clone(), cancel.clone());
    inner.tasks.spawn(async move {
        speaker.run(commands, token).await;
        {
            let mut ext = session.extensions.lock();
            if ext.get::<TapOwner>().is_some_and(|o| o.0 == id) {
                ext.remove::<TapOwner>();
                ext.remove::<StepTapSlot>();
            }
        }
        rt.service::<Voices>().unregister(&session.id, id);
    });
    if let Err(e) = ctx.events.emit(ready.into()).await {
        cancel.cancel();
        return Err(e);
    }
    // The STT connects now; if it cannot, the listener still runs (VAD,
    // barge-in) and reconnects with backoff as the user speaks (§4(c)).
    let (link, failure) = SttLink::open(setup.stt.clone(), tokio::time::Instant::now()).await;
    if let Some(e) = failure {
        let failed = rtc_protocol::EventBody::error("speech_connect_failed", e.to_string());
        if let Err(e) = ctx.events.emit(failed).await {
            cancel.cancel();
            return Err(e);
        }
    }
    let (heard, input) = mpsc::channel(HEARD_BUFFER);
    let listener = Listener::new(
        inner.clone(),
        ctx.clone(),
        (cmds.clone(), floor, frames.clone()),
        &setup,
        (link, audio.input_rate),
    );
    inner.tasks.spawn(listener.run(input, cancel.clone()));
    // A session nobody has spoken to yet: its first message is said now.
    let first = inner
        .with_history(&ctx, |h| {
            if h.iter().any(|m| m.role == MessageRole::User) {
                return None;
            }
            h.iter()
                .rev()
                .find(|m| m.role == MessageRole::Assistant && !m.content.is_empty())
                .map(|m| (m.id.clone(), m.content.clone()))
        })
        .await?;
    if let Some((id, text)) = first {
        let _ = cmds.send(Cmd::Fixed { id, text });
    }
    Ok(EngineHandle {
        cancel,
        heard,
        played: played_tx,
    })
}
