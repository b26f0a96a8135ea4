//! The events of a voice session (R-RT-8, design `voice-pipeline.md`
//! §4(c), §4(e)): a pipeline assistant with a `speech` block whose host
//! socket sent `client.hello{audio}` hears and speaks through speech
//! interfaces. Realtime's frames are reused; these are what it adds.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// A voice host is attached: the rates are the host's (what it sends in
/// `audio.append` and receives in `audio.delta`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SpeechReady {
    pub input_rate: u32,
    pub output_rate: u32,
    pub stt: SpeechSide,
    pub tts: SpeechSide,
}

/// Which provider one side of the voice speaks through (`dialect: "mock"`
/// in test mode).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SpeechSide {
    pub dialect: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub voice: Option<String>,
}

/// The end of the user's turn was decided.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SpeechStopped {
    /// Where in the input audio the speech ended, counted from the
    /// session's first `audio.append`.
    pub audio_end_ms: u32,
}

/// Where a voice turn's time went (§4(e)), in ms; `null` where a step did
/// not happen (a typed turn has no `endpointMs` or `sttMs`). Time zero is
/// when the last voiced frame of the user's speech reached the server, or,
/// for a typed turn, when the turn began.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnLatency {
    /// End of speech → end-of-turn decision.
    pub endpoint_ms: Option<u64>,
    /// Decision → final transcript.
    pub stt_ms: Option<u64>,
    /// LLM request sent → first text token.
    pub llm_ttft_ms: Option<u64>,
    /// First token → first chunk released to TTS.
    pub chunk_ms: Option<u64>,
    /// First chunk sent to TTS → first audio byte received.
    pub tts_ttfb_ms: Option<u64>,
    /// Time zero → first `audio.delta` written for the host.
    pub first_audio_ms: Option<u64>,
    /// `firstAudioMs` minus the others: the server's own time.
    pub server_ms: Option<u64>,
}

/// A configured tool filler was spoken while tools ran (not a message:
/// it never enters the model's context).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SpeechFiller {
    /// The item its `audio.delta` frames name.
    pub item_id: String,
    pub text: String,
}

/// The user cut in on an answer that was already stored (its step had
/// tool calls, so it was stored while still being spoken): the stored
/// content is cut to what was heard.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MessageTruncated {
    pub message_id: String,
    /// The item its `audio.delta` frames named.
    pub item_id: String,
    /// How much of its audio was played.
    pub played_ms: u64,
    /// The stored content now.
    pub content: String,
}
