//! One connection of the mock realtime provider: the client events it
//! understands, the real servers' rules it enforces (one active response,
//! known `call_id`s, truncation within the item's audio, no truncate on
//! beta dialects), speech detection on appended audio counted in audio
//! time, and the active response it can cancel.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

use crate::realtime_mock::{BETA, GA, Names, SILENCE_MS, SPEECH_RMS, Shared, lock};
use crate::realtime_mock_script::{ResponseRun, rms};

/// The voices OpenAI GA accepts.
const GA_VOICES: [&str; 10] = [
    "alloy", "ash", "ballad", "coral", "echo", "sage", "shimmer", "verse", "marin", "cedar",
];

/// What a connection sends: a frame (of a response, dropped once that is
/// cancelled) or the order to drop the socket.
pub(crate) enum Out {
    Frame {
        response: Option<String>,
        frame: Value,
    },
    Drop,
}

struct Active {
    id: String,
    task: AbortHandle,
    output: Vec<Value>,
}

#[derive(Default)]
pub(crate) struct ConnState {
    session: Value,
    active: Option<Active>,
    cancelled: HashSet<String>,
    item_audio_ms: HashMap<String, u64>,
    known_calls: HashSet<String>,
    samples_in: u64,
    in_speech: bool,
    silence_samples: u64,
    user_item: String,
    buffered: bool,
}

/// One authorised connection, shared with its response task.
pub(crate) struct Conn {
    index: usize,
    shared: Arc<Shared>,
    out: mpsc::UnboundedSender<Out>,
    state: Mutex<ConnState>,
}

