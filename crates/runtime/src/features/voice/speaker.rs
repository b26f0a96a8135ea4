//! The speaking side of a voice engine (design `voice-pipeline.md` §4(d),
//! §4(e), §4(f)): the session's step tap hands it each model step's text;
//! the chunker releases chunks to one TTS stream per item (a step's answer
//! or a fixed line); released text is recorded as `message.delta{source:
//! "audio"}`; the audio goes to the host resampled to its rate, in
//! `audio.delta` frames of at most 100 ms, paced at real time with a small
//! lead, items one after another. A step of an assistant with `skipTurn`
//! is held until its end and dropped when it called `skipTurn` (absolute
//! silence). A barge-in stops the audio at once, cancels the TTS streams,
//! and stores of each cut answer only what the user heard.

mod barge_in;
mod spare;

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use rtc_protocol::{
    AudioDelta, BuiltInToolName, EphemeralFrame, EventBody, MessageDelta, MessageRole,
    SpeechFiller, SpeechToolFiller,
};
use rtc_realtime::resample::Resampler;
use rtc_session::step_tap::{StepStored, TurnNote};
use rtc_speech::chunker::Chunk;
use rtc_speech::prefix::PLAYBACK_MARGIN_MS;
use rtc_speech::{TtsChunk, TtsConfig, TtsEvent};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::item::{Floor, Item, cut, spoken};
use super::latency::Timings;
use super::sleep_until_some;
pub(super) use super::tap::{Cmd, Tap};
use crate::Inner;
use crate::session::SessionCtx;

/// How far ahead of real time audio is sent (the host's buffer).
const LEAD: Duration = Duration::from_millis(200);
/// How long a barge-in waits for the socket to take the frames sent.
const FLUSH_WITHIN: Duration = Duration::from_millis(200);

/// How a speaker speaks.
pub(super) struct SpeakerOptions {
    /// The host's `outputRate`.
    pub output_rate: u32,
    /// A step's text is held until its end (`skipTurn`).
    pub hold: bool,
    /// Said once per turn while tools run long.
    pub filler: Option<SpeechToolFiller>,
}

/// What waits to be sent to the host, in order.
enum Out {
    Frame {
        item: String,
        pcm: Vec<u8>,
    },
    /// The item's audio is all sent.
    End(String),
}

/// The speaker of one voice host.
pub(super) struct Speaker {
    inner: Arc<Inner>,
    ctx: Arc<SessionCtx>,
    /// The host's `playback.interrupted` reports: `(itemId, playedMs)`.
    played: mpsc::Receiver<(String, u64)>,
    frames: mpsc::Sender<EphemeralFrame>,
    tts: TtsConfig,
    /// The next item's TTS stream, opened ahead.
    spare: spare::SpareTts,
    output_rate: u32,
    hold: bool,
    filler: Option<SpeechToolFiller>,
    /// When the filler is said if the tools still run; `None` once said
    /// this turn or while no tools run.
    filler_due: Option<Instant>,
    filler_said: bool,
    floor: Floor,
    items: VecDeque<Item>,
    outbox: VecDeque<Out>,
    /// When everything sent so far has played (the server's estimate).
    play_end: Option<Instant>,
    timings: Timings,
    /// The user cut in during this turn: what they heard of each cut step.
    cut_turn: Option<HashMap<String, String>>,
    /// Items cut lately, for the host's report of what it played.
    cuts: Vec<barge_in::CutItem>,
    /// The task cutting stored answers in order, once one was cut.
    truncations: Option<mpsc::UnboundedSender<barge_in::Truncation>>,
}

impl Speaker {
    pub fn new(
        (inner, ctx): (Arc<Inner>, Arc<SessionCtx>),
        played: mpsc::Receiver<(String, u64)>,
        frames: mpsc::Sender<EphemeralFrame>,
        tts: TtsConfig,
        options: SpeakerOptions,
        floor: Floor,
    ) -> Self {
        Self {
            inner,
            ctx,
            played,
            frames,
            tts,
            spare: spare::SpareTts::default(),
            output_rate: options.output_rate,
            hold: options.hold,
            filler: options.filler,
            filler_due: None,
            filler_said: false,
            floor,
            items: VecDeque::new(),
            outbox: VecDeque::new(),
            play_end: None,
            timings: Timings::default(),
            cut_turn: None,
            cuts: Vec::new(),
            truncations: None,
        }
    }

