//! Server events → [`Inbound`]: the session lifecycle frames the socket
//! handles itself, and [`RtEvent`]s for the bridge. One [`Decoder`] per
//! connection, because tool calls are deduplicated by `call_id` and a
//! response's calls are collected until its `response.done`.

use std::collections::{HashMap, HashSet};

use base64::Engine as _;
use bytes::Bytes;
use serde_json::Value;

use crate::{Dialect, RespStatus, RtEvent};

/// A decoded server frame.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Inbound {
    SessionCreated {
        id: String,
    },
    SessionUpdated,
    /// `error`; `event_id` names the client frame it is about, if any.
    ProviderError {
        code: String,
        message: String,
        event_id: Option<String>,
    },
    Event(RtEvent),
}

/// The names that differ between the GA and the beta protocol.
struct Names {
    audio_delta: &'static str,
    transcript_delta: &'static str,
    transcript_done: &'static str,
    text_delta: &'static str,
    text_done: &'static str,
}

const GA: Names = Names {
    audio_delta: "response.output_audio.delta",
    transcript_delta: "response.output_audio_transcript.delta",
    transcript_done: "response.output_audio_transcript.done",
    text_delta: "response.output_text.delta",
    text_done: "response.output_text.done",
};

const BETA: Names = Names {
    audio_delta: "response.audio.delta",
    transcript_delta: "response.audio_transcript.delta",
    transcript_done: "response.audio_transcript.done",
    text_delta: "response.text.delta",
    text_done: "response.text.done",
};

pub(crate) struct Decoder {
    names: &'static Names,
    /// Every `call_id` already emitted on this connection.
    emitted_calls: HashSet<String>,
    /// Calls emitted per response, until its `response.done`.
    response_calls: HashMap<String, Vec<String>>,
    /// `item_id` → (call_id, name) from `output_item.added`, for a
    /// `function_call_arguments.done` that carries no name.
    call_items: HashMap<String, (String, String)>,
    current_response: String,
}

