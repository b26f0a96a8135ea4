//! The mock realtime provider's script and the task that plays one
//! scripted response: `response.created`, its items (an assistant message
//! carrying audio and transcript, function calls with split argument
//! deltas), then `response.done` listing them, unless the connection
//! cancels it first or a `close` step drops the socket.

use std::time::Duration;

use base64::Engine as _;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::realtime_mock_conn::{Conn, Out};

/// The script: responses taken in order (a `when` response only by the
/// user transcript it names) and the user transcript of each turn.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RealtimeScript {
    #[serde(default)]
    pub responses: Vec<ScriptedResponse>,
    /// The transcript of the n-th user turn (counted across connections);
    /// an empty transcript past the end.
    #[serde(default)]
    pub user_transcripts: Vec<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedResponse {
    /// Taken only when the latest user transcript equals this
    /// (case-insensitive, trimmed).
    #[serde(default)]
    pub when: Option<String>,
    #[serde(default)]
    pub steps: Vec<Step>,
}

/// One step of a response.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Step {
    /// `ms` of a 440 Hz sine in 20 ms chunks at the session's output rate;
    /// `pace` 1 is real time, N is N× faster, absent as fast as possible.
    Audio {
        ms: u64,
        pace: Option<f64>,
    },
    /// The assistant transcript as word deltas, then `.done`.
    Transcript {
        text: String,
    },
    /// A function call whose arguments come in `split` deltas.
    ToolCall {
        name: String,
        args: Value,
        #[serde(default)]
        split: Option<usize>,
    },
    /// End the response now.
    Done,
    /// Drop the socket without a close frame.
    Close,
    Sleep {
        ms: u64,
    },
}

impl RealtimeScript {
    /// Index of the response the next `response.create` takes.
    pub(crate) fn pick(&self, used: &[bool], last_user: Option<&str>) -> Option<usize> {
        let same = |w: &str| last_user.is_some_and(|u| u.trim().eq_ignore_ascii_case(w.trim()));
        let unused = |i: &usize| !used.get(*i).copied().unwrap_or(false);
        let keyed = (0..self.responses.len())
            .filter(unused)
            .find(|&i| self.responses[i].when.as_deref().is_some_and(same));
        keyed.or_else(|| {
            (0..self.responses.len())
                .filter(unused)
                .find(|&i| self.responses[i].when.is_none())
        })
    }
}

const CHUNK_MS: u64 = 20;
const TONE_HZ: f64 = 440.0;
const AMPLITUDE: f64 = 8_000.0;

/// `samples` of the 440 Hz tone starting at sample `from`, PCM16 LE.
pub(crate) fn tone(rate: u32, from: u64, samples: u64) -> Vec<u8> {
    let mut pcm = Vec::with_capacity(usize::try_from(samples * 2).unwrap_or(0));
    for n in from..from + samples {
        let t = n as f64 / f64::from(rate);
        let s = (2.0 * std::f64::consts::PI * TONE_HZ * t).sin() * AMPLITUDE;
        pcm.extend_from_slice(&(s as i16).to_le_bytes());
    }
    pcm
}

/// Root mean square of PCM16 LE samples, on the PCM16 scale.
pub fn rms(pcm: &[u8]) -> f64 {
    let samples: Vec<f64> = pcm
        .chunks_exact(2)
        .map(|b| f64::from(i16::from_le_bytes([b[0], b[1]])))
        .collect();
    if samples.is_empty() {
        return 0.0;
    }
    (samples.iter().map(|s| s * s).sum::<f64>() / samples.len() as f64).sqrt()
}

/// Plays one response on `conn`; the connection aborts it on cancel.
pub(crate) struct ResponseRun {
    pub(crate) conn: std::sync::Arc<Conn>,
    pub(crate) id: String,
    pub(crate) steps: Vec<Step>,
}

impl ResponseRun {
    fn emit(&self, frame: Value) {
        self.conn.emit(Out::Frame {
            response: Some(self.id.clone()),
            frame,
        });
    }

