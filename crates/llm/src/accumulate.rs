//! Folding streamed chunks into one answer, whatever the provider's quirks.

use rtc_core::llm::{ChatResponse, LlmError, ToolCall, Usage};
use serde_json::Value;

/// Collects the chunks of one streamed completion.
#[derive(Debug, Default)]
pub struct Accumulator {
    content: String,
    calls: Vec<ToolCall>,
    finish_reason: Option<String>,
    usage: Option<Usage>,
    refusal: String,
}

impl Accumulator {
    /// Fold one `chat.completion.chunk` (or a whole non-streamed
    /// `chat.completion`); returns the new text, if any.
    pub fn push(&mut self, chunk: &Value) -> Result<Option<String>, LlmError> {
        if let Some(err) = chunk.get("error") {
            let message = err
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("error in stream");
            return Err(LlmError::Protocol(message.to_owned()));
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            self.usage = Some(Usage {
                prompt_tokens: usage
                    .get("prompt_tokens")
                    .and_then(Value::as_u64)
                    .unwrap_or(0),
                completion_tokens: usage
                    .get("completion_tokens")
                    .and_then(Value::as_u64)
                    .unwrap_or(0),
                cached_tokens: usage
                    .pointer("/prompt_tokens_details/cached_tokens")
                    .and_then(Value::as_u64)
                    .unwrap_or(0),
            });
        }
        let mut text = String::new();
        for choice in chunk
            .get("choices")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            // Only the first choice is used (n = 1).
            if choice.get("index").and_then(Value::as_u64).unwrap_or(0) != 0 {
                continue;
            }
            if let Some(reason) = choice
                .get("finish_reason")
                .and_then(Value::as_str)
                .filter(|r| !r.is_empty())
            {
                self.finish_reason = Some(reason.to_owned());
            }
            // Streamed chunks carry `delta`; a whole completion carries `message`.
            let Some(delta) = choice.get("delta").or_else(|| choice.get("message")) else {
                continue;
            };
            if let Some(piece) = delta.get("content").and_then(Value::as_str) {
                text.push_str(piece);
            }
            if let Some(piece) = delta.get("refusal").and_then(Value::as_str) {
                self.refusal.push_str(piece);
            }
            for call in delta
                .get("tool_calls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                self.push_call(call);
            }
        }
        self.content.push_str(&text);
        Ok((!text.is_empty()).then_some(text))
    }

    fn push_call(&mut self, call: &Value) {
        let id = call
            .get("id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        let function = call.get("function");
        let name = function
            .and_then(|f| f.get("name"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        let args = function.and_then(|f| f.get("arguments")).map(|a| match a {
            Value::String(s) => s.clone(),
            // Some providers send the arguments as an object.
            other => other.to_string(),
        });
        let slot = match call.get("index").and_then(Value::as_u64) {
            // An index names the call, unless a different id shows a new call.
            Some(i) => {
                let i = usize::try_from(i).unwrap_or(usize::MAX);
                let reused = self
                    .calls
                    .get(i)
                    .is_some_and(|c| id.is_some_and(|id| !c.id.is_empty() && c.id != id));
                if reused || i >= self.calls.len() {
                    None
                } else {
                    Some(i)
                }
            }
            // No index: a known id continues its call, a new id starts one,
            // no id continues the last call.
            None => match id {
                Some(id) => self.calls.iter().position(|c| c.id == id),
                None => self.calls.len().checked_sub(1),
            },
        };
        let index = match slot {
            Some(i) => i,
            None => {
                self.calls.push(ToolCall {
                    id: String::new(),
                    name: String::new(),
                    arguments: String::new(),
                });
                self.calls.len() - 1
            }
        };
        let target = &mut self.calls[index];
        if let Some(id) = id {
            target.id = id.to_owned();
        }
        if let Some(name) = name
            && (target.name.is_empty() || !name.starts_with(&target.name))
        {
            target.name.push_str(name);
        }
        if let Some(args) = args {
            target.arguments.push_str(&args);
        }
    }

    /// Whether a finish reason arrived: the answer is complete (a stream
    /// that ends without one was cut).
    pub fn finished(&self) -> bool {
        self.finish_reason.is_some()
    }

    /// The whole answer. A call without an id, or with the id of an
    /// earlier call of this answer, gets a generated one, unique in the
    /// process (some providers send none, or `call_0` in every answer).
    pub fn finish(mut self) -> ChatResponse {
        let mut seen = std::collections::HashSet::new();
        for call in &mut self.calls {
            if call.id.is_empty() || !seen.insert(call.id.clone()) {
                call.id = fresh_call_id();
                seen.insert(call.id.clone());
            }
        }
        self.calls.retain(|c| !c.name.is_empty());
        ChatResponse {
            content: self.content,
            tool_calls: self.calls,
            finish_reason: self.finish_reason,
            usage: self.usage,
            refusal: (!self.refusal.is_empty()).then_some(self.refusal),
        }
    }
}

/// A tool-call id no provider gave: `call_rtc` and 16 random hex digits.
pub fn fresh_call_id() -> String {
    format!("call_rtc{:016x}", rand::random::<u64>())
}

#[cfg(test)]
#[path = "accumulate_tests.rs"]
mod tests;
