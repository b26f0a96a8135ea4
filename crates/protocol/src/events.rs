//! Session events (R-API-6) and the WebSocket's client frames (R-API-5),
//! one typed shape per kind. The runtime emits [`EventBody`] values; the
//! store keeps them as `kind` + payload; SSE and the WebSocket send a
//! [`SessionEvent`]: `type`, `sessionId`, `seq`, `timestamp` and the
//! fields of its type. Adding a kind is adding a variant here: the
//! compiler then shows every place that must handle it.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

use crate::{AnswerParams, Answers, AskQuestion, Goal, Loop, Message, MessageRole, TodoItem};

fn is_false(b: &bool) -> bool {
    !*b
}

/// One stored event of a session as clients receive it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionEvent {
    pub session_id: String,
    /// Increases by one per event of the session; resume after it.
    pub seq: i64,
    /// RFC 3339.
    pub timestamp: String,
    /// Set on every event of a test-mode session (R-BX-10).
    #[serde(default, skip_serializing_if = "is_false")]
    pub test_mode: bool,
    /// `type` and the fields of that type.
    #[serde(flatten)]
    pub body: EventBody,
}

impl SessionEvent {
    /// The event's `type`.
    pub fn kind(&self) -> &'static str {
        self.body.kind()
    }
}

