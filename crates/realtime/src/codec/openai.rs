//! The OpenAI Realtime GA `session.update` (design §1): `output_modalities`,
//! formats, transcription and turn detection under `audio`, flat tools.

use serde_json::{Map, Value, json};

use super::{tool_choice, tools, turn_detection};
use crate::{RtCaps, SessionSpec};

/// The transcription model when the spec names none.
pub(crate) const DEFAULT_TRANSCRIPTION_MODEL: &str = "gpt-4o-mini-transcribe";

pub(crate) fn session(caps: &RtCaps, spec: &SessionSpec) -> Value {
    let transcription = if spec.transcribe_input {
        json!({"model": spec.transcription_model.as_deref().unwrap_or(DEFAULT_TRANSCRIPTION_MODEL)})
    } else {
        Value::Null
    };
    let mut output = Map::new();
    output.insert(
        "format".into(),
        json!({"type": "audio/pcm", "rate": caps.output.rate}),
    );
    if let Some(voice) = &spec.voice {
        output.insert("voice".into(), voice.clone().into());
    }
    json!({
        "type": "realtime",
        "instructions": spec.instructions,
        "output_modalities": ["audio"],
        "audio": {
            "input": {
                "format": {"type": "audio/pcm", "rate": caps.input.rate},
                "transcription": transcription,
                "turn_detection": turn_detection(&spec.vad, caps.supports_semantic_vad),
            },
            "output": output,
        },
        "tools": tools(&spec.tools, caps.tool_shape),
        "tool_choice": tool_choice(spec.tool_choice),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{caps, session_update};
    use crate::{Dialect, ToolChoice, ToolDecl, Vad};

    fn spec() -> SessionSpec {
        SessionSpec {
            instructions: "Be brief.".into(),
            voice: Some("marin".into()),
            tools: vec![ToolDecl {
                name: "lookup_order".into(),
                description: "Find an order".into(),
                parameters: json!({"type": "object"}),
            }],
            tool_choice: ToolChoice::Auto,
            vad: Vad::Server {
                threshold: Some(0.5),
                prefix_padding_ms: Some(300),
                silence_duration_ms: Some(500),
            },
            transcribe_input: true,
            transcription_model: None,
        }
    }

    #[test]
    fn ga_session_update_matches_the_documented_shape() {
        let caps = caps(Dialect::Openai, 24_000, 24_000);
        let frame = session_update(&caps, Dialect::Openai, &spec(), "evt_1");
        assert_eq!(frame["type"], "session.update");
        assert_eq!(frame["event_id"], "evt_1");
        let s = &frame["session"];
        assert_eq!(s["type"], "realtime");
        assert_eq!(s["output_modalities"], json!(["audio"]));
        assert_eq!(
            s["audio"]["input"]["format"],
            json!({"type": "audio/pcm", "rate": 24000})
        );
        assert_eq!(
            s["audio"]["output"]["format"],
            json!({"type": "audio/pcm", "rate": 24000})
        );
        assert_eq!(s["audio"]["output"]["voice"], "marin");
        assert_eq!(
            s["audio"]["input"]["transcription"]["model"],
            "gpt-4o-mini-transcribe"
        );
        assert_eq!(
            s["audio"]["input"]["turn_detection"],
            json!({"type": "server_vad", "threshold": 0.5, "prefix_padding_ms": 300,
                   "silence_duration_ms": 500, "create_response": true, "interrupt_response": true})
        );
        assert_eq!(s["tools"][0]["name"], "lookup_order");
        assert_eq!(s["tool_choice"], "auto");
        assert!(s.get("modalities").is_none());
        assert!(s.get("turn_detection").is_none());
    }

    #[test]
    fn ga_without_vad_transcription_or_voice() {
        let caps = caps(Dialect::Openai, 24_000, 24_000);
        let mut spec = spec();
        spec.vad = Vad::None;
        spec.transcribe_input = false;
        spec.voice = None;
        spec.tool_choice = ToolChoice::None;
        let s = session(&caps, &spec);
        assert_eq!(s["audio"]["input"]["turn_detection"], Value::Null);
        assert_eq!(s["audio"]["input"]["transcription"], Value::Null);
        assert!(s["audio"]["output"].get("voice").is_none());
        assert_eq!(s["tool_choice"], "none");
    }
}
