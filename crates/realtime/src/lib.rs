//! Realtime (speech-to-speech) providers behind one trait (design
//! `realtime.md` §5a, R-RT-7): the session the bridge wants
//! ([`SessionSpec`]), what a provider tells it ([`RtEvent`]), and one
//! [`RealtimeAdapter`] per [`Dialect`] (OpenAI Realtime GA, DashScope Qwen
//! Omni, StepFun) over a WebSocket whose address the outbound guard
//! checks. Audio is PCM16 mono little-endian throughout; [`resample`]
//! converts between the host's and the provider's rates.

mod codec;
pub mod resample;
mod socket;

use std::time::Duration;

use bytes::Bytes;
pub use rtc_protocol::RealtimeDialect as Dialect;
use serde_json::Value;

pub use codec::caps;
pub use socket::{GuardedWs, WsConnectError, WsIo, connect, connect_guarded};

/// PCM16 mono little-endian at `rate` Hz.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AudioFmt {
    pub rate: u32,
}

/// How the model decides the user finished speaking.
#[derive(Debug, Clone, PartialEq)]
pub enum Vad {
    /// The host commits (`audio.commit`).
    None,
    Server {
        threshold: Option<f64>,
        prefix_padding_ms: Option<u32>,
        silence_duration_ms: Option<u32>,
    },
    Semantic {
        eagerness: Option<String>,
    },
}

/// `tool_choice`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ToolChoice {
    #[default]
    Auto,
    None,
}

/// One function the model may call; `parameters` hold only the
/// model-sourced arguments (R-TB-2).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDecl {
    pub name: String,
    pub description: String,
    pub parameters: Value,
}

/// The session configuration the bridge asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionSpec {
    pub instructions: String,
    pub voice: Option<String>,
    pub tools: Vec<ToolDecl>,
    pub tool_choice: ToolChoice,
    pub vad: Vad,
    /// Ask the provider to transcribe the user's audio.
    pub transcribe_input: bool,
    /// The transcription model (the dialect's default when `None`).
    pub transcription_model: Option<String>,
}

/// Options of one `response.create`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ResponseOpts {
    /// Instructions for this response only (e.g. "Say exactly: …").
    pub instructions: Option<String>,
}

/// How a response ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RespStatus {
    Completed,
    Cancelled,
    Incomplete,
    Failed,
}

impl RespStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::Cancelled => "cancelled",
            Self::Incomplete => "incomplete",
            Self::Failed => "failed",
        }
    }
}

/// What the provider said, in the dialect-neutral model.
#[derive(Debug, Clone, PartialEq)]
pub enum RtEvent {
    /// The session is configured (after `session.updated`).
    Ready {
        provider_session_id: String,
        input: AudioFmt,
        output: AudioFmt,
    },
    SpeechStarted {
        audio_start_ms: u32,
    },
    SpeechStopped {
        audio_end_ms: u32,
    },
    UserTranscript {
        item_id: String,
        text: String,
        is_final: bool,
    },
    ResponseStarted {
        response_id: String,
    },
    /// PCM16 at the provider's output rate.
    Audio {
        response_id: String,
        item_id: String,
        pcm: Bytes,
    },
    AssistantTranscript {
        item_id: String,
        delta: String,
        is_final: bool,
    },
    /// Once per `call_id` (deduplicated by the adapter).
    ToolCall {
        response_id: String,
        call_id: String,
        name: String,
        arguments: String,
    },
    ResponseDone {
        response_id: String,
        status: RespStatus,
        call_ids: Vec<String>,
    },
    Truncated {
        item_id: String,
        audio_end_ms: u32,
    },
    /// `fatal`: the session cannot go on (the socket closes after it).
    Error {
        code: String,
        message: String,
        fatal: bool,
    },
    /// The socket closed; nothing follows.
    Closed {
        reason: String,
    },
}

/// How a tool is declared on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolShape {
    /// `{type:"function", name, description, parameters}` (OpenAI GA).
    Flat,
    /// `{type:"function", function:{name, description, parameters}}` (Qwen).
    Nested,
}

