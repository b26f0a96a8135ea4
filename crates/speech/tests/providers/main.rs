//! The speech dialect clients against the dialect-accurate mocks of
//! `rtc-testkit` (design `voice-pipeline.md` §4(i)) and the real
//! espeak-ng: request shapes, audio lengths, ordering, keep-alive, the
//! ends of streams, failures mapped to errors, and the API key never
//! shown. One test binary, one module per dialect.

mod check;
mod deepgram;
mod elevenlabs;
mod espeak;
mod guard;
mod openai_stt;
mod openai_tts;

use std::time::Duration;

use rtc_speech::{SttEvent, TtsChunk, TtsConfig, TtsEvent, open_tts};
use tokio::sync::mpsc;

/// How long a test waits for one event.
pub const WAIT: Duration = Duration::from_secs(10);

/// The next event, or a panic after [`WAIT`].
pub async fn next<T: std::fmt::Debug>(events: &mut mpsc::Receiver<T>) -> T {
    match tokio::time::timeout(WAIT, events.recv()).await {
        Ok(Some(event)) => event,
        Ok(None) => panic!("the event channel closed"),
        Err(_) => panic!("no event within {WAIT:?}"),
    }
}

/// STT events until (and with) the first `Final`, `Error` or `Closed`.
pub async fn until_final(events: &mut mpsc::Receiver<SttEvent>) -> Vec<SttEvent> {
    let mut seen = Vec::new();
    loop {
        let event = next(events).await;
        let end = matches!(
            event,
            SttEvent::Final { .. } | SttEvent::Error { .. } | SttEvent::Closed
        );
        seen.push(event);
        if end {
            return seen;
        }
    }
}

/// What a TTS stream produced.
#[derive(Debug, Default)]
pub struct Spoken {
    /// Audio bytes per chunk.
    pub bytes: Vec<usize>,
    /// The chunk of each audio event, in order.
    pub order: Vec<usize>,
    /// `ChunkDone`s in order.
    pub done: Vec<usize>,
    pub rates: Vec<u32>,
    pub aligned_chars: usize,
    pub finished: bool,
    pub error: Option<(String, String)>,
    pub pcm: Vec<u8>,
}

impl Spoken {
    /// Milliseconds of audio of `chunk` at `rate`.
    pub fn ms(&self, chunk: usize, rate: u32) -> u64 {
        rtc_testkit::pcm_ms(self.bytes.get(chunk).copied().unwrap_or(0), rate)
    }
}

/// Collect events until `Done` or `Error`.
pub async fn collect(events: &mut mpsc::Receiver<TtsEvent>) -> Spoken {
    let mut spoken = Spoken::default();
    loop {
        match next(events).await {
            TtsEvent::Audio {
                chunk,
                pcm,
                rate,
                align,
            } => {
                assert_eq!(pcm.len() % 2, 0, "audio comes in whole samples");
                if spoken.bytes.len() <= chunk {
                    spoken.bytes.resize(chunk + 1, 0);
                }
                spoken.bytes[chunk] += pcm.len();
                spoken.order.push(chunk);
                spoken.rates.push(rate);
                spoken.aligned_chars += align.map_or(0, |a| a.len());
                spoken.pcm.extend_from_slice(&pcm);
            }
            TtsEvent::ChunkDone { chunk } => spoken.done.push(chunk),
            TtsEvent::Done => {
                spoken.finished = true;
                return spoken;
            }
            TtsEvent::Error { code, message } => {
                spoken.error = Some((code, message));
                return spoken;
            }
        }
    }
}

/// Speak `chunks` as one item and collect what came back.
pub async fn speak(cfg: &TtsConfig, chunks: &[&str]) -> Spoken {
    let (mut tts, mut events) = open_tts(cfg).await.unwrap_or_else(|e| panic!("{e}"));
    for chunk in chunks {
        tts.push(TtsChunk::new(*chunk))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }
    tts.finish().await.unwrap_or_else(|e| panic!("{e}"));
    collect(&mut events).await
}

/// Audio chunk order is non-decreasing and every chunk is done once, in order.
pub fn assert_in_order(spoken: &Spoken, chunks: usize) {
    assert!(
        spoken.order.windows(2).all(|w| w[0] <= w[1]),
        "audio out of chunk order: {:?}",
        spoken.order
    );
    assert_eq!(spoken.done, (0..chunks).collect::<Vec<_>>());
}

/// `samples` up to their last sample louder than 300.
pub fn trim_quiet_end(pcm: &[u8]) -> Vec<u8> {
    let samples = rtc_testkit::to_samples(pcm);
    let last = samples
        .iter()
        .rposition(|s| s.unsigned_abs() > 300)
        .unwrap_or(0);
    rtc_testkit::to_pcm(&samples[..=last])
}
