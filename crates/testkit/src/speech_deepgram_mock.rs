//! A mock Deepgram streaming STT (design `voice-pipeline.md` §1.3, §4(i)):
//! a WebSocket server on 127.0.0.1 at `/v1/listen` that checks the
//! handshake (`Authorization: Token <key>`, `encoding=linear16`, a
//! `sample_rate`), segments binary audio by RMS in audio time
//! (`speech_deepgram_listen.rs`), answers `SpeechStarted`, interim and
//! final `Results`, `UtteranceEnd`, the `from_finalize` result of
//! `Finalize`, takes `KeepAlive`, closes an idle socket after 10 s with
//! `1011 NET-0001`, and answers `CloseStream` with `Metadata` and a normal
//! close. Every handshake, client frame and server message is logged. On
//! demand it refuses handshakes (e.g. HTTP 500) or closes sockets.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::http::StatusCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

use crate::realtime_mock::lock;
use crate::speech_audio::PilotMap;
use crate::speech_deepgram_listen::{Ear, ListenParams, Listener};

/// The close reason of an idle socket.
pub const NET_0001: &str = "NET-0001: Deepgram did not receive audio data or a text message \
                            within the timeout window. See https://dpgr.am/net0001";

/// One handshake the mock saw.
#[derive(Debug, Clone, PartialEq)]
pub struct DeepgramConnection {
    pub index: usize,
    pub path: String,
    pub query: BTreeMap<String, String>,
    pub authorization: Option<String>,
    /// The upgrade was accepted.
    pub accepted: bool,
    /// How the socket ended: `(code, reason)` of the close sent by the mock,
    /// or `None` while open or when the client went away first.
    pub closed_by_mock: Option<(u16, String)>,
    /// The client closed (or dropped) the socket.
    pub client_left: bool,
}

/// A frame a client sent.
#[derive(Debug, Clone, PartialEq)]
pub enum DeepgramFrame {
    /// Binary audio: its byte count.
    Audio(usize),
    /// A text frame (`KeepAlive`, `Finalize`, `CloseStream`, …).
    Text(Value),
}

/// A logged client frame.
#[derive(Debug, Clone)]
pub struct LoggedFrame {
    pub connection: usize,
    pub at: Instant,
    pub frame: DeepgramFrame,
}

struct Knobs {
    transcripts: PilotMap,
    unmatched: String,
    speech_rms: f64,
    interim_every_ms: u64,
    idle_timeout: Duration,
    finalize_empty_answers: bool,
    refuse: Option<(u16, String)>,
}

#[derive(Default)]
struct MockState {
    connections: Vec<DeepgramConnection>,
    frames: Vec<LoggedFrame>,
    sent: Vec<(usize, Value)>,
}

struct Shared {
    key: String,
    knobs: Mutex<Knobs>,
    state: Mutex<MockState>,
    changed: Notify,
    close: watch::Sender<Option<(u16, String)>>,
}

impl Shared {
    fn update(&self, f: impl FnOnce(&mut MockState)) {
        f(&mut lock(&self.state));
        self.changed.notify_waiters();
    }
}

/// The running mock; stops (dropping its sockets) when dropped.
pub struct DeepgramMock {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: JoinHandle<()>,
}

impl Drop for DeepgramMock {
    fn drop(&mut self) {
        self.accept.abort();
        self.shared
            .close
            .send_replace(Some((1001, "going away".into())));
    }
}