macro_rules! event_kinds {
    ($( $(#[$doc:meta])* $variant:ident($payload:ty) = $kind:tt, )*) => {
        /// What happened, by `type`.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
        #[serde(tag = "type")]
        pub enum EventBody {
            $( $(#[$doc])* #[serde(rename = $kind)] $variant($payload), )*
        }

        impl EventBody {
            /// Every `type`, in declaration order.
            pub const KINDS: &'static [&'static str] = &[$($kind),*];

            /// The event's `type`.
            pub fn kind(&self) -> &'static str {
                match self { $( Self::$variant(_) => $kind, )* }
            }
        }

        $( impl From<$payload> for EventBody {
            fn from(payload: $payload) -> Self {
                Self::$variant(payload)
            }
        } )*
    };
}

event_kinds! {
    /// The session was created (a sub-agent's names its parent and title).
    SessionStarted(SessionStarted) = "session.started",
    /// The session ended; no more turns.
    SessionEnded(SessionEnded) = "session.ended",
    TurnStarted(TurnStarted) = "turn.started",
    /// `skipTurn` was called: the model stays silent this turn.
    TurnSkipped(TurnSkipped) = "turn.skipped",
    TurnCompleted(TurnCompleted) = "turn.completed",
    /// A piece of the assistant's streamed answer.
    MessageDelta(MessageDelta) = "message.delta",
    /// A whole message of the history.
    MessageCompleted(MessageCompleted) = "message.completed",
    ToolCalled(ToolCalled) = "tool.called",
    ToolCompleted(ToolCompleted) = "tool.completed",
    /// A running tool call's progress, as its MCP server reports it.
    ToolProgress(ToolProgress) = "tool.progress",
    /// The host's client must run a function (R-CT-3).
    ClientToolCall(ClientToolCall) = "client_tool.call",
    TodoUpdated(TodoUpdated) = "todo.updated",
    StateUpdated(StateUpdated) = "state.updated",
    AskUserQuestion(AskUserQuestion) = "ask_user.question",
    AskUserAnswered(AskUserAnswered) = "ask_user.answered",
    SubAgentStarted(SubAgentStarted) = "subagent.started",
    SubAgentCompleted(SubAgentCompleted) = "subagent.completed",
    GoalUpdated(GoalUpdated) = "goal.updated",
    LoopUpdated(LoopUpdated) = "loop.updated",
    MemoryUpdated(MemoryUpdated) = "memory.updated",
    HandoffRequested(HandoffRequested) = "handoff.requested",
    HandoffReleased(HandoffReleased) = "handoff.released",
    /// A workflow session entered a node.
    WorkflowNodeEntered(WorkflowNodeEntered) = "workflow.node_entered",
    /// A workflow node's edges were walked after a turn (or a release).
    WorkflowEvaluated(WorkflowEvaluated) = "workflow.evaluated",
    /// A task was delegated to a task backend.
    TaskStarted(TaskStarted) = "task.started",
    /// A running task made progress (a reasoner's step, an OpenCode status).
    TaskUpdated(TaskUpdated) = "task.updated",
    /// A task ended: completed, failed or cancelled.
    TaskCompleted(TaskCompleted) = "task.completed",
    /// A realtime session's provider is connected and configured; the
    /// rates are the host's (what it sends in `audio.append` and receives
    /// in `audio.delta`).
    RealtimeReady(RealtimeReady) = "session.realtime_ready",
    /// The user started speaking (a realtime session): the host must
    /// flush what it has not played yet.
    SpeechStarted(SpeechStarted) = "speech.started",
    /// A voice host is attached to a pipeline session with `speech`
    /// (again after a reconnection).
    SpeechReady(crate::SpeechReady) = "session.speech_ready",
    /// The end of the user's spoken turn was decided (a voice session).
    SpeechStopped(crate::SpeechStopped) = "speech.stopped",
    /// A voice session's tool filler was spoken while tools ran.
    SpeechFiller(crate::SpeechFiller) = "speech.filler",
    /// A stored spoken answer was cut to what the user heard.
    MessageTruncated(crate::MessageTruncated) = "message.truncated",
    /// Older messages were replaced by a summary in the session's model
    /// requests (the stored history stays whole).
    ContextCompacted(ContextCompacted) = "context.compacted",
    /// Something failed; the session stays usable.
    Error(ErrorEvent) = "error",
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContextCompacted {
    /// The request's tokens before and after (as counted for the model).
    pub tokens_before: u64,
    pub tokens_after: u64,
    /// The model's context window the request must fit.
    pub context_window: u64,
    /// How many stored messages the summary now stands for.
    pub summarized_messages: u64,
    /// `threshold` (the request would pass the configured share of the
    /// window) or `context_length_exceeded` (the provider refused it).
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RealtimeReady {
    pub input_rate: u32,
    pub output_rate: u32,
    pub dialect: crate::RealtimeDialect,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SpeechStarted {
    /// Where in the input audio speech began, as the provider counts it.
    pub audio_start_ms: u32,
}

/// A frame the server sends on a realtime session's WebSocket that is not
/// a stored event: no `seq`, never replayed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type")]
pub enum EphemeralFrame {
    /// Assistant audio: base64 PCM16 mono at `rate` Hz (the host's
    /// `outputRate`), part of the provider item `itemId`.
    #[serde(rename = "audio.delta")]
    AudioDelta(AudioDelta),
    /// A voice session's streaming STT's provisional text of what the
    /// user is saying.
    #[serde(rename = "transcript.interim")]
    TranscriptInterim(TranscriptInterim),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TranscriptInterim {
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AudioDelta {
    pub item_id: String,
    pub audio: String,
    pub rate: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionStarted {
    pub assistant_id: String,
    #[schema(value_type = Object)]
    pub variables: Map<String, Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionEnded {
    #[serde(default)]
    pub reason: Option<String>,
    /// `host`, `model`, or `parent` (a stopping parent agent).
    pub ended_by: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnStarted {
    pub turn_id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnSkipped {
    pub turn_id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnCompleted {
    /// Absent when recovery closes a turn cut off by a restart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
    /// Cancelled by a new message, an end, a shutdown or a restart.
    pub interrupted: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// A realtime response's final status: `completed`, `cancelled`,
    /// `incomplete` or `failed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// The provider's finish reason for the turn's last model answer
    /// (`stop`, `tool_calls`, `length`, `content_filter`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    /// A voice session's turn: where its time went.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<crate::TurnLatency>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MessageDelta {
    pub message_id: String,
    pub delta: String,
    /// `audio` for a realtime transcript.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// `assistant` for a realtime transcript.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<MessageRole>,
    /// The provider's item the transcript belongs to (what
    /// `playback.interrupted` names).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub item_id: Option<String>,
}

impl MessageDelta {
    /// A piece of a text answer.
    pub fn text(message_id: &str, delta: String) -> Self {
        Self {
            message_id: message_id.to_owned(),
            delta,
            source: None,
            role: None,
            item_id: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MessageCompleted {
    pub message_id: String,
    pub role: MessageRole,
    pub content: String,
    /// A goal's continuation input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goal_id: Option<String>,
    /// A loop tick's input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loop_id: Option<String>,
    /// A message from another session of the tree (a report, a parent's message).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_session_id: Option<String>,
    /// `audio` for a realtime transcript.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The provider's item of a realtime transcript.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub item_id: Option<String>,
    /// The user spoke over it: the host stopped playing it part way; or
    /// the model's stream was cut and only this part arrived.
    #[serde(default, skip_serializing_if = "is_false")]
    pub interrupted: bool,
    /// The model declined to answer: `content` is its refusal.
    #[serde(default, skip_serializing_if = "is_false")]
    pub refusal: bool,
}

impl MessageCompleted {
    /// The event of a stored message.
    pub fn of(m: &Message) -> Self {
        Self {
            message_id: m.id.clone(),
            role: m.role,
            content: m.content.clone(),
            goal_id: None,
            loop_id: None,
            from_session_id: None,
            source: m.source.clone(),
            item_id: None,
            interrupted: m.interrupted,
            refusal: false,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolCalled {
    pub call_id: String,
    pub name: String,
    /// The arguments as the model wrote them (JSON text).
    pub arguments: String,
    /// A startup action, run before the first turn.
    #[serde(default, skip_serializing_if = "is_false")]
    pub startup: bool,
    /// `workflow` for a workflow's action node (not the model's call).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolProgress {
    pub call_id: String,
    pub name: String,
    /// Grows as the call goes on.
    pub progress: f64,
    /// What `progress` reaches at the end, when the server knows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolCompleted {
    pub call_id: String,
    pub name: String,
    pub is_error: bool,
    /// What the model was shown (filtered); `{"error": …}` for an error;
    /// absent for a cancelled call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub result: Option<Value>,
    /// The call did not run to its end (the turn was interrupted).
    #[serde(default, skip_serializing_if = "is_false")]
    pub cancelled: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    pub startup: bool,
    /// `result` is cut: the event holds the first bytes of its JSON as a
    /// string (the model read all of it).
    #[serde(default, skip_serializing_if = "is_false")]
    pub truncated: bool,
    /// `workflow` for a workflow's action node (not the model's call).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
    /// Result assignments that found no value at their path (the
    /// variable kept its value).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub assignment_errors: Vec<String>,
}

impl ToolCompleted {
    /// A call that ran: `result` is what the model was shown.
    pub fn new(call_id: &str, name: &str, is_error: bool, result: Value) -> Self {
        Self {
            call_id: call_id.to_owned(),
            name: name.to_owned(),
            is_error,
            result: Some(result),
            cancelled: false,
            startup: false,
            truncated: false,
            origin: None,
            assignment_errors: Vec::new(),
        }
    }

    /// At most `max_bytes` of result: a result whose JSON is longer becomes
    /// the first `max_bytes` of that JSON (on a character boundary) as a
    /// string, marked `truncated`.
    pub fn capped(mut self, max_bytes: usize) -> Self {
        if let Some(result) = &self.result {
            let text = result.to_string();
            if text.len() > max_bytes {
                let mut end = max_bytes;
                while !text.is_char_boundary(end) {
                    end -= 1;
                }
                self.result = Some(Value::String(text[..end].to_owned()));
                self.truncated = true;
            }
        }
        self
    }

    /// A call that did not run to its end.
    pub fn cancelled(call_id: &str, name: &str) -> Self {
        Self {
            call_id: call_id.to_owned(),
            name: name.to_owned(),
            is_error: true,
            result: None,
            cancelled: true,
            startup: false,
            truncated: false,
            origin: None,
            assignment_errors: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClientToolCall {
    pub call_id: String,
    pub function_name: String,
    #[schema(value_type = Object)]
    pub arguments: Value,
    /// Whether the client must answer with `client_tool.result`.
    pub wait_for_response: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TodoUpdated {
    pub todos: Vec<TodoItem>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StateUpdated {
    /// The variables that changed, with their new values.
    #[schema(value_type = Object)]
    pub changes: Map<String, Value>,
    /// Every variable after the change.
    #[schema(value_type = Object)]
    pub variables: Map<String, Value>,
    /// `system`, `updateState`, or `tool:<name>`.
    pub source: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AskUserQuestion {
    pub call_id: String,
    pub questions: Vec<AskQuestion>,
    /// The sub-agent that asks, when the question reaches the root's user.
    #[serde(default)]
    pub sub_session_id: Option<String>,
    #[serde(default)]
    pub sub_session_title: Option<String>,
    /// A voice host hears the questions, one at a time; the first is the
    /// audio item `itemId`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub spoken: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub item_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AskUserAnswered {
    pub call_id: String,
    /// The answers as the model reads them, one per question.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answers: Option<Vec<String>>,
    /// The user wrote a message instead of answering.
    #[serde(default, skip_serializing_if = "is_false")]
    pub dismissed: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_session_title: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubAgentStarted {
    pub sub_session_id: String,
    pub title: String,
    /// `async` or `sync`.
    pub mode: String,
    pub parent_session_id: String,
    pub depth: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubAgentCompleted {
    pub sub_session_id: String,
    #[serde(default)]
    pub title: Option<String>,
    /// `completed`, `ended` or `stopped` (by its parent or the host).
    pub status: String,
    /// Its last words; absent when it was stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<String>,
    /// Why it was stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct GoalUpdated {
    pub goal: Goal,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct LoopUpdated {
    #[serde(rename = "loop")]
    pub loop_: Loop,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemoryUpdated {
    /// `saved`, `updated` or `deleted`.
    pub action: String,
    pub memory_id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct HandoffRequested {
    #[serde(default)]
    pub reason: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct HandoffReleased {}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowNodeEntered {
    pub node_id: String,
    /// The node's type (`agent`, `action`, `updateState`, `transfer`,
    /// `end`); named `nodeType` because `type` is the event's own.
    pub node_type: String,
    /// The edge taken; `null` for the start node.
    #[serde(default)]
    pub edge_id: Option<String>,
    /// Which entry of this node in the session this is (from 1).
    pub visit: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowEvaluated {
    pub node_id: String,
    /// The edge taken; `null` when none held (the session stays).
    #[serde(default)]
    pub taken: Option<String>,
    /// The judge's verdict per `llm` edge; `null` when no judge was asked.
    #[serde(default)]
    pub llm: Option<std::collections::BTreeMap<String, bool>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskStarted {
    pub task_id: String,
    pub title: String,
    pub backend_id: String,
    pub backend_type: crate::TaskBackendType,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskUpdated {
    pub task_id: String,
    /// What the backend is doing now.
    pub detail: String,
    /// Model calls a reasoner task made so far.
    pub steps: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskCompleted {
    pub task_id: String,
    pub title: String,
    /// `completed`, `failed` or `cancelled`.
    pub status: crate::TaskStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ErrorEvent {
    /// Stable machine-readable code, e.g. `llm_failed`.
    pub code: String,
    pub message: String,
}

impl EventBody {
    /// An `error` event.
    pub fn error(code: &str, message: impl Into<String>) -> Self {
        Self::Error(ErrorEvent {
            code: code.to_owned(),
            message: message.into(),
        })
    }
}

/// A frame a client sends on the WebSocket (R-API-5).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type")]
pub enum ClientFrame {
    /// The functions this client runs (replaces earlier declarations).
    #[serde(rename = "client.hello")]
    Hello(ClientHello),
    /// A user turn, as `POST …/messages`.
    #[serde(rename = "user.message")]
    UserMessage(UserMessageFrame),
    /// The answer to a `client_tool.call`.
    #[serde(rename = "client_tool.result")]
    ClientToolResult(ClientToolResult),
    /// Answers to a pending askUser question, as `POST …/answers`.
    #[serde(rename = "ask_user.answer")]
    AskUserAnswer(AskUserAnswerFrame),
    /// Replay the events after `afterSeq`, then live.
    #[serde(rename = "resume")]
    Resume(ResumeFrame),
    /// User audio (realtime sessions).
    #[serde(rename = "audio.append")]
    AudioAppend(AudioAppendFrame),
    /// The user finished speaking (realtime, turn detection `none`).
    #[serde(rename = "audio.commit")]
    AudioCommit(AudioCommitFrame),
    /// How much of an item the host played before the user spoke.
    #[serde(rename = "playback.interrupted")]
    PlaybackInterrupted(PlaybackInterruptedFrame),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClientHello {
    #[serde(default)]
    pub client_tools: Vec<DeclaredClientTool>,
    /// A realtime session's audio rates on the host's side; the
    /// provider's rates when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audio: Option<HelloAudio>,
}

/// PCM16 mono rates the host sends and wants to receive.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HelloAudio {
    /// 16000 or 24000.
    pub input_rate: u32,
    /// 16000 or 24000.
    pub output_rate: u32,
}

/// User audio for a realtime session: base64 PCM16 mono at the host's
/// input rate; not stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct AudioAppendFrame {
    pub audio: String,
}

/// The end of the user's audio turn (turn detection `none` only).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct AudioCommitFrame {}

/// The host stopped playing `itemId` after `playedMs` (barge-in).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlaybackInterruptedFrame {
    pub item_id: String,
    pub played_ms: u32,
}

/// A function a client runs: its name, or its name with the hash of the
/// parameter schema it implements (R-BX-9).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum DeclaredClientTool {
    Name(String),
    #[serde(rename_all = "camelCase")]
    WithSchema {
        name: String,
        #[serde(default)]
        schema_hash: Option<String>,
    },
}

impl DeclaredClientTool {
    /// `(name, schema hash)`.
    pub fn into_parts(self) -> (String, Option<String>) {
        match self {
            Self::Name(name) => (name, None),
            Self::WithSchema { name, schema_hash } => (name, schema_hash),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct UserMessageFrame {
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AskUserAnswerFrame {
    /// The askUser call answered; defaults to the pending one.
    #[serde(default)]
    pub call_id: Option<String>,
    pub answers: Answers,
}

impl From<AskUserAnswerFrame> for AnswerParams {
    fn from(f: AskUserAnswerFrame) -> Self {
        Self {
            call_id: f.call_id,
            answers: f.answers,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClientToolResult {
    pub call_id: String,
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub result: Option<Value>,
    /// Set when the function failed: a message for the model.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub error: Option<Value>,
}

impl ClientToolResult {
    /// `Ok(result)` or `Err(message)`.
    pub fn into_reply(self) -> Result<Value, String> {
        match self.error {
            Some(Value::String(e)) => Err(e),
            Some(e) if !e.is_null() => Err(e.to_string()),
            _ => Ok(self.result.unwrap_or(Value::Null)),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResumeFrame {
    #[serde(default)]
    pub after_seq: i64,
}

/// An error the server sends on the WebSocket: the codes and messages of
/// the HTTP errors (R-API-2), never a server fault's details.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ErrorFrame {
    /// Always `error`.
    #[serde(rename = "type")]
    pub kind: String,
    pub code: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

impl ErrorFrame {
    pub fn new(code: &str, message: impl Into<String>, field: Option<String>) -> Self {
        Self {
            kind: "error".to_owned(),
            code: code.to_owned(),
            message: message.into(),
            field,
        }
    }
}

#[cfg(test)]
#[path = "events_tests.rs"]
mod tests;
