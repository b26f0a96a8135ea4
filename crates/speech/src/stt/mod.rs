//! Speech-to-text behind one trait (design §4(b)): [`SttStream`] takes
//! PCM16 mono at the interface's rate and says what it heard as
//! [`SttEvent`]s on the receiver [`connect_stt`] returned. One module per
//! dialect: [`openai`] (a batch upload per utterance) and [`deepgram`] (a
//! streaming socket per session); [`crate::mock`] serves test mode.

pub mod deepgram;
pub mod openai;

use tokio::sync::mpsc;

use crate::config::{SttConfig, SttDialect};
use crate::error::Scrub;
use crate::{Result, SpeechError};

/// How many events wait for the engine before the provider side waits
/// (interim results are dropped instead).
pub const STT_EVENT_CAPACITY: usize = 256;

/// What a speech-to-text provider said. Texts are bounded by
/// [`crate::config::MAX_TRANSCRIPT_BYTES`] and never carry the API key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SttEvent {
    /// A streaming provider's provisional text of the current segment.
    Interim { text: String },
    /// A finalized segment (Deepgram `is_final`) or a whole utterance
    /// (OpenAI, mock: `speech_final` and `from_finalize` both true). The
    /// text may be empty (silence, or `Finalize` with nothing pending).
    Final {
        text: String,
        /// Deepgram's endpointing found the end of the speech.
        speech_final: bool,
        /// The answer to [`SttStream::finalize`].
        from_finalize: bool,
    },
    /// Deepgram `SpeechStarted` (`vad_events=true`).
    SpeechStarted,
    /// Deepgram `UtteranceEnd` (`utterance_end_ms`).
    UtteranceEnd,
    /// `fatal`: the connection is gone and [`SttEvent::Closed`] follows.
    /// OpenAI: one per failed upload (the utterance is lost), not fatal.
    Error {
        code: String,
        message: String,
        fatal: bool,
    },
    /// Nothing follows.
    Closed,
}

/// One STT connection: one per session (Deepgram) or reused for each
/// utterance (OpenAI, mock).
#[async_trait::async_trait]
pub trait SttStream: Send {
    /// PCM16 mono little-endian at the configured `sample_rate`.
    async fn audio(&mut self, pcm16: &[u8]) -> Result<()>;
    /// The utterance ended. Deepgram: `Finalize` (its `from_finalize`
    /// result may not come on an empty buffer; wait at most 1 s). OpenAI,
    /// mock: the buffered utterance is transcribed; exactly one `Final`
    /// (empty when nothing was buffered) or `Error` answers each call, in
    /// order, and the next audio starts a new utterance.
    async fn finalize(&mut self) -> Result<()>;
    /// Deepgram `KeepAlive` (also sent by itself after
    /// [`SttConfig::keep_alive`] without a frame); a no-op elsewhere.
    async fn keep_alive(&mut self) -> Result<()>;
    /// Deepgram `CloseStream` (the provider flushes, sends `Metadata` and
    /// closes); OpenAI: uploads already finalized still finish. `Closed`
    /// follows. Dropping the stream instead aborts everything at once.
    async fn close(&mut self) -> Result<()>;
}

/// Open an STT stream. Deepgram connects (and fails here on a refused
/// handshake); OpenAI and the mock contact nothing until `finalize`.
pub async fn connect_stt(
    cfg: &SttConfig,
) -> Result<(Box<dyn SttStream>, mpsc::Receiver<SttEvent>)> {
    if cfg.sample_rate == 0 || cfg.sample_rate > 192_000 {
        return Err(SpeechError::Config(format!(
            "the sample rate {} is not supported",
            cfg.sample_rate
        )));
    }
    let scrub = Scrub::new(cfg.api_key.as_deref());
    let (events, receiver) = mpsc::channel(STT_EVENT_CAPACITY);
    let stream: Box<dyn SttStream> = match cfg.dialect {
        SttDialect::OpenAi => Box::new(openai::OpenAiStt::new(cfg, events, scrub.clone())?),
        SttDialect::Deepgram => Box::new(
            scrub.result(deepgram::DeepgramStt::connect(cfg, events, scrub.clone()).await)?,
        ),
        SttDialect::Mock => Box::new(crate::mock::MockStt::new(cfg.sample_rate, events)),
    };
    Ok((stream, receiver))
}

/// A transcript, refused when longer than the bound.
pub(crate) fn bounded_transcript(text: String) -> Result<String> {
    if text.len() > crate::config::MAX_TRANSCRIPT_BYTES {
        return Err(SpeechError::TooLarge(format!(
            "a transcript of {} bytes exceeds {} bytes",
            text.len(),
            crate::config::MAX_TRANSCRIPT_BYTES
        )));
    }
    Ok(text)
}