/// What a dialect supports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RtCaps {
    pub supports_truncate: bool,
    pub supports_semantic_vad: bool,
    /// `conversation.item.create` of a user text message.
    pub supports_text_input: bool,
    pub input: AudioFmt,
    pub output: AudioFmt,
    pub tool_shape: ToolShape,
}

/// Why a realtime operation failed. Messages never carry the API key.
#[derive(Debug, thiserror::Error)]
pub enum RealtimeError {
    #[error("the provider URL is not valid: {0}")]
    InvalidUrl(String),
    #[error("the outbound guard refused {0}")]
    Blocked(String),
    #[error("could not connect to the realtime provider: {0}")]
    Connect(String),
    #[error("the realtime provider refused the credentials")]
    Unauthorized,
    #[error("the realtime provider did not answer within {0:?}")]
    Timeout(Duration),
    #[error("the realtime provider refused the session: {0}")]
    Rejected(String),
    #[error("the realtime connection is closed")]
    Closed,
    #[error("{0} is not supported by this provider")]
    Unsupported(&'static str),
    #[error("realtime protocol error: {0}")]
    Protocol(String),
}

pub type Result<T> = std::result::Result<T, RealtimeError>;

/// One live provider session. Commands are sent in order; events arrive
/// on the receiver [`connect`] returned.
#[async_trait::async_trait]
pub trait RealtimeAdapter: Send {
    fn dialect(&self) -> Dialect;
    fn caps(&self) -> RtCaps;
    /// Send `session.update` and wait for `session.updated`.
    async fn update_session(&mut self, spec: &SessionSpec) -> Result<()>;
    /// PCM16 already at `caps().input.rate`.
    async fn send_audio(&mut self, pcm16: &[u8]) -> Result<()>;
    async fn commit_audio(&mut self) -> Result<()>;
    /// A user text message (`conversation.item.create` of `input_text`);
    /// `Unsupported` where the dialect has none. Does not create a response.
    async fn send_text(&mut self, text: &str) -> Result<()>;
    /// A `function_call_output`; never creates a response.
    async fn submit_tool_result(&mut self, call_id: &str, output: &str) -> Result<()>;
    async fn create_response(&mut self, opts: ResponseOpts) -> Result<()>;
    async fn cancel(&mut self) -> Result<()>;
    /// `conversation.item.truncate`; a no-op where unsupported.
    async fn truncate(&mut self, item_id: &str, played_ms: u32) -> Result<()>;
    async fn close(&mut self) -> Result<()>;
}

/// Where and how to connect. Its `Debug` never shows the key.
#[derive(Clone)]
pub struct ProviderCfg {
    pub dialect: Dialect,
    /// The WebSocket URL without the model (added as `?model=`).
    pub url: String,
    pub model: String,
    /// The bearer token, revealed for this connection only.
    pub api_key: String,
    /// The provider's rates (input, output) in Hz.
    pub input_rate: u32,
    pub output_rate: u32,
    pub policy: rtc_tools::net_guard::AddressPolicy,
    /// How long connecting and `session.updated` may take.
    pub timeout: Duration,
    /// Most bytes of one message (or frame) the provider may send; a
    /// larger one breaks the connection (R-SEC-7).
    pub max_message_bytes: usize,
}

impl std::fmt::Debug for ProviderCfg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderCfg")
            .field("dialect", &self.dialect)
            .field("url", &self.url)
            .field("model", &self.model)
            .field("api_key", &"***")
            .field("input_rate", &self.input_rate)
            .field("output_rate", &self.output_rate)
            .field("policy", &self.policy)
            .field("timeout", &self.timeout)
            .field("max_message_bytes", &self.max_message_bytes)
            .finish()
    }
}

/// Capacity of the event channel: audio frames are dropped when it is
/// full, control events wait (R-RN-5).
pub const EVENT_CHANNEL_CAPACITY: usize = 256;