fn text(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

fn millis(v: &Value, key: &str) -> u32 {
    v.get(key)
        .and_then(Value::as_u64)
        .map_or(0, |n| u32::try_from(n).unwrap_or(u32::MAX))
}

impl Decoder {
    pub(crate) fn new(dialect: Dialect) -> Self {
        Self {
            names: match dialect {
                Dialect::Openai => &GA,
                Dialect::Qwen | Dialect::Stepfun => &BETA,
            },
            emitted_calls: HashSet::new(),
            response_calls: HashMap::new(),
            call_items: HashMap::new(),
            current_response: String::new(),
        }
    }

    /// The frame's meaning; `None` for frames the bridge does not need.
    pub(crate) fn decode(&mut self, frame: &Value) -> Option<Inbound> {
        let ty = frame.get("type").and_then(Value::as_str)?;
        let event = match ty {
            "session.created" => {
                return Some(Inbound::SessionCreated {
                    id: text(&frame["session"], "id"),
                });
            }
            "session.updated" => return Some(Inbound::SessionUpdated),
            "error" => {
                let e = &frame["error"];
                let code = match e.get("code").and_then(Value::as_str) {
                    Some(c) => c.to_owned(),
                    None => text(e, "type"),
                };
                return Some(Inbound::ProviderError {
                    code,
                    message: text(e, "message"),
                    event_id: e.get("event_id").and_then(Value::as_str).map(str::to_owned),
                });
            }
            "input_audio_buffer.speech_started" => RtEvent::SpeechStarted {
                audio_start_ms: millis(frame, "audio_start_ms"),
            },
            "input_audio_buffer.speech_stopped" => RtEvent::SpeechStopped {
                audio_end_ms: millis(frame, "audio_end_ms"),
            },
            "conversation.item.input_audio_transcription.completed" => RtEvent::UserTranscript {
                item_id: text(frame, "item_id"),
                text: text(frame, "transcript"),
                is_final: true,
            },
            "conversation.item.input_audio_transcription.delta" => RtEvent::UserTranscript {
                item_id: text(frame, "item_id"),
                text: text(frame, "delta"),
                is_final: false,
            },
            "response.created" => {
                self.current_response = text(&frame["response"], "id");
                RtEvent::ResponseStarted {
                    response_id: self.current_response.clone(),
                }
            }
            "response.output_item.added" => {
                let item = &frame["item"];
                if item["type"] == "function_call" {
                    self.call_items.insert(
                        text(item, "id"),
                        (text(item, "call_id"), text(item, "name")),
                    );
                }
                return None;
            }
            "response.function_call_arguments.done" => {
                let (mut call_id, mut name) = (text(frame, "call_id"), text(frame, "name"));
                if let Some((known_call, known_name)) = self.call_items.get(&text(frame, "item_id"))
                {
                    if call_id.is_empty() {
                        call_id = known_call.clone();
                    }
                    if name.is_empty() {
                        name = known_name.clone();
                    }
                }
                return self.tool_call(frame, call_id, name, text(frame, "arguments"));
            }
            "response.output_item.done" => {
                let item = &frame["item"];
                if item["type"] != "function_call" {
                    return None;
                }
                return self.tool_call(
                    frame,
                    text(item, "call_id"),
                    text(item, "name"),
                    text(item, "arguments"),
                );
            }
            "response.done" => self.response_done(&frame["response"]),
            "conversation.item.truncated" => RtEvent::Truncated {
                item_id: text(frame, "item_id"),
                audio_end_ms: millis(frame, "audio_end_ms"),
            },
            t if t == self.names.audio_delta => {
                let pcm = base64::engine::general_purpose::STANDARD
                    .decode(text(frame, "delta"))
                    .ok()?;
                RtEvent::Audio {
                    response_id: self.response_of(frame),
                    item_id: text(frame, "item_id"),
                    pcm: Bytes::from(pcm),
                }
            }
            t if t == self.names.transcript_delta || t == self.names.text_delta => {
                RtEvent::AssistantTranscript {
                    item_id: text(frame, "item_id"),
                    delta: text(frame, "delta"),
                    is_final: false,
                }
            }
            // The final event carries the whole text.
            t if t == self.names.transcript_done => RtEvent::AssistantTranscript {
                item_id: text(frame, "item_id"),
                delta: text(frame, "transcript"),
                is_final: true,
            },
            t if t == self.names.text_done => RtEvent::AssistantTranscript {
                item_id: text(frame, "item_id"),
                delta: text(frame, "text"),
                is_final: true,
            },
            _ => return None,
        };
        Some(Inbound::Event(event))
    }

    fn response_of(&self, frame: &Value) -> String {
        match frame.get("response_id").and_then(Value::as_str) {
            Some(id) => id.to_owned(),
            None => self.current_response.clone(),
        }
    }

    fn tool_call(
        &mut self,
        frame: &Value,
        call_id: String,
        name: String,
        arguments: String,
    ) -> Option<Inbound> {
        if call_id.is_empty() || !self.emitted_calls.insert(call_id.clone()) {
            return None;
        }
        let response_id = self.response_of(frame);
        self.response_calls
            .entry(response_id.clone())
            .or_default()
            .push(call_id.clone());
        Some(Inbound::Event(RtEvent::ToolCall {
            response_id,
            call_id,
            name,
            arguments,
        }))
    }

    fn response_done(&mut self, response: &Value) -> RtEvent {
        let response_id = text(response, "id");
        let mut call_ids = self.response_calls.remove(&response_id).unwrap_or_default();
        let listed = response["output"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|item| item["type"] == "function_call")
            .map(|item| text(item, "call_id"));
        for call_id in listed {
            if !call_id.is_empty() && !call_ids.contains(&call_id) {
                call_ids.push(call_id);
            }
        }
        let status = match response["status"].as_str() {
            Some("cancelled") => RespStatus::Cancelled,
            Some("incomplete") => RespStatus::Incomplete,
            Some("failed") => RespStatus::Failed,
            _ => RespStatus::Completed,
        };
        RtEvent::ResponseDone {
            response_id,
            status,
            call_ids,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn event(d: &mut Decoder, frame: Value) -> RtEvent {
        match d.decode(&frame) {
            Some(Inbound::Event(e)) => e,
            other => panic!("expected an event from {frame}, got {other:?}"),
        }
    }

    #[test]
    fn lifecycle_and_errors() {
        let mut d = Decoder::new(Dialect::Openai);
        let created = json!({"type": "session.created", "session": {"id": "sess_1"}});
        assert_eq!(
            d.decode(&created),
            Some(Inbound::SessionCreated {
                id: "sess_1".into()
            })
        );
        assert_eq!(
            d.decode(&json!({"type": "session.updated", "session": {}})),
            Some(Inbound::SessionUpdated)
        );
        let err = json!({"type": "error", "error": {"type": "invalid_request_error",
            "code": "conversation_already_has_active_response", "message": "busy", "event_id": "e1"}});
        assert_eq!(
            d.decode(&err),
            Some(Inbound::ProviderError {
                code: "conversation_already_has_active_response".into(),
                message: "busy".into(),
                event_id: Some("e1".into()),
            })
        );
        let typed = json!({"type": "error", "error": {"type": "server_error", "message": "x"}});
        assert!(
            matches!(d.decode(&typed), Some(Inbound::ProviderError { code, .. }) if code == "server_error")
        );
        assert_eq!(d.decode(&json!({"type": "rate_limits.updated"})), None);
        assert_eq!(d.decode(&json!({"no": "type"})), None);
    }

    #[test]
    fn ga_audio_turn() {
        let mut d = Decoder::new(Dialect::Openai);
        assert_eq!(
            event(
                &mut d,
                json!({"type": "input_audio_buffer.speech_started", "audio_start_ms": 120, "item_id": "u1"})
            ),
            RtEvent::SpeechStarted {
                audio_start_ms: 120
            }
        );
        assert_eq!(
            event(
                &mut d,
                json!({"type": "conversation.item.input_audio_transcription.completed", "item_id": "u1", "transcript": "hello"})
            ),
            RtEvent::UserTranscript {
                item_id: "u1".into(),
                text: "hello".into(),
                is_final: true
            }
        );
        assert_eq!(
            event(
                &mut d,
                json!({"type": "response.created", "response": {"id": "r1"}})
            ),
            RtEvent::ResponseStarted {
                response_id: "r1".into()
            }
        );
        let audio = event(
            &mut d,
            json!({"type": "response.output_audio.delta", "item_id": "a1", "delta": "AQACAA=="}),
        );
        assert_eq!(
            audio,
            RtEvent::Audio {
                response_id: "r1".into(),
                item_id: "a1".into(),
                pcm: Bytes::from_static(&[1, 0, 2, 0])
            }
        );
        assert_eq!(
            event(
                &mut d,
                json!({"type": "response.output_audio_transcript.done", "item_id": "a1", "transcript": "Hi there"})
            ),
            RtEvent::AssistantTranscript {
                item_id: "a1".into(),
                delta: "Hi there".into(),
                is_final: true
            }
        );
        // Beta names mean nothing to the GA decoder.
        assert_eq!(
            d.decode(&json!({"type": "response.audio.delta", "delta": "AQACAA=="})),
            None
        );
    }

    #[test]
    fn beta_names() {
        let mut d = Decoder::new(Dialect::Qwen);
        assert!(matches!(
            event(
                &mut d,
                json!({"type": "response.audio.delta", "response_id": "r", "item_id": "a", "delta": "AAA="})
            ),
            RtEvent::Audio { .. }
        ));
        assert_eq!(
            event(
                &mut d,
                json!({"type": "response.audio_transcript.delta", "item_id": "a", "delta": "Hi"})
            ),
            RtEvent::AssistantTranscript {
                item_id: "a".into(),
                delta: "Hi".into(),
                is_final: false
            }
        );
        assert_eq!(
            event(
                &mut d,
                json!({"type": "response.text.delta", "item_id": "a", "delta": "!"})
            ),
            RtEvent::AssistantTranscript {
                item_id: "a".into(),
                delta: "!".into(),
                is_final: false
            }
        );
        assert_eq!(
            d.decode(&json!({"type": "response.output_audio.delta", "delta": "AAA="})),
            None
        );
    }

    #[test]
    fn tool_calls_are_deduplicated_and_listed_at_response_done() {
        let mut d = Decoder::new(Dialect::Openai);
        event(
            &mut d,
            json!({"type": "response.created", "response": {"id": "r1"}}),
        );
        assert_eq!(
            d.decode(&json!({"type": "response.output_item.added", "response_id": "r1",
                "item": {"id": "fc1", "type": "function_call", "call_id": "c1", "name": "lookup", "arguments": ""}})),
            None
        );
        // `.done` without a name takes it from `output_item.added`.
        assert_eq!(
            event(
                &mut d,
                json!({"type": "response.function_call_arguments.done", "response_id": "r1",
                "item_id": "fc1", "call_id": "c1", "arguments": "{\"id\":\"7\"}"})
            ),
            RtEvent::ToolCall {
                response_id: "r1".into(),
                call_id: "c1".into(),
                name: "lookup".into(),
                arguments: "{\"id\":\"7\"}".into()
            }
        );
        let item_done = json!({"type": "response.output_item.done", "response_id": "r1",
            "item": {"id": "fc1", "type": "function_call", "call_id": "c1", "name": "lookup", "arguments": "{\"id\":\"7\"}"}});
        assert_eq!(
            d.decode(&item_done),
            None,
            "the same call_id is emitted once"
        );
        // A call seen only as output_item.done (no arguments.done).
        assert!(matches!(
            event(&mut d, json!({"type": "response.output_item.done", "response_id": "r1",
                "item": {"id": "fc2", "type": "function_call", "call_id": "c2", "name": "other", "arguments": "{}"}})),
            RtEvent::ToolCall { call_id, .. } if call_id == "c2"
        ));
        assert_eq!(
            d.decode(&json!({"type": "response.output_item.done", "item": {"type": "message", "id": "m"}})),
            None
        );
        let done = json!({"type": "response.done", "response": {"id": "r1", "status": "completed", "output": [
            {"type": "message", "id": "m"},
            {"type": "function_call", "call_id": "c1"},
            {"type": "function_call", "call_id": "c3"}]}});
        assert_eq!(
            event(&mut d, done),
            RtEvent::ResponseDone {
                response_id: "r1".into(),
                status: RespStatus::Completed,
                call_ids: vec!["c1".into(), "c2".into(), "c3".into()]
            }
        );
        let cancelled = json!({"type": "response.done", "response": {"id": "r2", "status": "cancelled", "output": []}});
        assert_eq!(
            event(&mut d, cancelled),
            RtEvent::ResponseDone {
                response_id: "r2".into(),
                status: RespStatus::Cancelled,
                call_ids: vec![]
            }
        );
    }

    #[test]
    fn truncated_and_user_partials() {
        let mut d = Decoder::new(Dialect::Openai);
        assert_eq!(
            event(
                &mut d,
                json!({"type": "conversation.item.truncated", "item_id": "a1", "content_index": 0, "audio_end_ms": 500})
            ),
            RtEvent::Truncated {
                item_id: "a1".into(),
                audio_end_ms: 500
            }
        );
        assert_eq!(
            event(
                &mut d,
                json!({"type": "conversation.item.input_audio_transcription.delta", "item_id": "u", "delta": "hel"})
            ),
            RtEvent::UserTranscript {
                item_id: "u".into(),
                text: "hel".into(),
                is_final: false
            }
        );
    }
}