    /// Run until cancelled or the tap is gone; whatever is still speaking
    /// is cancelled then.
    pub async fn run(mut self, mut cmds: mpsc::UnboundedReceiver<Cmd>, cancel: CancellationToken) {
        loop {
            let due = tokio::time::Instant::from_std(self.due());
            tokio::select! {
                () = cancel.cancelled() => break,
                cmd = cmds.recv() => {
                    let Some(cmd) = cmd else { break };
                    self.command(cmd).await;
                }
                ev = head_event(&mut self.items) => self.tts_event(ev).await,
                Some((id, ms)) = self.played.recv() => self.host_played(&id, ms),
                () = sleep_until_some(self.filler_due.map(tokio::time::Instant::from_std)) => {
                    self.filler_time().await;
                }
                () = tokio::time::sleep_until(due), if !self.outbox.is_empty() => {
                    if !self.send_next().await {
                        break;
                    }
                }
            }
        }
        self.floor.lock().playing_until = None;
        self.spare.close().await;
        for mut item in self.items.drain(..) {
            if let Some((mut tts, _)) = item.tts.take() {
                tts.cancel().await;
            }
        }
    }

    /// When the next thing in the outbox may go.
    fn due(&self) -> Instant {
        let now = Instant::now();
        match (self.outbox.front(), self.play_end) {
            (Some(Out::Frame { .. }), Some(end)) => end.checked_sub(LEAD).unwrap_or(now),
            _ => now,
        }
    }

    fn item(&mut self, id: &str, deltas: bool) -> &mut Item {
        let at = match self.items.iter().position(|i| i.id == id) {
            Some(at) => at,
            None => {
                self.items.push_back(Item::new(id.to_owned(), deltas));
                self.items.len() - 1
            }
        };
        &mut self.items[at]
    }

    async fn command(&mut self, cmd: Cmd) {
        match cmd {
            Cmd::StepStarted(at) => {
                // The tools of the step before, if any, are done.
                self.filler_due = None;
                self.timings.step_started(at);
                self.spare.prepare(&self.tts);
                let cancel = {
                    let mut floor = self.floor.lock();
                    floor.turn_active = true;
                    floor.tools_running = false;
                    std::mem::take(&mut floor.cancel_next_step)
                };
                if cancel {
                    // The user spoke while the tools ran: no follow-up step.
                    let ctx = self.ctx.clone();
                    tokio::spawn(async move {
                        ctx.cancel_turn().await;
                    });
                }
            }
            Cmd::Delta { id, text } => {
                if self.timings.zero.is_some() {
                    self.timings.first_token.get_or_insert_with(Instant::now);
                }
                if self.cut_turn.is_some() {
                    return;
                }
                let hold = self.hold;
                let item = self.item(&id, true);
                if hold {
                    item.held.push_str(&text);
                    return;
                }
                let chunks = item.chunker.push(&text);
                self.release(&id, chunks).await;
            }
            Cmd::StepEnded { id, calls, reply } => self.step_ended(id, &calls, reply).await,
            Cmd::Abandoned { id, reply } => {
                let heard = self.cut_turn.as_ref().and_then(|c| c.get(&id).cloned());
                self.drop_item(&id).await;
                let _ = reply.send(heard.map(|h| cut(&id, h)));
            }
            Cmd::Say { id, text, reply } => {
                let item = self.item(&id, false);
                item.on_done = Some(reply);
                let mut chunks = item.chunker.push(&text);
                chunks.extend(item.chunker.finish());
                self.release(&id, chunks).await;
                self.end_item(&id).await;
            }
            Cmd::Fixed { id, text } => {
                let item = self.item(&id, false);
                let mut chunks = item.chunker.push(&text);
                chunks.extend(item.chunker.finish());
                self.release(&id, chunks).await;
                self.end_item(&id).await;
            }
            Cmd::TurnEnding(reply) => {
                let reason = self.cut_turn.take().map(|_| "barge_in".to_owned());
                self.filler_due = None;
                self.filler_said = false;
                {
                    let mut floor = self.floor.lock();
                    floor.turn_active = false;
                    floor.tools_running = false;
                    floor.cancel_next_step = false;
                }
                let note = TurnNote {
                    latency: self.timings.take(),
                    reason,
                };
                let _ = reply.send(note);
            }
            Cmd::Heard {
                speech_end,
                decided,
                transcribed,
            } => {
                self.timings.heard(speech_end, decided, transcribed);
                self.spare.prepare(&self.tts);
            }
            Cmd::BargeIn { started, ack } => {
                self.barge_in(started).await;
                let _ = ack.send(());
            }
        }
    }