    pub(crate) async fn run(self) {
        self.emit(json!({"type": "response.created", "response": {
            "id": self.id, "object": "realtime.response", "status": "in_progress", "output": []}}));
        let mut message: Option<(String, String)> = None; // (item id, transcript)
        let mut sample = 0u64;
        for step in self.steps.clone() {
            match step {
                Step::Audio { ms, pace } => {
                    let item = self.message_item(&mut message);
                    let rate = self.conn.output_rate();
                    let mut left = ms;
                    while left > 0 {
                        let chunk = left.min(CHUNK_MS);
                        let samples = u64::from(rate) * chunk / 1000;
                        let pcm = tone(rate, sample, samples);
                        sample += samples;
                        left -= chunk;
                        self.conn.add_item_audio(&item, chunk);
                        self.emit(json!({"type": self.conn.names().audio_delta,
                            "response_id": self.id, "item_id": item, "output_index": 0, "content_index": 0,
                            "delta": base64::engine::general_purpose::STANDARD.encode(pcm)}));
                        match pace {
                            Some(p) if p > 0.0 => {
                                tokio::time::sleep(Duration::from_secs_f64(
                                    chunk as f64 / 1000.0 / p,
                                ))
                                .await;
                            }
                            _ => tokio::task::yield_now().await,
                        }
                    }
                }
                Step::Transcript { text } => {
                    let item = self.message_item(&mut message);
                    for word in text.split_inclusive(' ') {
                        self.emit(json!({"type": self.conn.names().transcript_delta,
                            "response_id": self.id, "item_id": item, "output_index": 0, "content_index": 0,
                            "delta": word}));
                    }
                    self.emit(json!({"type": self.conn.names().transcript_done,
                        "response_id": self.id, "item_id": item, "output_index": 0, "content_index": 0,
                        "transcript": text}));
                    if let Some((_, said)) = message.as_mut() {
                        said.push_str(&text);
                    }
                }
                Step::ToolCall { name, args, split } => self.tool_call(&name, &args, split),
                Step::Done => break,
                Step::Close => {
                    self.conn.emit(Out::Drop);
                    return;
                }
                Step::Sleep { ms } => tokio::time::sleep(Duration::from_millis(ms)).await,
            }
        }
        if let Some((item, said)) = message {
            let done = json!({"id": item, "type": "message", "role": "assistant", "status": "completed",
                "content": [{"type": self.conn.names().audio_content, "transcript": said}]});
            self.conn.replace_output(&self.id, &item, done.clone());
            self.emit(
                json!({"type": "response.output_item.done", "response_id": self.id,
                "output_index": 0, "item": done}),
            );
            if self.conn.ga() {
                self.emit(json!({"type": "conversation.item.done", "item": done}));
            }
        }
        self.conn.finish_response(&self.id, "completed");
    }

    /// The assistant message item, created at its first audio or text.
    fn message_item(&self, message: &mut Option<(String, String)>) -> String {
        if let Some((id, _)) = message {
            return id.clone();
        }
        let id = self.conn.new_id("item");
        let item = json!({"id": id, "type": "message", "role": "assistant", "status": "in_progress", "content": []});
        self.conn.push_output(&self.id, item.clone());
        self.emit(
            json!({"type": "response.output_item.added", "response_id": self.id,
            "output_index": 0, "item": item}),
        );
        self.emit(json!({"type": self.conn.names().item_created, "item": item}));
        *message = Some((id.clone(), String::new()));
        id
    }

    fn tool_call(&self, name: &str, args: &Value, split: Option<usize>) {
        let arguments = match args {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let item_id = self.conn.new_id("item");
        let call_id = self.conn.new_id("call");
        let added = json!({"id": item_id, "type": "function_call", "status": "in_progress",
            "call_id": call_id, "name": name, "arguments": ""});
        self.emit(
            json!({"type": "response.output_item.added", "response_id": self.id,
            "output_index": 1, "item": added}),
        );
        let chars: Vec<char> = arguments.chars().collect();
        let parts = split.unwrap_or(1).clamp(1, chars.len().max(1));
        let size = chars.len().div_ceil(parts).max(1);
        for piece in chars.chunks(size) {
            self.emit(
                json!({"type": "response.function_call_arguments.delta", "response_id": self.id,
                "item_id": item_id, "call_id": call_id, "output_index": 1,
                "delta": piece.iter().collect::<String>()}),
            );
        }
        self.emit(json!({"type": "response.function_call_arguments.done", "response_id": self.id,
            "item_id": item_id, "call_id": call_id, "name": name, "output_index": 1, "arguments": arguments}));
        let done = json!({"id": item_id, "type": "function_call", "status": "completed",
            "call_id": call_id, "name": name, "arguments": arguments});
        self.conn.push_output(&self.id, done.clone());
        self.conn.know_call(&call_id);
        self.emit(
            json!({"type": "response.output_item.done", "response_id": self.id,
            "output_index": 1, "item": done}),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_keyed_then_unkeyed_responses() {
        let script: RealtimeScript = serde_json::from_value(json!({
            "userTranscripts": ["hi"],
            "responses": [
                {"steps": [{"audio": {"ms": 40}}, "done"]},
                {"when": "Order status", "steps": [{"tool_call": {"name": "x", "args": {}, "split": 2}}]},
                {"steps": ["close", {"sleep": {"ms": 5}}, {"transcript": {"text": "a b"}}]}
            ]
        }))
        .unwrap_or_default();
        assert_eq!(script.responses.len(), 3);
        assert_eq!(
            script.pick(&[false, false, false], Some(" order STATUS ")),
            Some(1)
        );
        assert_eq!(script.pick(&[false, false, false], Some("other")), Some(0));
        assert_eq!(script.pick(&[true, false, false], None), Some(2));
        assert_eq!(script.pick(&[true, false, true], None), None);
    }

    #[test]
    fn tone_is_loud_and_silence_is_not() {
        let pcm = tone(24_000, 0, 480);
        assert_eq!(pcm.len(), 960);
        assert!(rms(&pcm) > 5_000.0);
        assert_eq!(rms(&[0; 960]), 0.0);
    }
}
