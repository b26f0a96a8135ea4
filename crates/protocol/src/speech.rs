//! Speech interfaces and an assistant's `speech` block (R-RT-8, design
//! `voice-pipeline.md` §4(a)): the speech-to-text and text-to-speech
//! providers a pipeline assistant speaks through. Which connection fields
//! a dialect takes, and their ranges, are checked at save by
//! `rtc_core::speech_rules` (each with its code and field), so the fields
//! here are all optional.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// A speech-to-text or text-to-speech provider of the workspace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SpeechInterface {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(pattern = r"^[A-Za-z0-9_-]{1,64}$")]
    pub id: Option<String>,
    #[schema(min_length = 1, max_length = 200, pattern = r"\S")]
    pub name: String,
    pub kind: SpeechKind,
    pub connection: SpeechConnection,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(read_only)]
    pub created_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(read_only)]
    pub updated_at: Option<String>,
}

/// Whether an interface hears (`stt`) or speaks (`tts`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum SpeechKind {
    Stt,
    Tts,
}

impl SpeechKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stt => "stt",
            Self::Tts => "tts",
        }
    }
}

/// The wire protocol of a speech provider: `openai` (stt and tts),
/// `deepgram` (stt), `elevenlabs` (tts), `espeak` (tts, local, admin only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum SpeechDialect {
    Openai,
    Deepgram,
    Elevenlabs,
    Espeak,
}

impl SpeechDialect {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Openai => "openai",
            Self::Deepgram => "deepgram",
            Self::Elevenlabs => "elevenlabs",
            Self::Espeak => "espeak",
        }
    }
}

/// How sessions reach the provider (the table of §4(a) says which fields
/// each dialect takes).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SpeechConnection {
    pub dialect: SpeechDialect,
    /// The provider's base URL; the dialect appends its path (none for
    /// `espeak`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 2048)]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 200)]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 200)]
    pub voice: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 35)]
    pub language: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample_rate: Option<u32>,
    /// OpenAI TTS: `pcm` (default) or `wav`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<SpeechAudioFormat>,
    /// A `{{secret__name}}` reference, revealed only into the provider's
    /// auth header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 200)]
    pub api_key: Option<String>,
    /// OpenAI TTS 0.25–4.0; espeak words per minute 80–450.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed: Option<f64>,
    /// OpenAI TTS (not `tts-1*`): how to speak.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 4096)]
    pub instructions: Option<String>,
    /// ElevenLabs voice settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub voice_settings: Option<SpeechVoiceSettings>,
}

/// The audio an OpenAI-compatible TTS answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum SpeechAudioFormat {
    Pcm,
    Wav,
}

/// ElevenLabs `voice_settings`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SpeechVoiceSettings {
    /// 0–1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stability: Option<f64>,
    /// 0–1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub similarity_boost: Option<f64>,
    /// 0.7–1.2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed: Option<f64>,
}

/// `POST /v1/speech-interfaces/{id}/check`: one request to the provider
/// (a TTS speaks "This is a test."; an STT hears 1 s of silence).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SpeechCheck {
    pub ok: bool,
    /// Time to the first audio byte or the transcript.
    pub latency_ms: u64,
    /// How much audio a TTS gave.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audio_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A pipeline assistant's voice: the interfaces it hears and speaks
/// through, and how turns are taken. Only with `runMode: "pipeline"`; an
/// assistant without it is text only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SpeechSettings {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stt_interface_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tts_interface_id: Option<String>,
    #[serde(default)]
    pub turn_detection: SpeechTurnDetection,
    #[serde(default)]
    pub barge_in: SpeechBargeIn,
    /// Spoken once per turn when tools run longer than `afterMs`; absent:
    /// silence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_filler: Option<SpeechToolFiller>,
}

/// How the end of the user's turn is decided.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SpeechTurnDetection {
    /// `server_vad` (default), `stt` (the STT's endpointing; deepgram
    /// only) or `none` (the host's `audio.commit`).
    #[serde(rename = "type", default)]
    pub kind: SpeechTurnDetectionKind,
    /// 0–1 (default 0.5): a frame is voiced at or above it.
    #[serde(default = "default_threshold")]
    pub threshold: f64,
    /// 0–2000 (default 300): audio kept before the speech starts.
    #[serde(default = "default_prefix_padding_ms")]
    pub prefix_padding_ms: u32,
    /// 100–5000 (default 500): silence that ends the turn.
    #[serde(default = "default_silence_duration_ms")]
    pub silence_duration_ms: u32,
    /// 1000–120000 (default 30000): the longest utterance.
    #[serde(default = "default_max_utterance_ms")]
    pub max_utterance_ms: u32,
}

impl Default for SpeechTurnDetection {
    fn default() -> Self {
        Self {
            kind: SpeechTurnDetectionKind::default(),
            threshold: default_threshold(),
            prefix_padding_ms: default_prefix_padding_ms(),
            silence_duration_ms: default_silence_duration_ms(),
            max_utterance_ms: default_max_utterance_ms(),
        }
    }
}

fn default_threshold() -> f64 {
    0.5
}
fn default_prefix_padding_ms() -> u32 {
    300
}
fn default_silence_duration_ms() -> u32 {
    500
}
fn default_max_utterance_ms() -> u32 {
    30_000
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SpeechTurnDetectionKind {
    #[default]
    ServerVad,
    Stt,
    None,
}

/// Whether the user's speech interrupts the assistant's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SpeechBargeIn {
    #[serde(default = "yes")]
    pub enabled: bool,
    /// 0–3000 (default 300): speech shorter than this never interrupts.
    #[serde(default = "default_min_speech_ms")]
    pub min_speech_ms: u32,
}

impl Default for SpeechBargeIn {
    fn default() -> Self {
        Self {
            enabled: true,
            min_speech_ms: default_min_speech_ms(),
        }
    }
}

fn yes() -> bool {
    true
}
fn default_min_speech_ms() -> u32 {
    300
}

/// What is said while slow tools run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SpeechToolFiller {
    /// 0–30000.
    pub after_ms: u32,
    /// 1–500 characters.
    pub text: String,
}
