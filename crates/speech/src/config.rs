//! What a speech connection needs (design §4(a), §4(b)): the dialect, the
//! interface's `connection` fields with the API key already revealed, the
//! outbound [`AddressPolicy`], and the bounds every provider answer is held
//! to. `Debug` never shows the key.

use std::time::Duration;

pub use rtc_tools::net_guard::AddressPolicy;

use crate::tts::espeak::EspeakLimiter;

/// The longest text one TTS chunk may carry, in characters (OpenAI's
/// `input` limit; the chunker releases at most 300).
pub const MAX_CHUNK_CHARS: usize = 4096;
/// The longest transcript accepted from a provider, in bytes.
pub const MAX_TRANSCRIPT_BYTES: usize = 64 * 1024;
/// The largest utterance uploaded to an OpenAI-compatible STT (WAV bytes;
/// OpenAI's own limit is 25 MiB).
pub const MAX_UPLOAD_BYTES: usize = 25 * 1024 * 1024;
/// The largest STT answer body read.
pub const MAX_STT_ANSWER_BYTES: usize = 1024 * 1024;
/// The most audio one TTS chunk may yield (OpenAI body, espeak output).
pub const MAX_CHUNK_AUDIO_BYTES: usize = 16 * 1024 * 1024;
/// The largest WebSocket message a provider may send (base64 audio of
/// ElevenLabs, Deepgram results).
pub const MAX_WS_MESSAGE_BYTES: usize = 4 * 1024 * 1024;

/// The speech-to-text dialects, plus the built-in mock of test mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SttDialect {
    /// `POST {url}/audio/transcriptions`, one upload per utterance.
    OpenAi,
    /// The `{url}/v1/listen` WebSocket.
    Deepgram,
    /// Test mode (§4(g)): each utterance is `[speech N ms]`; nothing is contacted.
    Mock,
}

/// The text-to-speech dialects, plus the built-in mock of test mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TtsDialect {
    /// `POST {url}/audio/speech` per chunk.
    OpenAi,
    /// The `stream-input` WebSocket, one per item.
    ElevenLabs,
    /// A local `espeak-ng` process per chunk.
    Espeak,
    /// Test mode (§4(g)): a 440 Hz sine, 20 ms per non-whitespace character.
    Mock,
}

impl SttDialect {
    /// The dialect's name in `connection.dialect` (`mock` in test mode).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
            Self::Deepgram => "deepgram",
            Self::Mock => "mock",
        }
    }
}

impl TtsDialect {
    /// The dialect's name in `connection.dialect` (`mock` in test mode).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
            Self::ElevenLabs => "elevenlabs",
            Self::Espeak => "espeak",
            Self::Mock => "mock",
        }
    }
}

/// The audio an OpenAI-compatible TTS is asked for (`response_format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TtsFormat {
    /// Raw PCM16 at 24 kHz.
    #[default]
    Pcm,
    /// A WAV whose header gives the rate (its sizes are not trusted).
    Wav,
}

impl TtsFormat {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pcm => "pcm",
            Self::Wav => "wav",
        }
    }
}

/// ElevenLabs `voice_settings` (sent in the BOS message).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct VoiceSettings {
    pub stability: Option<f64>,
    pub similarity_boost: Option<f64>,
    /// 0.7–1.2.
    pub speed: Option<f64>,
}

/// One STT connection.
#[derive(Clone)]
pub struct SttConfig {
    pub dialect: SttDialect,
    /// The base URL; the dialect appends its path (`/audio/transcriptions`
    /// or `/v1/listen`). Unused by the mock.
    pub url: String,
    /// Required for `openai`; `deepgram` defaults to `nova-3`.
    pub model: Option<String>,
    pub language: Option<String>,
    /// The rate of the PCM16 given to [`crate::SttStream::audio`].
    pub sample_rate: u32,
    /// The revealed key: `Authorization: Bearer` (openai), `Token` (deepgram).
    pub api_key: Option<String>,
    pub policy: AddressPolicy,
    /// Turn detection `stt` (deepgram): `endpointing=<ms>&utterance_end_ms=1000`.
    /// `None` leaves Deepgram's endpointing at its default.
    pub endpointing_ms: Option<u32>,
    /// Connecting and the handshake; for `openai`, each whole upload.
    pub timeout: Duration,
    /// Deepgram: a `KeepAlive` is sent after this long without a frame
    /// (design: 5 s). `None`: only [`crate::SttStream::keep_alive`] sends one.
    pub keep_alive: Option<Duration>,
    /// A shared guarded client ([`http_client`]); one is built when `None`.
    pub http: Option<reqwest::Client>,
}

impl SttConfig {
    /// Defaults: 16 kHz, no model, language or key, public addresses only,
    /// a 15 s timeout, a `KeepAlive` after 5 s of silence.
    pub fn new(dialect: SttDialect, url: impl Into<String>) -> Self {
        Self {
            dialect,
            url: url.into(),
            model: None,
            language: None,
            sample_rate: 16_000,
            api_key: None,
            policy: AddressPolicy::PublicOnly,
            endpointing_ms: None,
            timeout: Duration::from_secs(15),
            keep_alive: Some(Duration::from_secs(5)),
            http: None,
        }
    }
}

impl std::fmt::Debug for SttConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SttConfig")
            .field("dialect", &self.dialect)
            .field("url", &self.url)
            .field("model", &self.model)
            .field("language", &self.language)
            .field("sample_rate", &self.sample_rate)
            .field("api_key", &self.api_key.as_ref().map(|_| "[redacted]"))
            .field("policy", &self.policy)
            .field("endpointing_ms", &self.endpointing_ms)
            .field("timeout", &self.timeout)
            .field("keep_alive", &self.keep_alive)
            .finish_non_exhaustive()
    }
}