impl DeepgramMock {
    /// Start expecting `Authorization: Token <api_key>`.
    pub async fn start(api_key: &str, transcripts: PilotMap) -> anyhow::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            key: api_key.to_owned(),
            knobs: Mutex::new(Knobs {
                transcripts,
                unmatched: String::new(),
                speech_rms: crate::SPEECH_RMS,
                interim_every_ms: 400,
                idle_timeout: Duration::from_secs(10),
                finalize_empty_answers: false,
                refuse: None,
            }),
            state: Mutex::new(MockState::default()),
            changed: Notify::new(),
            close: watch::channel(None).0,
        });
        let accept = tokio::spawn(accept_loop(listener, shared.clone()));
        Ok(Self {
            addr,
            shared,
            accept,
        })
    }

    /// `ws://127.0.0.1:<port>`, the interface's `url` (the client adds `/v1/listen`).
    pub fn url(&self) -> String {
        format!("ws://{}", self.addr)
    }

    fn knobs(&self, f: impl FnOnce(&mut Knobs)) {
        f(&mut lock(&self.shared.knobs));
    }

    pub fn set_transcripts(&self, transcripts: PilotMap) {
        self.knobs(|k| k.transcripts = transcripts);
    }

    /// The transcript of speech without a known pilot (default empty).
    pub fn set_unmatched(&self, text: &str) {
        self.knobs(|k| k.unmatched = text.to_owned());
    }

    /// Close sockets idle this long with `1011 NET-0001` (default 10 s).
    pub fn set_idle_timeout(&self, idle: Duration) {
        self.knobs(|k| k.idle_timeout = idle);
    }

    /// Interim results every this many ms of speech (default 400).
    pub fn set_interim_every(&self, ms: u64) {
        self.knobs(|k| k.interim_every_ms = ms.max(10));
    }

    /// RMS above which a 10 ms window is speech (default 500).
    pub fn set_speech_rms(&self, rms: f64) {
        self.knobs(|k| k.speech_rms = rms);
    }

    /// Whether `Finalize` with nothing pending answers an empty
    /// `from_finalize` result (default false: no answer, unverified upstream).
    pub fn set_finalize_empty_answers(&self, answers: bool) {
        self.knobs(|k| k.finalize_empty_answers = answers);
    }

    /// Refuse every handshake with this status and body (`None`: accept).
    pub fn refuse_handshakes(&self, refusal: Option<(u16, &str)>) {
        self.knobs(|k| k.refuse = refusal.map(|(s, b)| (s, b.to_owned())));
    }

    /// Close every open socket with `code` and `reason`.
    pub fn close_all(&self, code: u16, reason: &str) {
        self.shared
            .close
            .send_replace(Some((code, reason.to_owned())));
    }

    pub fn connections(&self) -> Vec<DeepgramConnection> {
        lock(&self.shared.state).connections.clone()
    }

    /// Every client frame, in arrival order.
    pub fn frames(&self) -> Vec<LoggedFrame> {
        lock(&self.shared.state).frames.clone()
    }

    /// The text frames of one `type` a client sent.
    pub fn text_frames(&self, ty: &str) -> Vec<Value> {
        self.frames()
            .into_iter()
            .filter_map(|f| match f.frame {
                DeepgramFrame::Text(v) if v["type"] == ty => Some(v),
                _ => None,
            })
            .collect()
    }

    /// Bytes of audio received on all connections.
    pub fn audio_bytes(&self) -> usize {
        self.frames()
            .iter()
            .map(|f| match f.frame {
                DeepgramFrame::Audio(n) => n,
                DeepgramFrame::Text(_) => 0,
            })
            .sum()
    }

    /// Every message the mock sent, with its connection.
    pub fn sent(&self) -> Vec<(usize, Value)> {
        lock(&self.shared.state).sent.clone()
    }

    /// Wait until `pred` holds for the connections, or fail after `timeout`.
    pub async fn wait_for(
        &self,
        pred: impl Fn(&[DeepgramConnection], &[LoggedFrame]) -> bool,
        timeout: Duration,
    ) -> anyhow::Result<()> {
        crate::realtime_mock::wait_until(
            &self.shared.changed,
            || {
                let st = lock(&self.shared.state);
                pred(&st.connections, &st.frames)
            },
            timeout,
            "Deepgram mock",
        )
        .await
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    while let Ok((tcp, _)) = listener.accept().await {
        tokio::spawn(serve(tcp, shared.clone()));
    }
}

fn refusal(status: u16, body: Value) -> ErrorResponse {
    let mut r = ErrorResponse::new(Some(body.to_string()));
    *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST);
    r
}