    async fn step_ended(
        &mut self,
        id: String,
        calls: &[String],
        reply: oneshot::Sender<StepStored>,
    ) {
        if let Some(cuts) = &self.cut_turn {
            // The user cut in: what they heard of it, or nothing.
            let heard = cuts.get(&id).cloned().unwrap_or_default();
            self.drop_item(&id).await;
            let _ = reply.send(cut(&id, heard));
            return;
        }
        let skip = BuiltInToolName::SkipTurn.as_str();
        if calls.iter().any(|c| c == skip) {
            // Absolute silence: nothing of the step is spoken or stored.
            self.drop_item(&id).await;
            let silent = StepStored {
                content: Some(String::new()),
                ..StepStored::default()
            };
            let _ = reply.send(silent);
            return;
        }
        let item = self.item(&id, true);
        let held = std::mem::take(&mut item.held);
        let mut chunks = item.chunker.push(&held);
        chunks.extend(item.chunker.finish());
        self.release(&id, chunks).await;
        if calls.is_empty() {
            if let Some(item) = self.items.iter_mut().find(|i| i.id == id) {
                item.on_done = Some(reply);
            } else {
                let _ = reply.send(spoken(&id));
            }
        } else {
            // The calls run while the text is spoken; it is stored whole
            // now, and truncated if the user cuts in.
            self.floor.lock().tools_running = true;
            if let Some(item) = self.items.iter_mut().find(|i| i.id == id) {
                item.stored = true;
            }
            let _ = reply.send(spoken(&id));
            if let Some(f) = &self.filler
                && !self.filler_said
            {
                self.filler_due =
                    Some(Instant::now() + Duration::from_millis(u64::from(f.after_ms)));
            }
        }
        self.end_item(&id).await;
    }

    /// No more text for `id`: its TTS finishes; an item with nothing to
    /// say is done at once.
    async fn end_item(&mut self, id: &str) {
        let Some(item) = self.items.iter_mut().find(|i| i.id == id) else {
            return;
        };
        item.ended = true;
        match &mut item.tts {
            Some((tts, _)) if !item.tts_done => {
                if let Err(e) = tts.finish().await {
                    tracing::warn!(error = %e, "finishing a TTS stream failed");
                }
            }
            _ => {
                item.tts_done = true;
                self.outbox.push_back(Out::End(id.to_owned()));
            }
        }
    }

    async fn drop_item(&mut self, id: &str) {
        let at = self.items.iter().position(|i| i.id == id);
        let item = at.and_then(|at| self.items.remove(at));
        if let Some(mut item) = item
            && let Some((mut tts, _)) = item.tts.take()
        {
            tts.cancel().await;
        }
        self.outbox.retain(|o| match o {
            Out::Frame { item, .. } | Out::End(item) => item != id,
        });
    }

    /// Tools ran `afterMs`: the filler is said once nothing plays.
    async fn filler_time(&mut self) {
        let now = Instant::now();
        let playing = self.floor.lock().playing_until.filter(|t| *t > now);
        if let Some(until) = playing {
            self.filler_due = Some(until);
            return;
        }
        self.filler_due = None;
        let Some(filler) = self.filler.clone() else {
            return;
        };
        self.filler_said = true;
        let id = rtc_store::new_id("fill");
        let event = SpeechFiller {
            item_id: id.clone(),
            text: filler.text.clone(),
        };
        if let Err(e) = self.ctx.events.emit(event.into()).await {
            tracing::warn!(error = %e, "recording the filler failed");
        }
        let item = self.item(&id, false);
        let mut chunks = item.chunker.push(&filler.text);
        chunks.extend(item.chunker.finish());
        self.release(&id, chunks).await;
        self.end_item(&id).await;
    }

    /// Send released chunks to the item's TTS and record their text.
    async fn release(&mut self, id: &str, chunks: Vec<Chunk>) {
        for chunk in chunks {
            let Some(at) = self.items.iter().position(|i| i.id == id) else {
                return;
            };
            if self.items[at].failed {
                return;
            }
            let to_tts = !chunk.is_silent();
            self.items[at].add_chunk(&chunk.original, to_tts);
            if to_tts {
                if self.items[at].tts.is_none() {
                    match self.spare.take(&self.tts).await {
                        Ok(opened) => self.items[at].tts = Some(opened),
                        Err(e) => {
                            tts_failed(&self.ctx, &e.to_string()).await;
                            return;
                        }
                    }
                }
                if self.timings.zero.is_some() {
                    self.timings.first_chunk.get_or_insert_with(Instant::now);
                }
                if let Some((tts, _)) = &mut self.items[at].tts
                    && let Err(e) = tts.push(TtsChunk::new(chunk.spoken.clone())).await
                {
                    tts_failed(&self.ctx, &e.to_string()).await;
                    return;
                }
            }
            if self.items[at].deltas && !chunk.original.is_empty() {
                let delta = MessageDelta {
                    message_id: id.to_owned(),
                    delta: chunk.original,
                    source: Some("audio".to_owned()),
                    role: Some(MessageRole::Assistant),
                    item_id: Some(id.to_owned()),
                };
                if let Err(e) = self.ctx.events.emit(delta.into()).await {
                    tracing::warn!(error = %e, "recording released text failed");
                }
            }
        }
    }

