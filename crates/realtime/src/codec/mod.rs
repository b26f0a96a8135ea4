//! The wire codecs: one `session.update` encoder per dialect
//! ([`openai`] for the GA shape, [`beta`] for Qwen and StepFun), the client
//! events the three dialects share, and the server-event [`decode`]r.
//! Everything here is a pure function of its input (no I/O), so it is
//! tested on handwritten frames beside the code.

pub(crate) mod beta;
pub(crate) mod decode;
pub(crate) mod openai;

use base64::Engine as _;
use serde_json::{Map, Value, json};

use crate::{
    AudioFmt, Dialect, ResponseOpts, RtCaps, SessionSpec, ToolChoice, ToolDecl, ToolShape, Vad,
};

/// What a dialect supports at the given provider rates (input, output).
pub fn caps(dialect: Dialect, input_rate: u32, output_rate: u32) -> RtCaps {
    let (supports_truncate, supports_semantic_vad, supports_text_input, tool_shape) = match dialect
    {
        Dialect::Openai => (true, true, true, ToolShape::Flat),
        Dialect::Qwen => (false, true, false, ToolShape::Nested),
        Dialect::Stepfun => (false, false, true, ToolShape::Flat),
    };
    RtCaps {
        supports_truncate,
        supports_semantic_vad,
        supports_text_input,
        input: AudioFmt { rate: input_rate },
        output: AudioFmt { rate: output_rate },
        tool_shape,
    }
}

/// The `session.update` frame asking for `spec`, tagged with `event_id`
/// (the provider names it in an `error` about this frame).
pub(crate) fn session_update(
    caps: &RtCaps,
    dialect: Dialect,
    spec: &SessionSpec,
    event_id: &str,
) -> Value {
    let session = match dialect {
        Dialect::Openai => openai::session(caps, spec),
        Dialect::Qwen => beta::qwen_session(caps, spec),
        Dialect::Stepfun => beta::stepfun_session(caps, spec),
    };
    json!({"type": "session.update", "event_id": event_id, "session": session})
}

/// The tool declarations in the dialect's shape.
pub(crate) fn tools(tools: &[ToolDecl], shape: ToolShape) -> Value {
    Value::Array(
        tools
            .iter()
            .map(|t| match shape {
                ToolShape::Flat => json!({
                    "type": "function",
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                }),
                ToolShape::Nested => json!({
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.parameters,
                    },
                }),
            })
            .collect(),
    )
}

pub(crate) fn tool_choice(choice: ToolChoice) -> Value {
    Value::from(match choice {
        ToolChoice::Auto => "auto",
        ToolChoice::None => "none",
    })
}

/// `turn_detection`: `null` for [`Vad::None`]; the server decides turns
/// otherwise, creating a response and interrupting the current one on
/// speech. `semantic` false downgrades semantic VAD to server VAD (a
/// dialect without it).
pub(crate) fn turn_detection(vad: &Vad, semantic: bool) -> Value {
    let mut td = Map::new();
    match vad {
        Vad::None => return Value::Null,
        Vad::Server {
            threshold,
            prefix_padding_ms,
            silence_duration_ms,
        } => {
            td.insert("type".into(), "server_vad".into());
            if let Some(t) = threshold {
                td.insert("threshold".into(), (*t).into());
            }
            if let Some(p) = prefix_padding_ms {
                td.insert("prefix_padding_ms".into(), (*p).into());
            }
            if let Some(s) = silence_duration_ms {
                td.insert("silence_duration_ms".into(), (*s).into());
            }
        }
        Vad::Semantic { eagerness } if semantic => {
            td.insert("type".into(), "semantic_vad".into());
            if let Some(e) = eagerness {
                td.insert("eagerness".into(), e.clone().into());
            }
        }
        Vad::Semantic { .. } => {
            tracing::warn!("semantic VAD is not supported by this dialect; using server VAD");
            td.insert("type".into(), "server_vad".into());
        }
    }
    td.insert("create_response".into(), true.into());
    td.insert("interrupt_response".into(), true.into());
    Value::Object(td)
}

pub(crate) fn append_audio(pcm16: &[u8]) -> Value {
    json!({
        "type": "input_audio_buffer.append",
        "audio": base64::engine::general_purpose::STANDARD.encode(pcm16),
    })
}

pub(crate) fn commit_audio() -> Value {
    json!({"type": "input_audio_buffer.commit"})
}

pub(crate) fn user_text(text: &str) -> Value {
    json!({
        "type": "conversation.item.create",
        "item": {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": text}],
        },
    })
}

