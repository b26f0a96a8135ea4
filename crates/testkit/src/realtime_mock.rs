//! A mock realtime (speech-to-speech) provider for tests (design
//! `realtime.md` §5d): a WebSocket server on 127.0.0.1 speaking raw JSON in
//! the GA (OpenAI) or beta (Qwen, StepFun) event names. It checks the bearer
//! key (HTTP 401 otherwise), merges `session.update`s, detects speech by
//! RMS on appended audio (300 ms of audio-time silence ends a turn), plays
//! scripted responses ([`RealtimeScript`]), enforces the real servers'
//! rules with `error` frames, and logs every client frame.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, mpsc, watch};
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::http::StatusCode;

use crate::realtime_mock_conn::{Conn, Out};
pub use crate::realtime_mock_script::{RealtimeScript, ScriptedResponse, Step, rms as pcm16_rms};

/// Which provider the mock imitates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RealtimeFlavor {
    /// GA event names, `conversation.item.truncate`, 24/24 kHz.
    OpenaiGa,
    /// Beta names, 16/24 kHz, no truncate.
    Qwen,
    /// Beta names, 24/24 kHz, no truncate, turn detection off until sent.
    Stepfun,
}

impl RealtimeFlavor {
    pub(crate) fn ga(self) -> bool {
        self == Self::OpenaiGa
    }

    pub(crate) fn rates(self) -> (u32, u32) {
        match self {
            Self::Qwen => (16_000, 24_000),
            Self::OpenaiGa | Self::Stepfun => (24_000, 24_000),
        }
    }

    fn initial_session(self, id: &str, model: &str) -> Value {
        let vad = json!({"type": "server_vad", "threshold": 0.5, "prefix_padding_ms": 300,
            "silence_duration_ms": 500, "create_response": true, "interrupt_response": true});
        let (input, output) = self.rates();
        match self {
            Self::OpenaiGa => json!({"id": id, "object": "realtime.session", "type": "realtime",
                "model": model, "instructions": "", "output_modalities": ["audio"], "tools": [],
                "audio": {"input": {"format": {"type": "audio/pcm", "rate": input}, "turn_detection": vad},
                          "output": {"format": {"type": "audio/pcm", "rate": output}, "voice": "alloy"}}}),
            Self::Qwen => json!({"id": id, "model": model, "modalities": ["text", "audio"],
                "input_audio_format": "pcm", "output_audio_format": "pcm", "turn_detection": vad, "tools": []}),
            Self::Stepfun => json!({"id": id, "model": model, "modalities": ["text", "audio"],
                "input_audio_format": "pcm16", "output_audio_format": "pcm16", "turn_detection": null, "tools": []}),
        }
    }
}

/// The event names that differ between GA and beta.
pub(crate) struct Names {
    pub(crate) audio_delta: &'static str,
    pub(crate) transcript_delta: &'static str,
    pub(crate) transcript_done: &'static str,
    pub(crate) item_created: &'static str,
    pub(crate) audio_content: &'static str,
}

pub(crate) const GA: Names = Names {
    audio_delta: "response.output_audio.delta",
    transcript_delta: "response.output_audio_transcript.delta",
    transcript_done: "response.output_audio_transcript.done",
    item_created: "conversation.item.added",
    audio_content: "output_audio",
};

pub(crate) const BETA: Names = Names {
    audio_delta: "response.audio.delta",
    transcript_delta: "response.audio_transcript.delta",
    transcript_done: "response.audio_transcript.done",
    item_created: "conversation.item.created",
    audio_content: "audio",
};

/// One client frame as received, with the connection it came on.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientFrame {
    pub connection: usize,
    pub frame: Value,
}

/// One WebSocket handshake the mock saw.
#[derive(Debug, Clone, PartialEq)]
pub struct MockConnection {
    pub index: usize,
    /// The `model` query parameter.
    pub model: Option<String>,
    /// Whether the bearer key matched (a refused one got HTTP 401).
    pub authorized: bool,
}

/// RMS (PCM16 scale) above which an appended chunk counts as speech.
pub const SPEECH_RMS: f64 = 500.0;
/// Audio-time silence that ends a user turn.
pub(crate) const SILENCE_MS: u64 = 300;

pub(crate) struct Shared {
    pub(crate) flavor: RealtimeFlavor,
    api_key: String,
    pub(crate) state: Mutex<State>,
    pub(crate) changed: Notify,
    close: watch::Sender<u64>,
}