/// Merge `patch` into `target`: objects key by key, anything else replaces.
fn merge(target: &mut Value, patch: &Value) {
    match (target, patch) {
        (Value::Object(t), Value::Object(p)) => {
            for (k, v) in p {
                merge(t.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
        (t, p) => *t = p.clone(),
    }
}

impl Conn {
    pub(crate) fn new(
        index: usize,
        shared: Arc<Shared>,
        out: mpsc::UnboundedSender<Out>,
        session: Value,
    ) -> Self {
        Self {
            index,
            shared,
            out,
            state: Mutex::new(ConnState {
                session,
                ..ConnState::default()
            }),
        }
    }

    pub(crate) fn emit(&self, out: Out) {
        let _ = self.out.send(out);
    }

    fn reply(&self, frame: Value) {
        self.emit(Out::Frame {
            response: None,
            frame,
        });
    }

    fn error(&self, client: &Value, code: &str, message: String) {
        self.reply(
            json!({"type": "error", "event_id": self.new_id("event"), "error": {
            "type": "invalid_request_error", "code": code, "message": message, "param": null,
            "event_id": client.get("event_id").cloned().unwrap_or(Value::Null)}}),
        );
    }

    pub(crate) fn ga(&self) -> bool {
        self.shared.flavor.ga()
    }

    pub(crate) fn names(&self) -> &'static Names {
        if self.ga() { &GA } else { &BETA }
    }

    pub(crate) fn new_id(&self, prefix: &str) -> String {
        let mut st = lock(&self.shared.state);
        st.next_id += 1;
        format!("{prefix}_{}", st.next_id)
    }

    fn rate(&self, output: bool) -> u32 {
        let (input, out) = self.shared.flavor.rates();
        if !self.ga() {
            return if output { out } else { input };
        }
        let side = if output { "output" } else { "input" };
        let st = lock(&self.state);
        st.session["audio"][side]["format"]["rate"]
            .as_u64()
            .and_then(|r| u32::try_from(r).ok())
            .unwrap_or(if output { out } else { input })
    }

    pub(crate) fn output_rate(&self) -> u32 {
        self.rate(true)
    }

    fn turn_detection(&self) -> Value {
        let st = lock(&self.state);
        if self.ga() {
            st.session["audio"]["input"]["turn_detection"].clone()
        } else {
            st.session["turn_detection"].clone()
        }
    }

    pub(crate) fn is_cancelled(&self, response: &str) -> bool {
        lock(&self.state).cancelled.contains(response)
    }

    /// The connection ended: stop the active response.
    pub(crate) fn stop(&self) {
        if let Some(active) = lock(&self.state).active.take() {
            active.task.abort();
        }
    }

    pub(crate) fn add_item_audio(&self, item: &str, ms: u64) {
        *lock(&self.state)
            .item_audio_ms
            .entry(item.to_owned())
            .or_default() += ms;
    }

    pub(crate) fn know_call(&self, call_id: &str) {
        lock(&self.state).known_calls.insert(call_id.to_owned());
    }

    pub(crate) fn push_output(&self, response: &str, item: Value) {
        if let Some(active) = lock(&self.state)
            .active
            .as_mut()
            .filter(|a| a.id == response)
        {
            active.output.push(item);
        }
    }

    pub(crate) fn replace_output(&self, response: &str, item_id: &str, item: Value) {
        if let Some(active) = lock(&self.state)
            .active
            .as_mut()
            .filter(|a| a.id == response)
            && let Some(slot) = active.output.iter_mut().find(|i| i["id"] == item_id)
        {
            *slot = item;
        }
    }

    /// `response.done` of the active response `id` (if it still is).
    pub(crate) fn finish_response(&self, id: &str, status: &str) {
        let mut st = lock(&self.state);
        if st.active.as_ref().is_some_and(|a| a.id == id)
            && let Some(active) = st.active.take()
        {
            self.reply(json!({"type": "response.done", "response": {
                "id": active.id, "object": "realtime.response", "status": status, "output": active.output}}));
        }
    }

    fn cancel_active(&self) -> bool {
        let mut st = lock(&self.state);
        let Some(active) = st.active.take() else {
            return false;
        };
        active.task.abort();
        st.cancelled.insert(active.id.clone());
        self.reply(json!({"type": "response.done", "response": {
            "id": active.id, "object": "realtime.response", "status": "cancelled", "output": active.output}}));
        true
    }

    /// Start the next scripted response, unless one is active.
    fn start_response(self: &Arc<Self>, client: &Value) {
        let id = self.new_id("resp");
        let mut st = lock(&self.state);
        if let Some(active) = &st.active {
            let message = format!(
                "Conversation already has an active response in progress: {}. Wait until the response is finished before creating a new one.",
                active.id
            );
            drop(st);
            self.error(client, "conversation_already_has_active_response", message);
            return;
        }
        let steps = {
            let mut shared = lock(&self.shared.state);
            let last = shared.last_user.clone();
            match shared.script.pick(&shared.used, last.as_deref()) {
                Some(i) => {
                    if let Some(u) = shared.used.get_mut(i) {
                        *u = true;
                    }
                    shared.script.responses[i].steps.clone()
                }
                None => Vec::new(),
            }
        };
        let run = ResponseRun {
            conn: self.clone(),
            id: id.clone(),
            steps,
        };
        let task = tokio::spawn(run.run()).abort_handle();
        st.active = Some(Active {
            id,
            task,
            output: Vec::new(),
        });
    }

    /// A client frame (already logged).
    pub(crate) fn handle(self: &Arc<Self>, frame: &Value) {
        let ty = frame["type"].as_str().unwrap_or_default();
        match ty {
            "session.update" => {
                if let Some(message) = self.refusal(&frame["session"]) {
                    self.error(frame, "invalid_value", message);
                    return;
                }
                let session = {
                    let mut st = lock(&self.state);
                    merge(&mut st.session, &frame["session"]);
                    st.session.clone()
                };
                lock(&self.shared.state)
                    .sessions
                    .insert(self.index, session.clone());
                self.reply(json!({"type": "session.updated", "event_id": self.new_id("event"), "session": session}));
            }
            "input_audio_buffer.append" => self.append(frame),
            "input_audio_buffer.commit" => {
                let buffered = std::mem::take(&mut lock(&self.state).buffered);
                if !buffered {
                    self.error(
                        frame,
                        "input_audio_buffer_commit_empty",
                        "Error committing input audio buffer: the buffer is empty.".into(),
                    );
                    return;
                }
                let item = self.new_id("item");
                self.end_user_turn(&item);
            }
            "input_audio_buffer.clear" => {
                let mut st = lock(&self.state);
                st.buffered = false;
                st.in_speech = false;
                drop(st);
                self.reply(json!({"type": "input_audio_buffer.cleared"}));
            }
            "conversation.item.create" => self.create_item(frame),
            "response.create" => self.start_response(frame),
            "response.cancel" => {
                if !self.cancel_active() {
                    self.error(
                        frame,
                        "response_cancel_not_active",
                        "Cancellation failed: no active response found".into(),
                    );
                }
            }
            "conversation.item.truncate" if self.ga() => self.truncate(frame),
            other => self.error(
                frame,
                "unknown_event",
                format!("Unknown event type: {other}"),
            ),
        }
    }

    /// Why a real server would refuse this session patch.
    fn refusal(&self, patch: &Value) -> Option<String> {
        if self.ga() {
            let voice = patch["audio"]["output"]["voice"].as_str();
            if let Some(voice) = voice.filter(|v| !GA_VOICES.contains(v)) {
                return Some(format!(
                    "Invalid value: '{voice}'. Supported values are: {}.",
                    GA_VOICES.join(", ")
                ));
            }
            let modalities = patch["output_modalities"].as_array().map_or(0, Vec::len);
            return (modalities > 1)
                .then(|| "output_modalities must be ['audio'] or ['text']".to_owned());
        }
        let modalities = patch["modalities"].as_array()?;
        (!modalities.iter().any(|m| m == "text"))
            .then(|| "Invalid value for 'session.modalities': it must contain 'text'".to_owned())
    }

    fn create_item(&self, frame: &Value) {
        let mut item = frame["item"].clone();
        if item["type"] == "function_call_output" {
            let call_id = item["call_id"].as_str().unwrap_or_default().to_owned();
            if !lock(&self.state).known_calls.contains(&call_id) {
                self.error(
                    frame,
                    "invalid_tool_call_id",
                    format!("Tool call ID '{call_id}' not found in conversation."),
                );
                return;
            }
        }
        if item.get("id").is_none() {
            item["id"] = self.new_id("item").into();
        }
        self.reply(json!({"type": self.names().item_created, "item": item}));
        if self.ga() {
            self.reply(json!({"type": "conversation.item.done", "item": item}));
        }
    }

    fn truncate(&self, frame: &Value) {
        let item_id = frame["item_id"].as_str().unwrap_or_default().to_owned();
        let end = frame["audio_end_ms"].as_u64().unwrap_or(0);
        let sent = lock(&self.state).item_audio_ms.get(&item_id).copied();
        match sent {
            None => self.error(
                frame,
                "item_not_found",
                format!("Item with item_id '{item_id}' not found."),
            ),
            Some(sent) if end > sent => self.error(
                frame,
                "invalid_value",
                format!("Audio content of {sent}ms is already shorter than {end}ms"),
            ),
            Some(_) => self.reply(
                json!({"type": "conversation.item.truncated", "item_id": item_id,
                "content_index": 0, "audio_end_ms": end}),
            ),
        }
    }

    fn append(self: &Arc<Self>, frame: &Value) {
        let pcm = base64::engine::general_purpose::STANDARD
            .decode(frame["audio"].as_str().unwrap_or_default())
            .unwrap_or_default();
        let rate = u64::from(self.rate(false)).max(1);
        let samples = (pcm.len() / 2) as u64;
        lock(&self.shared.state).audio_ms += samples as f64 * 1000.0 / rate as f64;
        let td = self.turn_detection();
        let loud = rms(&pcm) > SPEECH_RMS;
        let mut st = lock(&self.state);
        st.buffered = true;
        let start_ms = st.samples_in * 1000 / rate;
        st.samples_in += samples;
        let now_ms = st.samples_in * 1000 / rate;
        if td.is_null() {
            return;
        }
        if loud {
            st.silence_samples = 0;
            if st.in_speech {
                return;
            }
            st.in_speech = true;
            drop(st);
            let item = self.new_id("item");
            lock(&self.state).user_item = item.clone();
            self.reply(json!({"type": "input_audio_buffer.speech_started", "audio_start_ms": start_ms, "item_id": item}));
            if td["interrupt_response"].as_bool().unwrap_or(true) {
                self.cancel_active();
            }
            return;
        }
        if !st.in_speech {
            return;
        }
        st.silence_samples += samples;
        if st.silence_samples * 1000 / rate < SILENCE_MS {
            return;
        }
        st.in_speech = false;
        st.buffered = false;
        let item = st.user_item.clone();
        drop(st);
        self.reply(json!({"type": "input_audio_buffer.speech_stopped", "audio_end_ms": now_ms, "item_id": item}));
        self.end_user_turn(&item);
        if td["create_response"].as_bool().unwrap_or(true) {
            self.start_response(&json!({}));
        }
    }

    /// `committed`, the user item and its transcript (the script's next).
    fn end_user_turn(&self, item: &str) {
        let transcript = {
            let mut shared = lock(&self.shared.state);
            let t = shared
                .script
                .user_transcripts
                .get(shared.user_turns)
                .cloned()
                .unwrap_or_default();
            shared.user_turns += 1;
            shared.last_user = Some(t.clone());
            t
        };
        self.reply(json!({"type": "input_audio_buffer.committed", "item_id": item, "previous_item_id": null}));
        self.reply(
            json!({"type": self.names().item_created, "item": {"id": item, "type": "message",
            "role": "user", "content": [{"type": "input_audio", "transcript": null}]}}),
        );
        self.reply(
            json!({"type": "conversation.item.input_audio_transcription.completed",
            "item_id": item, "content_index": 0, "transcript": transcript}),
        );
    }
}
