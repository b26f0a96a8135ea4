//! The per-chunk TTS driver shared by OpenAI, espeak and the mock: each
//! chunk's audio is produced by a [`Source`] task, at most `in_flight` of
//! them at once, and delivered strictly in chunk order — the head chunk's
//! audio is forwarded as it arrives while the next ones buffer theirs.
//! The first failure ends the stream with an `Error` and aborts the rest;
//! cancelling or dropping the stream aborts every task (closing requests,
//! killing processes).

use std::collections::VecDeque;
use std::sync::Arc;

use bytes::Bytes;
use futures::future::BoxFuture;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::{TtsChunk, TtsEvent, TtsStream, check_chunk, error_event};
use crate::error::Scrub;
use crate::{Result, SpeechError};

/// What a source says about one chunk.
#[derive(Debug)]
pub(crate) enum Piece {
    Audio { pcm: Bytes, rate: u32 },
    Done,
    Failed(SpeechError),
}

/// Makes one chunk's audio.
pub(crate) trait Source: Send + Sync + 'static {
    /// Send the audio of `text` to `out`, ending with `Done` or `Failed`.
    fn produce(&self, text: String, out: mpsc::UnboundedSender<Piece>) -> BoxFuture<'static, ()>;
}

enum Cmd {
    Chunk(String),
    Finish,
}

/// A task aborted when dropped.
struct Aborting(JoinHandle<()>);

impl Drop for Aborting {
    fn drop(&mut self) {
        self.0.abort();
    }
}

pub(crate) struct Pipelined {
    cmds: mpsc::UnboundedSender<Cmd>,
    driver: JoinHandle<()>,
    finished: bool,
}

impl Pipelined {
    pub(crate) fn start(
        source: Arc<dyn Source>,
        in_flight: usize,
        events: mpsc::Sender<TtsEvent>,
        scrub: Scrub,
    ) -> Self {
        let (cmds, queue) = mpsc::unbounded_channel();
        let driver = Driver {
            source,
            in_flight: in_flight.max(1),
            events,
            scrub,
        };
        Self {
            cmds,
            driver: tokio::spawn(driver.run(queue)),
            finished: false,
        }
    }
}

impl Drop for Pipelined {
    fn drop(&mut self) {
        self.driver.abort();
    }
}

#[async_trait::async_trait]
impl TtsStream for Pipelined {
    async fn push(&mut self, chunk: TtsChunk) -> Result<()> {
        if self.finished {
            return Err(SpeechError::Closed);
        }
        check_chunk(&chunk)?;
        self.cmds
            .send(Cmd::Chunk(chunk.text))
            .map_err(|_| SpeechError::Closed)
    }

    async fn finish(&mut self) -> Result<()> {
        if std::mem::replace(&mut self.finished, true) {
            return Ok(());
        }
        self.cmds.send(Cmd::Finish).map_err(|_| SpeechError::Closed)
    }

    async fn cancel(&mut self) {
        self.finished = true;
        self.driver.abort();
    }
}

struct Driver {
    source: Arc<dyn Source>,
    in_flight: usize,
    events: mpsc::Sender<TtsEvent>,
    scrub: Scrub,
}

type Running = (usize, mpsc::UnboundedReceiver<Piece>, Option<Aborting>);

impl Driver {
    async fn run(self, mut queue: mpsc::UnboundedReceiver<Cmd>) {
        let mut pending: VecDeque<(usize, String)> = VecDeque::new();
        let mut running: VecDeque<Running> = VecDeque::new();
        let mut next = 0;
        let mut finished = false;
        loop {
            while running.len() < self.in_flight
                && let Some((chunk, text)) = pending.pop_front()
            {
                running.push_back(self.start(chunk, text));
            }
            if running.is_empty() && finished {
                let _ = self.events.send(TtsEvent::Done).await;
                return;
            }
            tokio::select! {
                cmd = queue.recv(), if !finished => match cmd {
                    Some(Cmd::Chunk(text)) => {
                        pending.push_back((next, text));
                        next += 1;
                    }
                    Some(Cmd::Finish) | None => finished = true,
                },
                piece = head(&mut running), if !running.is_empty() => {
                    let Some(&(chunk, _, _)) = running.front() else { continue };
                    let event = match piece {
                        Some(Piece::Audio { pcm, rate }) => {
                            if pcm.is_empty() {
                                continue;
                            }
                            TtsEvent::Audio { chunk, pcm, rate, align: None }
                        }
                        Some(Piece::Done) => {
                            running.pop_front();
                            TtsEvent::ChunkDone { chunk }
                        }
                        Some(Piece::Failed(e)) => {
                            let _ = self.events.send(error_event(&self.scrub.error(e))).await;
                            return;
                        }
                        None => {
                            let e = SpeechError::Protocol("the chunk's task ended early".into());
                            let _ = self.events.send(error_event(&e)).await;
                            return;
                        }
                    };
                    if self.events.send(event).await.is_err() {
                        return;
                    }
                }
            }
        }
    }

    fn start(&self, chunk: usize, text: String) -> Running {
        let (out, pieces) = mpsc::unbounded_channel();
        if text.trim().is_empty() {
            let _ = out.send(Piece::Done);
            return (chunk, pieces, None);
        }
        let task = tokio::spawn(self.source.produce(text, out));
        (chunk, pieces, Some(Aborting(task)))
    }
}

async fn head(running: &mut VecDeque<Running>) -> Option<Piece> {
    match running.front_mut() {
        Some((_, pieces, _)) => pieces.recv().await,
        None => std::future::pending().await,
    }
}