/// The output of a function call. Qwen documents no result event; this
/// OpenAI shape is the presumed one (design §2, "Verify").
pub(crate) fn tool_result(call_id: &str, output: &str) -> Value {
    json!({
        "type": "conversation.item.create",
        "item": {"type": "function_call_output", "call_id": call_id, "output": output},
    })
}

pub(crate) fn create_response(opts: &ResponseOpts) -> Value {
    match &opts.instructions {
        Some(instructions) => {
            json!({"type": "response.create", "response": {"instructions": instructions}})
        }
        None => json!({"type": "response.create"}),
    }
}

pub(crate) fn cancel_response() -> Value {
    json!({"type": "response.cancel"})
}

pub(crate) fn truncate(item_id: &str, audio_end_ms: u32) -> Value {
    json!({
        "type": "conversation.item.truncate",
        "item_id": item_id,
        "content_index": 0,
        "audio_end_ms": audio_end_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decl() -> ToolDecl {
        ToolDecl {
            name: "lookup_order".into(),
            description: "Find an order".into(),
            parameters: json!({"type": "object", "properties": {"id": {"type": "string"}}}),
        }
    }

    #[test]
    fn flat_and_nested_tools() {
        let flat = tools(&[decl()], ToolShape::Flat);
        assert_eq!(flat[0]["name"], "lookup_order");
        assert_eq!(flat[0]["type"], "function");
        assert!(flat[0].get("function").is_none());
        let nested = tools(&[decl()], ToolShape::Nested);
        assert_eq!(nested[0]["type"], "function");
        assert_eq!(nested[0]["function"]["name"], "lookup_order");
        assert_eq!(
            nested[0]["function"]["parameters"]["properties"]["id"]["type"],
            "string"
        );
        assert!(nested[0].get("name").is_none());
    }

    #[test]
    fn turn_detection_shapes() {
        assert_eq!(turn_detection(&Vad::None, true), Value::Null);
        let server = turn_detection(
            &Vad::Server {
                threshold: Some(0.6),
                prefix_padding_ms: Some(300),
                silence_duration_ms: None,
            },
            true,
        );
        assert_eq!(
            server,
            json!({"type": "server_vad", "threshold": 0.6, "prefix_padding_ms": 300,
                   "create_response": true, "interrupt_response": true})
        );
        let semantic = Vad::Semantic {
            eagerness: Some("low".into()),
        };
        assert_eq!(turn_detection(&semantic, true)["type"], "semantic_vad");
        assert_eq!(turn_detection(&semantic, true)["eagerness"], "low");
        assert_eq!(turn_detection(&semantic, false)["type"], "server_vad");
        assert!(turn_detection(&semantic, false).get("eagerness").is_none());
    }

    #[test]
    fn client_events() {
        assert_eq!(append_audio(&[1, 0, 2, 0])["audio"], "AQACAA==");
        assert_eq!(commit_audio()["type"], "input_audio_buffer.commit");
        let out = tool_result("call_1", "{\"ok\":true}");
        assert_eq!(out["item"]["type"], "function_call_output");
        assert_eq!(out["item"]["call_id"], "call_1");
        assert_eq!(out["item"]["output"], "{\"ok\":true}");
        assert_eq!(
            create_response(&ResponseOpts::default()),
            json!({"type": "response.create"})
        );
        let said = create_response(&ResponseOpts {
            instructions: Some("Say exactly: bye".into()),
        });
        assert_eq!(said["response"]["instructions"], "Say exactly: bye");
        assert_eq!(user_text("hi")["item"]["content"][0]["type"], "input_text");
        assert_eq!(truncate("item_1", 500)["audio_end_ms"], 500);
        assert_eq!(truncate("item_1", 500)["content_index"], 0);
        assert_eq!(cancel_response()["type"], "response.cancel");
    }

    #[test]
    fn capabilities_per_dialect() {
        let ga = caps(Dialect::Openai, 24_000, 24_000);
        assert!(ga.supports_truncate && ga.supports_semantic_vad && ga.supports_text_input);
        let qwen = caps(Dialect::Qwen, 16_000, 24_000);
        assert!(!qwen.supports_truncate && !qwen.supports_text_input);
        assert_eq!(qwen.tool_shape, ToolShape::Nested);
        assert_eq!(qwen.input.rate, 16_000);
        let step = caps(Dialect::Stepfun, 24_000, 24_000);
        assert!(!step.supports_truncate && !step.supports_semantic_vad && step.supports_text_input);
    }
}
