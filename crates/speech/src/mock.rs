//! The built-in speech of test mode (design §4(g)): nothing is contacted.
//! TTS answers each chunk with a 440 Hz sine of 20 ms per non-whitespace
//! character at the requested rate, so the audio's length tells what was
//! spoken; STT transcribes each utterance as `[speech N ms]`.

use std::f64::consts::TAU;
use std::sync::Arc;

use bytes::Bytes;
use futures::future::BoxFuture;
use tokio::sync::mpsc;

use crate::stt::{SttEvent, SttStream};
use crate::tts::TtsEvent;
use crate::tts::pipeline::{Piece, Pipelined, Source};
use crate::{Result, SpeechError};

/// The mock TTS tone.
pub const TONE_HZ: f64 = 440.0;
/// Milliseconds of tone per non-whitespace character.
pub const MS_PER_CHAR: u32 = 20;
/// The tone's peak (PCM16 scale).
pub const TONE_AMPLITUDE: f64 = 8000.0;
/// The most tone one audio event carries, in ms.
const PIECE_MS: u32 = 100;

/// How long the mock TTS speaks `text`: 20 ms per non-whitespace character.
pub fn tone_ms(text: &str) -> u32 {
    let chars = text.chars().filter(|c| !c.is_whitespace()).count();
    u32::try_from(chars)
        .unwrap_or(u32::MAX / MS_PER_CHAR)
        .saturating_mul(MS_PER_CHAR)
}

/// `ms` of the 440 Hz tone at `rate`, PCM16 little-endian.
pub fn tone(ms: u32, rate: u32) -> Vec<u8> {
    let samples = u64::from(ms) * u64::from(rate) / 1000;
    let mut out = Vec::with_capacity(usize::try_from(samples * 2).unwrap_or(0));
    for n in 0..samples {
        let t = n as f64 / f64::from(rate);
        let v = (TONE_AMPLITUDE * (TAU * TONE_HZ * t).sin()).round() as i16;
        out.extend_from_slice(&v.to_le_bytes());
    }
    out
}

/// The transcript of an utterance of `ms` milliseconds.
pub fn transcript(ms: u64) -> String {
    format!("[speech {ms} ms]")
}

struct Tone {
    rate: u32,
}

impl Source for Tone {
    fn produce(&self, text: String, out: mpsc::UnboundedSender<Piece>) -> BoxFuture<'static, ()> {
        let rate = self.rate;
        Box::pin(async move {
            let mut left = tone_ms(&text);
            while left > 0 {
                let ms = left.min(PIECE_MS);
                left -= ms;
                let pcm = Bytes::from(tone(ms, rate));
                if out.send(Piece::Audio { pcm, rate }).is_err() {
                    return;
                }
            }
            let _ = out.send(Piece::Done);
        })
    }
}

pub(crate) fn open_tts(rate: u32, events: mpsc::Sender<TtsEvent>) -> Result<Pipelined> {
    if rate == 0 || rate > 192_000 {
        return Err(SpeechError::Config(format!(
            "the mock TTS cannot speak at {rate} Hz"
        )));
    }
    let source = Arc::new(Tone { rate });
    Ok(Pipelined::start(
        source,
        1,
        events,
        crate::error::Scrub::default(),
    ))
}

/// Test mode's STT: counts the utterance's audio.
pub(crate) struct MockStt {
    rate: u32,
    bytes: u64,
    events: mpsc::Sender<SttEvent>,
    closed: bool,
}

impl MockStt {
    pub(crate) fn new(rate: u32, events: mpsc::Sender<SttEvent>) -> Self {
        Self {
            rate,
            bytes: 0,
            events,
            closed: false,
        }
    }
}

#[async_trait::async_trait]
impl SttStream for MockStt {
    async fn audio(&mut self, pcm16: &[u8]) -> Result<()> {
        if self.closed {
            return Err(SpeechError::Closed);
        }
        self.bytes += pcm16.len() as u64;
        Ok(())
    }

    async fn finalize(&mut self) -> Result<()> {
        if self.closed {
            return Err(SpeechError::Closed);
        }
        let ms = std::mem::take(&mut self.bytes) / 2 * 1000 / u64::from(self.rate);
        let text = if ms == 0 {
            String::new()
        } else {
            transcript(ms)
        };
        let event = SttEvent::Final {
            text,
            speech_final: true,
            from_finalize: true,
        };
        self.events
            .send(event)
            .await
            .map_err(|_| SpeechError::Closed)
    }

    async fn keep_alive(&mut self) -> Result<()> {
        Ok(())
    }

    async fn close(&mut self) -> Result<()> {
        if !std::mem::replace(&mut self.closed, true) {
            let _ = self.events.send(SttEvent::Closed).await;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{SttConfig, SttDialect, TtsChunk, TtsConfig, TtsDialect};

    #[tokio::test]
    async fn the_mock_tts_speaks_20_ms_per_character_at_the_rate() {
        let mut cfg = TtsConfig::new(TtsDialect::Mock, "");
        cfg.sample_rate = 16_000;
        let (mut tts, mut events) = crate::open_tts(&cfg)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        for text in ["Hello there.", "  ", "Bye!"] {
            tts.push(TtsChunk::new(text))
                .await
                .unwrap_or_else(|e| panic!("{e}"));
        }
        tts.finish().await.unwrap_or_else(|e| panic!("{e}"));
        let mut bytes = [0usize; 3];
        let mut done = Vec::new();
        while let Some(event) = events.recv().await {
            match event {
                TtsEvent::Audio {
                    chunk, pcm, rate, ..
                } => {
                    assert_eq!(rate, 16_000);
                    bytes[chunk] += pcm.len();
                }
                TtsEvent::ChunkDone { chunk } => done.push(chunk),
                TtsEvent::Done => break,
                TtsEvent::Error { message, .. } => panic!("{message}"),
            }
        }
        // 11 and 4 characters: 220 ms and 80 ms at 16 kHz, 2 bytes a sample.
        assert_eq!(bytes, [220 * 32, 0, 80 * 32]);
        assert_eq!(done, vec![0, 1, 2]);
    }

    #[tokio::test]
    async fn the_mock_stt_names_the_utterance_length() {
        let cfg = SttConfig::new(SttDialect::Mock, "");
        let (mut stt, mut events) = crate::connect_stt(&cfg)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        stt.audio(&vec![0u8; 16_000 * 2 * 3 / 2])
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        stt.finalize().await.unwrap_or_else(|e| panic!("{e}"));
        stt.finalize().await.unwrap_or_else(|e| panic!("{e}"));
        let text = |e: Option<SttEvent>| match e {
            Some(SttEvent::Final { text, .. }) => text,
            other => panic!("{other:?}"),
        };
        assert_eq!(text(events.recv().await), "[speech 1500 ms]");
        assert_eq!(text(events.recv().await), "");
    }
}
