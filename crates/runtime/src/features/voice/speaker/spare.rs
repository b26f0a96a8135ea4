//! A text-to-speech stream opened ahead of its item (design
//! `voice-pipeline.md` §4(e)): an ElevenLabs `stream-input` socket costs a
//! handshake (TLS, then the BOS), so the next item's is opened when the
//! user's turn ends or a model step is requested, and the item that speaks
//! next takes it instead of opening its own. Dialects whose opening does no
//! IO (OpenAI, espeak, the mock) open nothing ahead.

use std::time::{Duration, Instant};

use rtc_speech::{TtsConfig, TtsDialect, TtsEvent, TtsStream, open_tts};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// An opened stream and its events.
pub(in crate::features::voice) type Opened = (Box<dyn TtsStream>, mpsc::Receiver<TtsEvent>);

/// A spare older than this is closed rather than used: ElevenLabs closes a
/// socket after 60 s without text (`inactivity_timeout=60`).
const FRESH_FOR: Duration = Duration::from_secs(45);

/// At most one stream opened ahead.
#[derive(Default)]
pub(super) struct SpareTts {
    opening: Option<(Instant, JoinHandle<rtc_speech::Result<Opened>>)>,
}

impl SpareTts {
    /// Open the next item's stream now, if the dialect gains by it and
    /// none is open or opening.
    pub fn prepare(&mut self, cfg: &TtsConfig) {
        if cfg.dialect != TtsDialect::ElevenLabs || self.opening.is_some() {
            return;
        }
        let cfg = cfg.clone();
        let task = tokio::spawn(async move { open_tts(&cfg).await });
        self.opening = Some((Instant::now(), task));
    }

    /// A stream for the item that speaks now: the spare when it opened and
    /// is fresh, else a new one (whose failure is the caller's to report).
    pub async fn take(&mut self, cfg: &TtsConfig) -> rtc_speech::Result<Opened> {
        if let Some((at, task)) = self.opening.take() {
            if at.elapsed() < FRESH_FOR {
                if let Ok(Ok(opened)) = task.await {
                    return Ok(opened);
                }
            } else {
                close(task).await;
            }
        }
        open_tts(cfg).await
    }

    /// Close the spare, if any (the engine stops).
    pub async fn close(&mut self) {
        if let Some((_, task)) = self.opening.take() {
            close(task).await;
        }
    }
}

/// Cancel a spare's opening, or close what it opened.
async fn close(task: JoinHandle<rtc_speech::Result<Opened>>) {
    if !task.is_finished() {
        task.abort();
        return;
    }
    if let Ok(Ok((mut tts, _))) = task.await {
        tts.cancel().await;
    }
}