#[derive(Default)]
pub(crate) struct State {
    log: Vec<ClientFrame>,
    connections: Vec<MockConnection>,
    pub(crate) script: RealtimeScript,
    pub(crate) used: Vec<bool>,
    pub(crate) user_turns: usize,
    pub(crate) last_user: Option<String>,
    pub(crate) audio_ms: f64,
    pub(crate) next_id: u64,
    pub(crate) sessions: HashMap<usize, Value>,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Wait until `holds` (read under the mock's lock) is true, woken by
/// `changed` each time the mock's log changes, or fail after `timeout`
/// naming `mock`. Shared by every mock with a log.
pub(crate) async fn wait_until(
    changed: &Notify,
    holds: impl Fn() -> bool,
    timeout: Duration,
    mock: &str,
) -> anyhow::Result<()> {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let notified = changed.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if holds() {
            return Ok(());
        }
        if tokio::time::timeout_at(deadline, notified).await.is_err() {
            anyhow::bail!("the {mock} did not reach the expected state within {timeout:?}");
        }
    }
}

/// The running mock; stops (and drops its connections) when dropped.
pub struct RealtimeMock {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: JoinHandle<()>,
}

impl RealtimeMock {
    /// Start on 127.0.0.1:0 expecting `Authorization: Bearer <api_key>`;
    /// `script` is a [`RealtimeScript`] in JSON.
    pub async fn start(
        flavor: RealtimeFlavor,
        api_key: &str,
        script: Value,
    ) -> anyhow::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            flavor,
            api_key: api_key.to_owned(),
            state: Mutex::new(State::default()),
            changed: Notify::new(),
            close: watch::channel(0).0,
        });
        let mock = Self {
            addr,
            shared: shared.clone(),
            accept: tokio::spawn(accept_loop(listener, shared)),
        };
        mock.set_script(script)?;
        Ok(mock)
    }

    /// `ws://127.0.0.1:<port>/v1/realtime` (the client adds `?model=`).
    pub fn url(&self) -> String {
        format!("ws://{}/v1/realtime", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Replace the script; responses and user turns count from the start.
    pub fn set_script(&self, script: Value) -> anyhow::Result<()> {
        let script: RealtimeScript = serde_json::from_value(script)?;
        let mut st = lock(&self.shared.state);
        st.used = vec![false; script.responses.len()];
        st.script = script;
        st.user_turns = 0;
        st.last_user = None;
        Ok(())
    }

    /// Every client frame so far, in arrival order.
    pub fn log(&self) -> Vec<ClientFrame> {
        lock(&self.shared.state).log.clone()
    }

    /// The client frames of one `type`.
    pub fn frames_of_type(&self, ty: &str) -> Vec<Value> {
        lock(&self.shared.state)
            .log
            .iter()
            .filter(|f| f.frame["type"] == ty)
            .map(|f| f.frame.clone())
            .collect()
    }

    pub fn connections(&self) -> Vec<MockConnection> {
        lock(&self.shared.state).connections.clone()
    }

    /// The merged session state of a connection.
    pub fn session(&self, connection: usize) -> Option<Value> {
        lock(&self.shared.state).sessions.get(&connection).cloned()
    }

    /// Milliseconds of input audio appended so far (all connections).
    pub fn audio_ms_received(&self) -> u64 {
        lock(&self.shared.state).audio_ms as u64
    }

    /// Wait until `pred` holds for the log, or fail after `timeout`.
    pub async fn wait_for(
        &self,
        pred: impl Fn(&[ClientFrame]) -> bool,
        timeout: Duration,
    ) -> anyhow::Result<()> {
        crate::realtime_mock::wait_until(
            &self.shared.changed,
            || pred(&lock(&self.shared.state).log),
            timeout,
            "mock log",
        )
        .await
    }

    /// Close every open connection (with a close frame).
    pub fn close_all(&self) {
        self.shared.close.send_modify(|n| *n += 1);
    }
}

impl Drop for RealtimeMock {
    fn drop(&mut self) {
        self.close_all();
        self.accept.abort();
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    while let Ok((tcp, _)) = listener.accept().await {
        tokio::spawn(serve(tcp, shared.clone()));
    }
}

async fn serve(tcp: TcpStream, shared: Arc<Shared>) {
    let expected = format!("Bearer {}", shared.api_key);
    let mut model = None;
    let mut authorized = false;
    // The signature is tungstenite's handshake callback.
    #[allow(
        clippy::result_large_err,
        reason = "tungstenite's handshake callback signature"
    )]
    let check = |req: &Request, resp: Response| -> Result<Response, ErrorResponse> {
        model = req.uri().query().and_then(|q| {
            url::form_urlencoded::parse(q.as_bytes())
                .find(|(k, _)| k == "model")
                .map(|(_, v)| v.into_owned())
        });
        authorized = req
            .headers()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            == Some(expected.as_str());
        if authorized {
            return Ok(resp);
        }
        let mut refusal = ErrorResponse::new(Some("invalid api key".to_owned()));
        *refusal.status_mut() = StatusCode::UNAUTHORIZED;
        Err(refusal)
    };
    let ws = tokio_tungstenite::accept_hdr_async(tcp, check).await;
    let index = {
        let mut st = lock(&shared.state);
        let index = st.connections.len();
        st.connections.push(MockConnection {
            index,
            model: model.clone(),
            authorized,
        });
        index
    };
    shared.changed.notify_waiters();
    let Ok(mut ws) = ws else { return };
    let (out, mut outgoing) = mpsc::unbounded_channel();
    let session_id = format!("sess_mock_{index}");
    let session = shared
        .flavor
        .initial_session(&session_id, model.as_deref().unwrap_or_default());
    lock(&shared.state).sessions.insert(index, session.clone());
    let conn = Arc::new(Conn::new(index, shared.clone(), out, session.clone()));
    let created =
        json!({"type": "session.created", "event_id": conn.new_id("event"), "session": session});
    let mut close = shared.close.subscribe();
    if ws.send(Message::text(created.to_string())).await.is_err() {
        return;
    }
    loop {
        tokio::select! {
            incoming = ws.next() => match incoming {
                Some(Ok(Message::Text(text))) => {
                    let Ok(frame) = serde_json::from_str::<Value>(&text) else { continue };
                    {
                        let mut st = lock(&shared.state);
                        st.log.push(ClientFrame { connection: index, frame: frame.clone() });
                    }
                    shared.changed.notify_waiters();
                    conn.handle(&frame);
                }
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => break,
                Some(Ok(_)) => {}
            },
            next = outgoing.recv() => match next {
                Some(Out::Frame { response, frame }) => {
                    let cancelled = response.is_some_and(|r| conn.is_cancelled(&r));
                    if !cancelled && ws.send(Message::text(frame.to_string())).await.is_err() {
                        break;
                    }
                }
                Some(Out::Drop) | None => break,
            },
            _ = close.changed() => {
                let _ = ws.close(None).await;
                break;
            }
        }
    }
    conn.stop();
}
