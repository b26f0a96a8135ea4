//! One spoken item of a voice engine (design `voice-pipeline.md` §4(d),
//! §4(e)): its chunker, the TTS stream speaking it, its chunks in audio
//! time (for the played prefix after a barge-in), and what the host has
//! been sent of it. Also the floor the speaker and the listener share:
//! until when the assistant is heard, and whether a turn runs.

use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;
use rtc_realtime::resample::Resampler;
use rtc_session::step_tap::StepStored;
use rtc_speech::chunker::Chunker;
use rtc_speech::prefix::{ChunkAudio, SpokenItem};
use rtc_speech::{TtsEvent, TtsStream};
use tokio::sync::{mpsc, oneshot};

/// What the speaker tells the listener (design §4(d) "still playing").
#[derive(Debug, Default)]
pub(super) struct FloorState {
    /// The assistant's audio plays until then (the server's estimate).
    pub playing_until: Option<Instant>,
    /// A turn runs (its model thinks or its tools run).
    pub turn_active: bool,
    /// A step's tool calls run (between its end and the next step).
    pub tools_running: bool,
    /// The user spoke while tools ran: the turn is cancelled when its next
    /// model step starts, so started calls finish and are stored (§4(d)).
    pub cancel_next_step: bool,
}

pub(super) type Floor = Arc<Mutex<FloorState>>;

/// One spoken item.
pub(super) struct Item {
    pub id: String,
    pub chunker: Chunker,
    /// Text held until the step ends (`skipTurn`).
    pub held: String,
    pub tts: Option<(Box<dyn TtsStream>, mpsc::Receiver<TtsEvent>)>,
    pub resampler: Option<(u32, Resampler)>,
    /// No more text comes.
    pub ended: bool,
    /// Answered once its audio has all been sent.
    pub on_done: Option<oneshot::Sender<StepStored>>,
    /// Whether its text is recorded as `message.delta`s (a step's answer).
    pub deltas: bool,
    /// Its chunks in audio time; `tts_chunks[n]` is the index in
    /// `spoken.chunks` of the n-th chunk given to TTS.
    pub spoken: SpokenItem,
    pub tts_chunks: Vec<usize>,
    /// When its first frame was sent, and how much was sent.
    pub t0: Option<Instant>,
    pub sent_ms: u64,
    /// The TTS said it is done (its frames may still wait to be sent).
    pub tts_done: bool,
    /// The TTS failed: nothing more of it is spoken or recorded.
    pub failed: bool,
    /// It was stored whole while still being spoken (its step had tool
    /// calls): a barge-in truncates the stored message.
    pub stored: bool,
}

impl Item {
    pub fn new(id: String, deltas: bool) -> Self {
        Self {
            id,
            chunker: Chunker::new(),
            held: String::new(),
            tts: None,
            resampler: None,
            ended: false,
            on_done: None,
            deltas,
            spoken: SpokenItem::default(),
            tts_chunks: Vec::new(),
            t0: None,
            sent_ms: 0,
            tts_done: false,
            failed: false,
            stored: false,
        }
    }

    /// A released chunk's text; `to_tts` when TTS speaks it.
    pub fn add_chunk(&mut self, original: &str, to_tts: bool) {
        let start = self.spoken.sent_ms();
        self.spoken.chunks.push(ChunkAudio::new(original, start));
        if to_tts {
            self.tts_chunks.push(self.spoken.chunks.len() - 1);
        }
    }

    /// Audio of the TTS's `chunk`, `ms` long.
    pub fn add_audio(&mut self, chunk: usize, ms: u64, align: &[(char, u32, u32)]) {
        if let Some(&at) = self.tts_chunks.get(chunk) {
            // Later chunks start after this one's audio.
            if let Some(c) = self.spoken.chunks.get_mut(at) {
                c.push_audio(ms, align);
            }
            let mut end = self
                .spoken
                .chunks
                .get(at)
                .map_or(0, |c| c.start_ms + c.audio_ms);
            for c in self.spoken.chunks.iter_mut().skip(at + 1) {
                c.start_ms = end;
                end = c.start_ms + c.audio_ms;
            }
        }
    }

    /// How much of it has played by `now`: what the host reported
    /// (`playback.interrupted`), else the server's estimate; never more
    /// than was sent.
    pub fn played_ms(&self, now: Instant, reported: Option<u64>) -> u64 {
        let estimate = self.t0.map_or(0, |t0| {
            u64::try_from(now.saturating_duration_since(t0).as_millis()).unwrap_or(u64::MAX)
        });
        reported.unwrap_or(estimate).min(self.sent_ms)
    }

    /// What the user heard of it after `played_ms` of its audio.
    pub fn heard(&self, played_ms: u64) -> String {
        self.delivered().played_prefix(played_ms)
    }

    /// Everything released of it so far, as the model wrote it.
    pub fn released_text(&self) -> String {
        self.spoken.chunks.iter().map(|c| c.text.as_str()).collect()
    }

    /// Its chunks up to the last one TTS gave audio for (a chunk with no
    /// audio after it was not said, where the prefix would count it as a
    /// silent chunk).
    pub fn delivered(&self) -> SpokenItem {
        let last = self.spoken.chunks.iter().rposition(|c| c.audio_ms > 0);
        SpokenItem {
            chunks: last.map_or_else(Vec::new, |l| self.spoken.chunks[..=l].to_vec()),
        }
    }

    /// Every frame sent, the TTS done, no more text: nothing left to say.
    pub fn finished(&self) -> bool {
        self.ended && (self.tts.is_none() || self.tts_done)
    }
}

/// How a step's spoken answer is stored.
pub(super) fn spoken(id: &str) -> StepStored {
    StepStored {
        source: Some("audio".to_owned()),
        item_id: Some(id.to_owned()),
        content: None,
        interrupted: false,
    }
}

/// How a step cut by the user is stored: what was heard.
pub(super) fn cut(id: &str, heard: String) -> StepStored {
    StepStored {
        content: Some(heard),
        interrupted: true,
        ..spoken(id)
    }
}