    /// One event of the TTS of the item being voiced.
    async fn tts_event(&mut self, ev: Option<TtsEvent>) {
        let output = self.output_rate;
        let Some(item) = self.items.iter_mut().find(|i| voicing(i)) else {
            return;
        };
        match ev {
            Some(TtsEvent::Audio {
                chunk,
                pcm,
                rate,
                align,
            }) => {
                if self.timings.zero.is_some() {
                    self.timings
                        .first_audio_byte
                        .get_or_insert_with(Instant::now);
                }
                let resampler = match &mut item.resampler {
                    Some((r, resampler)) if *r == rate => resampler,
                    slot => &mut slot.insert((rate, Resampler::new(rate, output))).1,
                };
                let audio = resampler.process(&pcm);
                let ms = (audio.len() / 2) as u64 * 1000 / u64::from(output.max(1));
                item.add_audio(chunk, ms, align.as_deref().unwrap_or_default());
                // At most 100 ms per frame.
                let frame_bytes = usize::try_from(output / 10).unwrap_or(1600).max(1) * 2;
                for piece in audio.chunks(frame_bytes) {
                    self.outbox.push_back(Out::Frame {
                        item: item.id.clone(),
                        pcm: piece.to_vec(),
                    });
                }
            }
            Some(TtsEvent::ChunkDone { .. }) => {}
            Some(TtsEvent::Error { message, .. }) => {
                item.tts_done = true;
                item.failed = true;
                let id = item.id.clone();
                self.outbox.push_back(Out::End(id));
                tts_failed(&self.ctx, &message).await;
            }
            Some(TtsEvent::Done) | None => {
                item.tts_done = true;
                let id = item.id.clone();
                self.outbox.push_back(Out::End(id));
            }
        }
    }

    /// Send what is due; `false` when the host is gone.
    async fn send_next(&mut self) -> bool {
        match self.outbox.pop_front() {
            Some(Out::Frame { item, pcm }) => {
                let now = Instant::now();
                let samples = (pcm.len() / 2) as u64;
                let ms =
                    Duration::from_micros(samples * 1_000_000 / u64::from(self.output_rate.max(1)));
                let end = self.play_end.filter(|e| *e > now).unwrap_or(now) + ms;
                self.play_end = Some(end);
                self.floor.lock().playing_until =
                    Some(end + Duration::from_millis(PLAYBACK_MARGIN_MS));
                if let Some(i) = self.items.iter_mut().find(|i| i.id == item) {
                    i.t0.get_or_insert(now);
                    i.sent_ms += u64::try_from(ms.as_millis()).unwrap_or(0);
                }
                let frame = EphemeralFrame::AudioDelta(AudioDelta {
                    item_id: item,
                    audio: base64::engine::general_purpose::STANDARD.encode(&pcm),
                    rate: self.output_rate,
                });
                if self.frames.send(frame).await.is_err() {
                    return false;
                }
                if self.timings.zero.is_some() {
                    self.timings
                        .first_audio_out
                        .get_or_insert_with(Instant::now);
                }
            }
            Some(Out::End(id)) => {
                let at = self.items.iter().position(|i| i.id == id && i.finished());
                if let Some(mut item) = at.and_then(|at| self.items.remove(at))
                    && let Some(reply) = item.on_done.take()
                {
                    // After a TTS failure, what was sent is what was said.
                    let stored = if item.failed {
                        cut(&item.id, item.delivered().played_prefix(u64::MAX))
                    } else {
                        spoken(&item.id)
                    };
                    let _ = reply.send(stored);
                }
            }
            None => {}
        }
        true
    }
}

/// Whether `item`'s TTS is the one whose audio comes next.
fn voicing(item: &Item) -> bool {
    !item.tts_done
}

/// The next event of the TTS of the first item still being voiced;
/// pending while that item has no TTS yet.
async fn head_event(items: &mut VecDeque<Item>) -> Option<TtsEvent> {
    match items
        .iter_mut()
        .find(|i| voicing(i))
        .and_then(|i| i.tts.as_mut())
    {
        Some((_, rx)) => rx.recv().await,
        None => std::future::pending().await,
    }
}

/// Record that the TTS failed (the session goes on).
async fn tts_failed(ctx: &SessionCtx, message: &str) {
    let error = EventBody::error("tts_failed", message.to_owned());
    if let Err(e) = ctx.events.emit(error).await {
        tracing::warn!(error = %e, "recording a TTS failure failed");
    }
}
