//! The OpenAI-compatible chat-completions client (R-API-7), implementing
//! `rtc_core::llm::LlmClient`. Streaming with tool calls, written to
//! tolerate what real providers send: tool-call deltas without `index`,
//! `id` only on the first delta, empty `finish_reason`, finish chunks
//! without `delta`, `reasoning_content`, a plain JSON answer to a streaming
//! request. Retries with backoff on 429, 5xx and connection errors before
//! any output was received (R-RN-3).

mod accumulate;
mod client;
pub mod lanes;
mod tokenizer;
mod wire;

pub use accumulate::Accumulator;
pub use client::{DEFAULT_STREAMS_PER_CONNECTION, OpenAiClient, ProviderConfig, redacted_base_url};
pub use lanes::MakeClient;
