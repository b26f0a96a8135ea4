//! A barge-in on the speaker (design `voice-pipeline.md` §4(d), steps
//! 1–5): every `audio.delta` stops at once and `speech.started` is
//! recorded once the socket has what was sent; each item is cut to what
//! the server estimates the user heard: a waiting step is answered with
//! it, and an answer already stored whole (its step had tool calls) is
//! truncated in place with `message.truncated`. The host's
//! `playback.interrupted` within a second corrects the estimate the same
//! way. The estimate is not held back for the report: the cut answer is
//! stored before the user's next words, as the history must read.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rtc_protocol::{MessageTruncated, SpeechStarted};
use rtc_speech::prefix::SpokenItem;
use tokio::sync::mpsc;

use super::{FLUSH_WITHIN, Speaker};
use crate::Inner;
use crate::features::voice::item::cut;
use crate::session::SessionCtx;

/// How long after a barge-in the host's `playback.interrupted` is used.
const REPORT_WITHIN: Duration = Duration::from_secs(1);

/// How long a truncation waits for its answer to be stored (the turn
/// stores it right after its step ends).
const STORED_WITHIN: Duration = Duration::from_secs(2);

/// An item cut by a barge-in, kept a while for the host's report of how
/// much of it played.
pub(super) struct CutItem {
    id: String,
    delivered: SpokenItem,
    sent_ms: u64,
    /// What is stored of it now.
    stored_text: String,
    until: Instant,
}

impl Speaker {
    /// The user cut in: stop all audio, record `speech.started` once the
    /// socket has what was sent, cancel the TTS streams, and cut each item
    /// to what the server estimates was heard of it.
    pub(super) async fn barge_in(&mut self, started: SpeechStarted) {
        let now = Instant::now();
        self.outbox.clear();
        self.play_end = None;
        self.floor.lock().playing_until = None;
        // What was already handed to the socket goes before `speech.started`.
        let deadline = Instant::now() + FLUSH_WITHIN;
        while self.frames.capacity() < self.frames.max_capacity() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        if let Err(e) = self.ctx.events.emit(started.into()).await {
            tracing::warn!(error = %e, "recording speech.started failed");
        }
        // The host's report answers `speech.started`: its second counts
        // from there.
        let reports_until = Instant::now() + REPORT_WITHIN;
        self.cuts.retain(|c| c.until > now);
        let mut heard = HashMap::new();
        let mut to_cut = Vec::new();
        for mut item in self.items.drain(..) {
            let played = item.played_ms(now, None);
            let text = item.heard(played);
            if let Some((mut tts, _)) = item.tts.take() {
                tts.cancel().await;
            }
            if let Some(reply) = item.on_done.take() {
                let _ = reply.send(cut(&item.id, text.clone()));
            } else if item.stored && item.deltas && text.trim() != item.released_text().trim() {
                to_cut.push((item.id.clone(), played, text.clone()));
            }
            if item.deltas && item.t0.is_some() {
                self.cuts.push(CutItem {
                    id: item.id.clone(),
                    delivered: item.delivered(),
                    sent_ms: item.sent_ms,
                    stored_text: text.clone(),
                    until: reports_until,
                });
            }
            if item.deltas {
                heard.insert(item.id, text);
            }
        }
        for (id, played, text) in to_cut {
            self.truncate(id, played, text);
        }
        if self.floor.lock().turn_active {
            self.cut_turn = Some(heard);
        }
    }

    /// The host's `playback.interrupted{itemId, playedMs}`: within
    /// [`REPORT_WITHIN`] of a barge-in it says what was heard of a cut
    /// item better than the server's estimate, and the stored answer is
    /// truncated to it (never beyond what was sent).
    pub(super) fn host_played(&mut self, id: &str, played_ms: u64) {
        let now = Instant::now();
        self.cuts.retain(|c| c.until > now);
        // One report per cut item: a later one about it is ignored.
        let Some(at) = self.cuts.iter().position(|c| c.id == id) else {
            return;
        };
        let c = self.cuts.swap_remove(at);
        let played = played_ms.min(c.sent_ms);
        let text = c.delivered.played_prefix(played);
        if text.trim() != c.stored_text.trim() {
            self.truncate(c.id, played, text);
        }
    }

    /// Cut stored answer `id` to `content`, after every cut asked before
    /// (one task applies them in order, so the last asked is what stays).
    fn truncate(&mut self, id: String, played_ms: u64, content: String) {
        let cut = Truncation {
            id,
            played_ms,
            content,
        };
        let sender = self.truncations.get_or_insert_with(|| {
            let (tx, mut rx) = mpsc::unbounded_channel::<Truncation>();
            let (rt, ctx) = (self.inner.clone(), self.ctx.clone());
            self.inner.tasks.spawn(async move {
                while let Some(t) = rx.recv().await {
                    truncate_stored(&rt, &ctx, t).await;
                }
            });
            tx
        });
        let _ = sender.send(cut);
    }
}

/// A stored answer to cut to `content`, what was heard after `played_ms`.
pub(super) struct Truncation {
    id: String,
    played_ms: u64,
    content: String,
}

/// Cut a stored answer and record `message.truncated`.
async fn truncate_stored(rt: &Arc<Inner>, ctx: &Arc<SessionCtx>, t: Truncation) {
    let Truncation {
        id,
        played_ms,
        content,
    } = t;
    let deadline = Instant::now() + STORED_WITHIN;
    loop {
        let amended = rt
            .amend_message(ctx, &id, |m| {
                m.content.clone_from(&content);
                m.interrupted = true;
            })
            .await;
        match amended {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Ok(None) => {
                tracing::warn!(message = %id, "a cut answer was never stored; not truncated");
                return;
            }
            Err(e) => {
                tracing::warn!(error = %e, "truncating a cut answer failed");
                return;
            }
        }
    }
    let event = MessageTruncated {
        message_id: id.clone(),
        item_id: id,
        played_ms,
        content,
    };
    if let Err(e) = ctx.events.emit(event.into()).await {
        tracing::warn!(error = %e, "recording message.truncated failed");
    }
}
