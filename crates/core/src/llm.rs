//! The port to a chat model: what the runtime sends and receives, free of
//! any provider's wire format (that lives in `rtc-llm`).

use std::pin::Pin;

use futures_core::Stream;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::function_list::FunctionList;
pub use rtc_protocol::MessageImage;

/// One message of the conversation as the model sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "camelCase")]
pub enum ChatMessage {
    System {
        content: String,
    },
    User {
        content: String,
    },
    /// A user message of text and images (what tools returned, for a
    /// model that sees images).
    UserImages {
        content: String,
        images: Vec<MessageImage>,
    },
    Assistant {
        #[serde(default)]
        content: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    Tool {
        tool_call_id: String,
        content: String,
    },
}

/// A function call the model asked for. `arguments` is the raw JSON text
/// the model produced (it may be invalid; the runtime validates it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// A function offered to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments (an object schema).
    pub parameters: Value,
}

/// A request for one model completion.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ChatRequest {
    pub model: String,
    pub messages: Vec<ChatMessage>,
    /// Prepared once and shared with the registry that offers them: a
    /// request copies a pointer, and its body carries their JSON as it
    /// was rendered once.
    pub tools: FunctionList,
    pub temperature: Option<f64>,
    pub max_tokens: Option<u32>,
    /// What shape the answer must have.
    pub output: OutputFormat,
}

/// The shape of a completion's answer (`response_format`).
#[derive(Debug, Clone, PartialEq, Default)]
pub enum OutputFormat {
    #[default]
    Text,
    /// Any JSON object (structured extraction).
    JsonObject,
    /// A JSON object matching `schema` (strict structured output).
    JsonSchema { name: String, schema: Value },
}

/// Token counts reported by the provider.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Of `prompt_tokens`, those the provider read from its prompt cache
    /// (`prompt_tokens_details.cached_tokens`).
    #[serde(default)]
    pub cached_tokens: u64,
}

/// The complete answer of one completion.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChatResponse {
    pub content: String,
    pub tool_calls: Vec<ToolCall>,
    pub finish_reason: Option<String>,
    pub usage: Option<Usage>,
    /// The model declined to answer: its refusal text (`delta.refusal`).
    pub refusal: Option<String>,
}

/// What a streaming completion yields: text as it comes, then the whole answer.
#[derive(Debug, Clone, PartialEq)]
pub enum LlmEvent {
    TextDelta(String),
    Done(ChatResponse),
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LlmError {
    #[error("the model provider could not be reached: {0}")]
    Connect(String),
    #[error("the model provider answered HTTP {status}: {message}")]
    Http { status: u16, message: String },
    #[error("the model provider did not answer in time")]
    Timeout,
    #[error("the model provider's answer could not be understood: {0}")]
    Protocol(String),
    /// The stream ended (or its connection broke) with neither `[DONE]`
    /// nor a finish reason, after some of the answer was streamed.
    #[error("the model's answer was cut off: the stream ended before the answer was complete")]
    Cut,
    /// The provider's account has no quota left (`insufficient_quota`):
    /// not retried.
    #[error(
        "the model provider refused the request: the account's quota is exhausted ({0}); check its plan and billing"
    )]
    Quota(String),
    /// The request is longer than the model's context window
    /// (`context_length_exceeded`): the session compacts and retries.
    #[error("the request does not fit the model's context window: {0}")]
    ContextLength(String),
}

pub type LlmStream = Pin<Box<dyn Stream<Item = Result<LlmEvent, LlmError>> + Send>>;

/// Where a chat model is served, as an operator may be shown it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// The base URL with any credentials in it replaced by `***`.
    pub base_url: String,
    /// Whether requests carry an API key.
    pub api_key_set: bool,
}

/// A chat model. Dropping the stream cancels the request.
pub trait LlmClient: Send + Sync {
    /// What `model` accepts: the capability table, unless the client
    /// knows better (a provider's configuration).
    fn caps(&self, model: &str) -> crate::model_caps::ModelCaps {
        crate::model_caps::model_caps(model)
    }

    fn stream(&self, request: ChatRequest) -> LlmStream;

    /// `text`'s tokens for `model`: its real tokenizer where the client
    /// knows one, else the documented estimate ([`crate::tokens`]).
    fn count_tokens(&self, model: &str, text: &str) -> u32 {
        let _ = model;
        crate::tokens::estimate(text)
    }

    /// Where it is served, when it is an HTTP provider.
    fn endpoint(&self) -> Option<Endpoint> {
        None
    }
}