/// Who runs an espeak process: the server's limiter and the workspace
/// charged for it.
#[derive(Debug, Clone)]
pub struct EspeakAccess {
    pub limiter: EspeakLimiter,
    pub workspace: String,
    /// The binary; `None`: `RTC_ESPEAK_BIN`, else `espeak-ng` on `PATH`.
    pub binary: Option<std::path::PathBuf>,
}

/// One TTS stream (one spoken item).
#[derive(Clone)]
pub struct TtsConfig {
    pub dialect: TtsDialect,
    /// The base URL; the dialect appends its path (`/audio/speech` or
    /// `/v1/text-to-speech/{voice}/stream-input`). Unused by espeak and mock.
    pub url: String,
    /// `model` (openai), `model_id` (elevenlabs).
    pub model: String,
    /// The voice (openai name or `voice_…` id, elevenlabs voice id, espeak `-v`).
    pub voice: String,
    /// ElevenLabs `language_code`.
    pub language: Option<String>,
    /// ElevenLabs `pcm_<rate>`; the mock's rate. OpenAI (24 kHz or the WAV
    /// header) and espeak (22 050 Hz) ignore it: each audio event says its rate.
    pub sample_rate: u32,
    /// OpenAI `response_format`.
    pub format: TtsFormat,
    /// OpenAI `speed` (0.25–4.0); espeak words per minute (80–450).
    pub speed: Option<f64>,
    /// OpenAI `instructions` (not sent to `tts-1*` models).
    pub instructions: Option<String>,
    pub voice_settings: Option<VoiceSettings>,
    /// The revealed key: `Authorization: Bearer` (openai), `xi-api-key` (elevenlabs).
    pub api_key: Option<String>,
    pub policy: AddressPolicy,
    /// Connecting, and the wait for each answer or audio piece.
    pub timeout: Duration,
    /// A shared guarded client ([`http_client`]); one is built when `None`.
    pub http: Option<reqwest::Client>,
    /// Required for espeak.
    pub espeak: Option<EspeakAccess>,
}

impl TtsConfig {
    /// Defaults: no model, voice or key, 24 kHz, `pcm`, public addresses
    /// only, a 10 s timeout.
    pub fn new(dialect: TtsDialect, url: impl Into<String>) -> Self {
        Self {
            dialect,
            url: url.into(),
            model: String::new(),
            voice: String::new(),
            language: None,
            sample_rate: 24_000,
            format: TtsFormat::Pcm,
            speed: None,
            instructions: None,
            voice_settings: None,
            api_key: None,
            policy: AddressPolicy::PublicOnly,
            timeout: Duration::from_secs(10),
            http: None,
            espeak: None,
        }
    }
}

impl std::fmt::Debug for TtsConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TtsConfig")
            .field("dialect", &self.dialect)
            .field("url", &self.url)
            .field("model", &self.model)
            .field("voice", &self.voice)
            .field("language", &self.language)
            .field("sample_rate", &self.sample_rate)
            .field("format", &self.format)
            .field("speed", &self.speed)
            .field("voice_settings", &self.voice_settings)
            .field("api_key", &self.api_key.as_ref().map(|_| "[redacted]"))
            .field("policy", &self.policy)
            .field("timeout", &self.timeout)
            .field("espeak", &self.espeak)
            .finish_non_exhaustive()
    }
}

/// A guarded HTTP client for the speech providers: every address checked
/// by the outbound guard, no cross-origin redirect (the key is a header),
/// no overall timeout (each request bounds itself). Share one per policy.
pub fn http_client(policy: AddressPolicy) -> crate::Result<reqwest::Client> {
    rtc_tools::net_guard::guarded_client_same_origin_streaming(policy)
        .map_err(|e| crate::SpeechError::Config(format!("cannot build the HTTP client: {e}")))
}

/// `base` with `path` appended to its path (`https://h/v1` + `/audio/speech`
/// → `https://h/v1/audio/speech`), its query kept.
pub(crate) fn join_path(base: &str, path: &str) -> crate::Result<url::Url> {
    let mut url = url::Url::parse(base)
        .map_err(|e| crate::SpeechError::InvalidUrl(format!("cannot parse it: {e}")))?;
    if url.host().is_none() {
        return Err(crate::SpeechError::InvalidUrl("it has no host".into()));
    }
    let joined = format!("{}{}", url.path().trim_end_matches('/'), path);
    url.set_path(&joined);
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_appended_to_the_base() {
        let cases = [
            (
                "https://api.openai.com/v1",
                "https://api.openai.com/v1/audio/speech",
            ),
            (
                "https://api.openai.com/v1/",
                "https://api.openai.com/v1/audio/speech",
            ),
            ("http://127.0.0.1:9", "http://127.0.0.1:9/audio/speech"),
        ];
        for (base, want) in cases {
            let url = join_path(base, "/audio/speech").unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(url.as_str(), want);
        }
        assert!(join_path("not a url", "/x").is_err());
    }

    #[test]
    fn debug_hides_the_key() {
        let mut stt = SttConfig::new(SttDialect::Deepgram, "wss://api.deepgram.com");
        stt.api_key = Some("dg-secret".into());
        let mut tts = TtsConfig::new(TtsDialect::ElevenLabs, "wss://api.elevenlabs.io");
        tts.api_key = Some("el-secret".into());
        let shown = format!("{stt:?} {tts:?}");
        assert!(!shown.contains("secret"), "{shown}");
    }
}
