//! The beta-shaped `session.update` of Qwen Omni (design §2) and StepFun
//! (design §3): a flat session with `modalities`, `input_audio_format`,
//! `output_audio_format` and a top-level `turn_detection`.

use serde_json::{Map, Value, json};

use super::{tool_choice, tools, turn_detection};
use crate::{RtCaps, SessionSpec};

/// Qwen's transcription model when the spec names none.
pub(crate) const QWEN_TRANSCRIPTION_MODEL: &str = "gummy-realtime-v1";

/// Qwen: `pcm` formats (16 kHz in, 24 kHz out), nested tools.
pub(crate) fn qwen_session(caps: &RtCaps, spec: &SessionSpec) -> Value {
    let mut s = common(caps, spec, "pcm");
    if spec.transcribe_input {
        let model = spec
            .transcription_model
            .as_deref()
            .unwrap_or(QWEN_TRANSCRIPTION_MODEL);
        s.insert("input_audio_transcription".into(), json!({"model": model}));
    }
    Value::Object(s)
}

/// StepFun: `pcm16` formats, flat tools, and `turn_detection` always sent
/// because server VAD is off unless asked for. StepFun documents no
/// default transcription model, so one is sent only when the spec names it.
pub(crate) fn stepfun_session(caps: &RtCaps, spec: &SessionSpec) -> Value {
    let mut s = common(caps, spec, "pcm16");
    if spec.transcribe_input
        && let Some(model) = &spec.transcription_model
    {
        s.insert("input_audio_transcription".into(), json!({"model": model}));
    }
    Value::Object(s)
}

fn common(caps: &RtCaps, spec: &SessionSpec, format: &str) -> Map<String, Value> {
    let mut s = Map::new();
    s.insert("modalities".into(), json!(["text", "audio"]));
    s.insert("instructions".into(), spec.instructions.clone().into());
    if let Some(voice) = &spec.voice {
        s.insert("voice".into(), voice.clone().into());
    }
    s.insert("input_audio_format".into(), format.into());
    s.insert("output_audio_format".into(), format.into());
    s.insert(
        "turn_detection".into(),
        turn_detection(&spec.vad, caps.supports_semantic_vad),
    );
    s.insert("tools".into(), tools(&spec.tools, caps.tool_shape));
    s.insert("tool_choice".into(), tool_choice(spec.tool_choice));
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{caps, session_update};
    use crate::{Dialect, ToolChoice, ToolDecl, Vad};

    fn spec(vad: Vad) -> SessionSpec {
        SessionSpec {
            instructions: "Be brief.".into(),
            voice: Some("Cherry".into()),
            tools: vec![ToolDecl {
                name: "lookup_order".into(),
                description: "Find an order".into(),
                parameters: json!({"type": "object"}),
            }],
            tool_choice: ToolChoice::Auto,
            vad,
            transcribe_input: true,
            transcription_model: None,
        }
    }

    #[test]
    fn qwen_session_is_flat_with_nested_tools() {
        let caps = caps(Dialect::Qwen, 16_000, 24_000);
        let frame = session_update(
            &caps,
            Dialect::Qwen,
            &spec(Vad::Semantic { eagerness: None }),
            "e",
        );
        let s = &frame["session"];
        assert_eq!(s["modalities"], json!(["text", "audio"]));
        assert_eq!(s["input_audio_format"], "pcm");
        assert_eq!(s["output_audio_format"], "pcm");
        assert_eq!(s["voice"], "Cherry");
        assert_eq!(s["input_audio_transcription"]["model"], "gummy-realtime-v1");
        assert_eq!(s["turn_detection"]["type"], "semantic_vad");
        assert_eq!(s["tools"][0]["function"]["name"], "lookup_order");
        assert!(s.get("audio").is_none() && s.get("output_modalities").is_none());
    }

    #[test]
    fn stepfun_always_sends_turn_detection() {
        let caps = caps(Dialect::Stepfun, 24_000, 24_000);
        let none = stepfun_session(&caps, &spec(Vad::None));
        assert_eq!(none.get("turn_detection"), Some(&Value::Null));
        let server = stepfun_session(
            &caps,
            &spec(Vad::Server {
                threshold: None,
                prefix_padding_ms: None,
                silence_duration_ms: Some(400),
            }),
        );
        assert_eq!(
            server["turn_detection"],
            json!({"type": "server_vad", "silence_duration_ms": 400,
                   "create_response": true, "interrupt_response": true})
        );
        assert_eq!(server["input_audio_format"], "pcm16");
        assert_eq!(server["output_audio_format"], "pcm16");
        assert_eq!(server["tools"][0]["name"], "lookup_order");
        assert!(server.get("input_audio_transcription").is_none());
        let semantic = stepfun_session(&caps, &spec(Vad::Semantic { eagerness: None }));
        assert_eq!(semantic["turn_detection"]["type"], "server_vad");
    }
}