async fn serve(tcp: TcpStream, shared: Arc<Shared>) {
    let index = {
        let mut st = lock(&shared.state);
        let index = st.connections.len();
        st.connections.push(DeepgramConnection {
            index,
            path: String::new(),
            query: BTreeMap::new(),
            authorization: None,
            accepted: false,
            closed_by_mock: None,
            client_left: false,
        });
        index
    };
    let request_id = format!("mock-request-{index}");
    let mut params = None;
    let refuse = lock(&shared.knobs).refuse.clone();
    #[allow(
        clippy::result_large_err,
        reason = "tungstenite's handshake callback signature"
    )]
    let check = |req: &Request, resp: Response| -> Result<Response, ErrorResponse> {
        let query: BTreeMap<String, String> = req
            .uri()
            .query()
            .map(|q| {
                url::form_urlencoded::parse(q.as_bytes())
                    .into_owned()
                    .collect()
            })
            .unwrap_or_default();
        let authorization = req
            .headers()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let path = req.uri().path().to_owned();
        shared.update(|st| {
            let c = &mut st.connections[index];
            (c.path, c.query, c.authorization) =
                (path.clone(), query.clone(), authorization.clone());
        });
        let bad = |msg: &str| json!({"err_code": "Bad Request", "err_msg": msg, "request_id": request_id});
        if path != "/v1/listen" {
            return Err(refusal(404, bad("no such path")));
        }
        if authorization.as_deref() != Some(format!("Token {}", shared.key).as_str()) {
            return Err(refusal(
                401,
                json!({"err_code": "INVALID_AUTH",
                "err_msg": "Invalid credentials.", "request_id": request_id}),
            ));
        }
        if let Some((status, body)) = &refuse {
            return Err(refusal(*status, bad(body)));
        }
        params = Some(ListenParams::parse(&query).map_err(|e| refusal(400, bad(&e)))?);
        Ok(resp)
    };
    let Ok(mut ws) = tokio_tungstenite::accept_hdr_async(tcp, check).await else {
        shared.changed.notify_waiters();
        return;
    };
    let Some(params) = params else { return };
    shared.update(|st| st.connections[index].accepted = true);
    let mut listener = Listener::new(params, request_id);
    let mut close = shared.close.subscribe();
    close.mark_unchanged();
    let mut last_activity = tokio::time::Instant::now();
    let ending: Option<(u16, String)> = loop {
        let idle = lock(&shared.knobs).idle_timeout;
        let incoming = tokio::select! {
            incoming = ws.next() => incoming,
            () = tokio::time::sleep_until(last_activity + idle) => break Some((1011, NET_0001.into())),
            _ = close.changed() => break close.borrow().clone(),
        };
        last_activity = tokio::time::Instant::now();
        let (frame, replies, then_close) = match incoming {
            Some(Ok(Message::Binary(audio))) => {
                let replies = with_ear(&shared, |ear| listener.audio(&audio, ear));
                (DeepgramFrame::Audio(audio.len()), replies, false)
            }
            Some(Ok(Message::Text(text))) => {
                let value: Value =
                    serde_json::from_str(&text).unwrap_or(json!({"raw": text.as_str()}));
                let (replies, then_close) = match value["type"].as_str() {
                    Some("Finalize") => (with_ear(&shared, |ear| listener.finalize(ear)), false),
                    Some("CloseStream") => (with_ear(&shared, |ear| listener.close(ear)), true),
                    _ => (Vec::new(), false),
                };
                (DeepgramFrame::Text(value), replies, then_close)
            }
            Some(Ok(Message::Close(_))) | None | Some(Err(_)) => break None,
            Some(Ok(_)) => continue,
        };
        shared.update(|st| {
            st.frames.push(LoggedFrame {
                connection: index,
                at: Instant::now(),
                frame,
            });
        });
        for reply in replies {
            shared.update(|st| st.sent.push((index, reply.clone())));
            if ws.send(Message::text(reply.to_string())).await.is_err() {
                break;
            }
        }
        if then_close {
            break Some((1000, String::new()));
        }
    };
    match ending {
        Some((code, reason)) => {
            let frame = CloseFrame {
                code: CloseCode::from(code),
                reason: reason.clone().into(),
            };
            let _ = ws.close(Some(frame)).await;
            shared.update(|st| st.connections[index].closed_by_mock = Some((code, reason)));
        }
        None => shared.update(|st| st.connections[index].client_left = true),
    }
}

fn with_ear<T>(shared: &Shared, f: impl FnOnce(&Ear<'_>) -> T) -> T {
    let knobs = lock(&shared.knobs);
    let transcript = |pilot: Option<u32>| {
        pilot
            .and_then(|p| knobs.transcripts.get(&p).cloned())
            .unwrap_or_else(|| knobs.unmatched.clone())
    };
    let ear = Ear {
        speech_rms: knobs.speech_rms,
        interim_every_ms: knobs.interim_every_ms,
        finalize_empty_answers: knobs.finalize_empty_answers,
        transcript: &transcript,
    };
    f(&ear)
}
