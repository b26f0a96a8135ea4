//! Text-to-speech behind one trait (design §4(b), §4(e)): a [`TtsStream`]
//! speaks one item, chunk by chunk as the chunker releases them, and
//! delivers its audio as [`TtsEvent`]s in chunk order on the receiver
//! [`open_tts`] returned. One module per dialect: [`openai`] (a request
//! per chunk, two in flight), [`elevenlabs`] (one `stream-input` socket
//! per item), [`espeak`] (a local process per chunk, under the server's
//! [`espeak::EspeakLimiter`]); [`crate::mock`] serves test mode.

pub mod elevenlabs;
pub mod espeak;
pub mod openai;
pub(crate) mod pcm;
pub(crate) mod pipeline;

use bytes::Bytes;
use tokio::sync::mpsc;

use crate::config::{MAX_CHUNK_CHARS, TtsConfig, TtsDialect};
use crate::error::Scrub;
use crate::{Result, SpeechError};

/// How many events wait for the engine before the provider side waits.
pub const TTS_EVENT_CAPACITY: usize = 256;

/// One released chunk of an item's text (§4(e)), at most
/// [`MAX_CHUNK_CHARS`] characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TtsChunk {
    pub text: String,
}

impl TtsChunk {
    pub fn new(text: impl Into<String>) -> Self {
        Self { text: text.into() }
    }
}

/// One character's place in the audio of its [`TtsEvent::Audio`]:
/// `(char, start_ms, duration_ms)`, relative to the start of that event's
/// `pcm`.
pub type CharTiming = (char, u32, u32);

/// What a TTS stream produced. Chunks are numbered from 0 in push order;
/// all audio of chunk `n` comes before any of chunk `n + 1`. The stream
/// ends with `Done` (after `finish`, every chunk done) or with `Error`
/// (nothing follows it: the item is cut where its audio stopped).
#[derive(Debug, Clone, PartialEq)]
pub enum TtsEvent {
    /// PCM16 mono little-endian at `rate` Hz (the provider's: 24 000 for
    /// OpenAI `pcm`, the WAV header's, ElevenLabs' `pcm_<rate>`, 22 050
    /// for espeak); an even number of bytes.
    Audio {
        chunk: usize,
        pcm: Bytes,
        rate: u32,
        /// ElevenLabs `alignment`, relative to this `pcm`.
        align: Option<Vec<CharTiming>>,
    },
    /// All audio of this chunk was delivered.
    ChunkDone {
        chunk: usize,
    },
    /// All chunks are done and no more will come.
    Done,
    Error {
        code: String,
        message: String,
    },
}

/// One spoken item.
#[async_trait::async_trait]
pub trait TtsStream: Send {
    /// Speak this chunk after the ones pushed before. Refused after
    /// `finish`, after an `Error`, or beyond [`MAX_CHUNK_CHARS`].
    async fn push(&mut self, chunk: TtsChunk) -> Result<()>;
    /// No more chunks: ElevenLabs EOS; `Done` follows the last chunk.
    async fn finish(&mut self) -> Result<()>;
    /// Stop now: the ElevenLabs socket is closed, OpenAI requests are
    /// aborted, espeak is killed. No event follows. Dropping the stream
    /// does the same.
    async fn cancel(&mut self);
}

/// Open a stream for one item. ElevenLabs connects and sends its BOS here
/// (so the engine can open the next item's socket early); the others
/// contact nothing until the first chunk.
pub async fn open_tts(cfg: &TtsConfig) -> Result<(Box<dyn TtsStream>, mpsc::Receiver<TtsEvent>)> {
    let scrub = Scrub::new(cfg.api_key.as_deref());
    let (events, receiver) = mpsc::channel(TTS_EVENT_CAPACITY);
    let stream: Box<dyn TtsStream> = match cfg.dialect {
        TtsDialect::OpenAi => Box::new(scrub.result(openai::open(cfg, events, scrub.clone()))?),
        TtsDialect::ElevenLabs => Box::new(
            scrub.result(elevenlabs::ElevenLabsTts::connect(cfg, events, scrub.clone()).await)?,
        ),
        TtsDialect::Espeak => Box::new(espeak::open(cfg, events)?),
        TtsDialect::Mock => Box::new(crate::mock::open_tts(cfg.sample_rate, events)?),
    };
    Ok((stream, receiver))
}

/// A chunk's text, refused when too long.
pub(crate) fn check_chunk(chunk: &TtsChunk) -> Result<()> {
    let chars = chunk.text.chars().count();
    if chars > MAX_CHUNK_CHARS {
        return Err(SpeechError::TooLarge(format!(
            "a chunk of {chars} characters exceeds {MAX_CHUNK_CHARS}"
        )));
    }
    Ok(())
}

/// An error as the stream's last event.
pub(crate) fn error_event(e: &SpeechError) -> TtsEvent {
    TtsEvent::Error {
        code: e.code(),
        message: e.to_string(),
    }
}
