//! The voice pipeline's speech side (R-RT-8, `design/voice-pipeline.md`):
//! speech-to-text and text-to-speech behind two traits with one module
//! per provider dialect, and the IO-free parts of a voice turn — the
//! chunker that releases text to TTS, the played prefix of an interrupted
//! answer, voice activity and turn-taking, spoken askUser questions and
//! answers, WAV framing. The runtime's voice engine drives them.

pub mod check;
pub mod chunker;
pub mod config;
mod error;
mod http;
pub mod mock;
pub mod prefix;
pub mod stt;
pub mod tts;
pub mod turn_taking;
pub mod vad;
pub mod voice_ask;
pub mod wav;
mod ws;

pub use config::{
    AddressPolicy, EspeakAccess, SttConfig, SttDialect, TtsConfig, TtsDialect, TtsFormat,
    VoiceSettings, http_client,
};
pub use error::{Result, SpeechError};
pub use stt::{SttEvent, SttStream, connect_stt};
pub use tts::espeak::{EspeakLimiter, EspeakPermit};
pub use tts::{CharTiming, TtsChunk, TtsEvent, TtsStream, open_tts};
