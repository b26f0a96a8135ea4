//! A mock ElevenLabs `stream-input` TTS (design `voice-pipeline.md` §1.4,
//! §4(i)): a WebSocket server on 127.0.0.1 at
//! `/v1/text-to-speech/{voice}/stream-input` that checks `xi-api-key`
//! (header, or `xi_api_key` in the BOS), `model_id` and `output_format=
//! pcm_<rate>`; requires the BOS text to be exactly `" "`; buffers text by
//! `chunk_length_schedule` (default `[120,160,250,290]`) unless
//! `auto_mode=true`, generates on `flush` and at the EOS `{"text":""}`,
//! then sends `{"isFinal":true}` and closes. Audio is a 440 Hz tone of
//! 20 ms per non-whitespace character, one `AudioOutput` per word with its
//! `alignment` (with `sync_alignment=true`) relative to that message. It
//! closes an idle socket after `inactivity_timeout` (default 20 s). Every
//! handshake and frame is logged; on demand it delays its first audio or
//! closes mid-item.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine as _;
use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::http::StatusCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

use crate::realtime_mock::lock;
use crate::speech_audio::tts_tone;

const RATES: [u32; 5] = [8_000, 16_000, 22_050, 24_000, 44_100];
const DEFAULT_SCHEDULE: [usize; 4] = [120, 160, 250, 290];

/// One handshake the mock saw, and how its socket ended.
#[derive(Debug, Clone, PartialEq)]
pub struct ElevenLabsConnection {
    pub index: usize,
    pub path: String,
    /// The `{voice}` of the path.
    pub voice: Option<String>,
    pub query: BTreeMap<String, String>,
    /// The `xi-api-key` header matched.
    pub header_key_ok: bool,
    /// `(code, reason)` of the close the mock sent.
    pub closed_by_mock: Option<(u16, String)>,
    /// The client closed (or dropped) the socket first.
    pub client_left: bool,
    /// The mock sent `isFinal`.
    pub finished: bool,
}

/// A client text frame, with its connection.
#[derive(Debug, Clone)]
pub struct ElevenLabsFrame {
    pub connection: usize,
    pub at: Instant,
    pub frame: Value,
}

#[derive(Default)]
struct Knobs {
    /// How long the WebSocket handshake takes (a real one pays TLS and
    /// the distance).
    handshake_delay: Duration,
    first_audio_delay: Duration,
    pace: Duration,
    close_after_audio: Option<(usize, u16, String)>,
}

#[derive(Default)]
struct MockState {
    connections: Vec<ElevenLabsConnection>,
    frames: Vec<ElevenLabsFrame>,
    /// `(connection, text generated)` per generation.
    generations: Vec<(usize, String)>,
    audio_messages: usize,
}

struct Shared {
    key: String,
    knobs: Mutex<Knobs>,
    state: Mutex<MockState>,
    changed: Notify,
}

impl Shared {
    fn update(&self, f: impl FnOnce(&mut MockState)) {
        f(&mut lock(&self.state));
        self.changed.notify_waiters();
    }
}

/// The running mock; stops when dropped.
pub struct ElevenLabsMock {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: JoinHandle<()>,
}

impl Drop for ElevenLabsMock {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

impl ElevenLabsMock {
    pub async fn start(api_key: &str) -> anyhow::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            key: api_key.to_owned(),
            knobs: Mutex::default(),
            state: Mutex::default(),
            changed: Notify::new(),
        });
        let task_shared = shared.clone();
        let accept = tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                tokio::spawn(serve(tcp, task_shared.clone()));
            }
        });
        Ok(Self {
            addr,
            shared,
            accept,
        })
    }

    /// `ws://127.0.0.1:<port>`, the interface's `url`.
    pub fn url(&self) -> String {
        format!("ws://{}", self.addr)
    }

    /// Answer each WebSocket handshake this late.
    pub fn set_handshake_delay(&self, delay: Duration) {
        lock(&self.shared.knobs).handshake_delay = delay;
    }

    /// Wait this long before a connection's first audio (a slow first byte).
    pub fn set_first_audio_delay(&self, delay: Duration) {
        lock(&self.shared.knobs).first_audio_delay = delay;
    }

    /// Wait this long between audio messages.
    pub fn set_pace(&self, pace: Duration) {
        lock(&self.shared.knobs).pace = pace;
    }

    /// Close each socket with `code` and `reason` after it sent `messages`
    /// audio messages (a socket closed mid-item); `None`: never.
    pub fn close_after_audio(&self, close: Option<(usize, u16, &str)>) {
        lock(&self.shared.knobs).close_after_audio = close.map(|(n, c, r)| (n, c, r.to_owned()));
    }

    pub fn connections(&self) -> Vec<ElevenLabsConnection> {
        lock(&self.shared.state).connections.clone()
    }

    /// Every client text frame, in arrival order.
    pub fn frames(&self) -> Vec<ElevenLabsFrame> {
        lock(&self.shared.state).frames.clone()
    }

    /// The frames of one connection.
    pub fn frames_of(&self, connection: usize) -> Vec<Value> {
        self.frames()
            .into_iter()
            .filter(|f| f.connection == connection)
            .map(|f| f.frame)
            .collect()
    }

    /// The texts generated, per generation, with their connection.
    pub fn generations(&self) -> Vec<(usize, String)> {
        lock(&self.shared.state).generations.clone()
    }

    /// Wait until `pred` holds for the connections, or fail after `timeout`.
    pub async fn wait_for(
        &self,
        pred: impl Fn(&[ElevenLabsConnection]) -> bool,
        timeout: Duration,
    ) -> anyhow::Result<()> {
        crate::realtime_mock::wait_until(
            &self.shared.changed,
            || pred(&lock(&self.shared.state).connections),
            timeout,
            "ElevenLabs mock",
        )
        .await
    }
}

/// The connection's settings from its query.
struct Stream {
    index: usize,
    rate: u32,
    auto_mode: bool,
    alignment: bool,
    schedule: Vec<usize>,
    generation: usize,
    buffer: String,
    audio_sent: usize,
}

enum Next {
    Go,
    Close(u16, String),
    Final,
}

async fn serve(tcp: TcpStream, shared: Arc<Shared>) {
    let index = {
        let mut st = lock(&shared.state);
        let index = st.connections.len();
        st.connections.push(ElevenLabsConnection {
            index,
            path: String::new(),
            voice: None,
            query: BTreeMap::new(),
            header_key_ok: false,
            closed_by_mock: None,
            client_left: false,
            finished: false,
        });
        index
    };
    #[allow(
        clippy::result_large_err,
        reason = "tungstenite's handshake callback signature"
    )]
    let check = |req: &Request, resp: Response| -> Result<Response, ErrorResponse> {
        let path = req.uri().path().to_owned();
        let voice = path
            .strip_prefix("/v1/text-to-speech/")
            .and_then(|rest| rest.strip_suffix("/stream-input"))
            .filter(|v| !v.is_empty() && !v.contains('/'))
            .map(str::to_owned);
        let query = req
            .uri()
            .query()
            .map(|q| {
                url::form_urlencoded::parse(q.as_bytes())
                    .into_owned()
                    .collect()
            })
            .unwrap_or_default();
        let key_ok = req
            .headers()
            .get("xi-api-key")
            .and_then(|v| v.to_str().ok())
            == Some(shared.key.as_str());
        let found = voice.is_some();
        shared.update(|st| {
            let c = &mut st.connections[index];
            (c.path, c.voice, c.query, c.header_key_ok) = (path, voice, query, key_ok);
        });
        if found {
            return Ok(resp);
        }
        let mut r = ErrorResponse::new(Some(r#"{"detail":"Not Found"}"#.to_owned()));
        *r.status_mut() = StatusCode::NOT_FOUND;
        Err(r)
    };
    let delay = lock(&shared.knobs).handshake_delay;
    tokio::time::sleep(delay).await;
    let Ok(mut ws) = tokio_tungstenite::accept_hdr_async(tcp, check).await else {
        shared.changed.notify_waiters();
        return;
    };
    let conn = lock(&shared.state).connections[index].clone();
    let q = |k: &str| conn.query.get(k).map(String::as_str);
    let inactivity = Duration::from_secs(
        q("inactivity_timeout")
            .and_then(|s| s.parse().ok())
            .unwrap_or(20),
    );
    let rate = q("output_format")
        .and_then(|f| f.strip_prefix("pcm_"))
        .and_then(|r| r.parse().ok())
        .filter(|r| RATES.contains(r));
    let mut stream = Stream {
        index,
        rate: rate.unwrap_or(0),
        auto_mode: q("auto_mode") == Some("true"),
        alignment: q("sync_alignment") == Some("true"),
        schedule: DEFAULT_SCHEDULE.to_vec(),
        generation: 0,
        buffer: String::new(),
        audio_sent: 0,
    };
    let refusal = if q("model_id").is_none_or(str::is_empty) {
        Some("model_id is required")
    } else if rate.is_none() {
        Some("the mock produces pcm_8000|16000|22050|24000|44100 only")
    } else {
        None
    };
    let mut bos_seen = false;
    let ending = loop {
        let incoming = tokio::select! {
            incoming = ws.next() => incoming,
            () = tokio::time::sleep(inactivity) => break Next::Close(1008, format!(
                "Have not received a new text input within the timeout of {}s", inactivity.as_secs())),
        };
        let frame: Value = match incoming {
            Some(Ok(Message::Text(text))) => {
                serde_json::from_str(&text).unwrap_or(json!({"raw": text.as_str()}))
            }
            Some(Ok(Message::Close(_))) | None | Some(Err(_)) => {
                shared.update(|st| st.connections[index].client_left = true);
                return;
            }
            Some(Ok(_)) => continue,
        };
        shared.update(|st| {
            st.frames.push(ElevenLabsFrame {
                connection: index,
                at: Instant::now(),
                frame: frame.clone(),
            })
        });
        let next = if !bos_seen {
            bos_seen = true;
            bos(&shared, &conn, &mut stream, &frame, refusal)
        } else {
            text(&shared, &mut ws, &mut stream, &frame).await
        };
        match next {
            Next::Go => {}
            other => break other,
        }
    };
    let (code, reason) = match ending {
        Next::Final => {
            shared.update(|st| st.connections[index].finished = true);
            (1000, String::new())
        }
        Next::Close(code, reason) => (code, reason),
        Next::Go => return,
    };
    let frame = CloseFrame {
        code: CloseCode::from(code),
        reason: reason.clone().into(),
    };
    let _ = ws.close(Some(frame)).await;
    shared.update(|st| st.connections[index].closed_by_mock = Some((code, reason)));
}

/// The first message: the key and exactly one space.
fn bos(
    shared: &Shared,
    conn: &ElevenLabsConnection,
    stream: &mut Stream,
    frame: &Value,
    refusal: Option<&str>,
) -> Next {
    let bos_key = frame["xi_api_key"].as_str() == Some(shared.key.as_str());
    if !conn.header_key_ok && !bos_key {
        return Next::Close(1008, "Invalid API key".into());
    }
    if let Some(refusal) = refusal {
        return Next::Close(1008, refusal.into());
    }
    if frame["text"].as_str() != Some(" ") {
        return Next::Close(
            1008,
            "The first message must be the BOS with text \" \"".into(),
        );
    }
    if let Some(schedule) = frame
        .pointer("/generation_config/chunk_length_schedule")
        .and_then(Value::as_array)
    {
        stream.schedule = schedule
            .iter()
            .filter_map(|n| n.as_u64().map(|n| n as usize))
            .collect();
    }
    Next::Go
}

/// A text message: buffer, maybe generate; the EOS ends the item.
async fn text(
    shared: &Shared,
    ws: &mut WebSocketStream<TcpStream>,
    stream: &mut Stream,
    frame: &Value,
) -> Next {
    let Some(text) = frame["text"].as_str() else {
        return Next::Close(1008, "a message needs text".into());
    };
    let eos = text.is_empty();
    stream.buffer.push_str(text);
    let due = stream
        .schedule
        .get(stream.generation)
        .or(stream.schedule.last())
        .copied();
    let generate = eos
        || stream.auto_mode
        || frame["flush"].as_bool() == Some(true)
        || due.is_some_and(|n| stream.buffer.chars().count() >= n);
    if generate && !stream.buffer.trim().is_empty() {
        let spoken = std::mem::take(&mut stream.buffer);
        stream.generation += 1;
        shared.update(|st| st.generations.push((stream.index, spoken.clone())));
        if let Next::Close(code, reason) = speak(shared, ws, stream, &spoken).await {
            return Next::Close(code, reason);
        }
    }
    if !eos {
        return Next::Go;
    }
    let _ = ws
        .send(Message::text(json!({"isFinal": true}).to_string()))
        .await;
    Next::Final
}

/// One `AudioOutput` per word (with the whitespace after it).
async fn speak(
    shared: &Shared,
    ws: &mut WebSocketStream<TcpStream>,
    stream: &mut Stream,
    text: &str,
) -> Next {
    let (first_delay, pace, close_after) = {
        let k = lock(&shared.knobs);
        (k.first_audio_delay, k.pace, k.close_after_audio.clone())
    };
    let mut words: Vec<String> = Vec::new();
    for c in text.trim_start().chars() {
        match words.last_mut() {
            Some(w)
                if c.is_whitespace() || w.chars().last().is_some_and(|l| !l.is_whitespace()) =>
            {
                w.push(c)
            }
            _ => words.push(c.to_string()),
        }
    }
    for word in words {
        if let Some((after, code, reason)) = &close_after
            && stream.audio_sent >= *after
        {
            return Next::Close(*code, reason.clone());
        }
        let delay = if stream.audio_sent == 0 {
            first_delay
        } else {
            pace
        };
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        let audio = base64::engine::general_purpose::STANDARD.encode(tts_tone(&word, stream.rate));
        let mut at = 0u64;
        let (mut chars, mut starts, mut lengths) = (Vec::new(), Vec::new(), Vec::new());
        for c in word.chars() {
            let len = if c.is_whitespace() {
                0
            } else {
                crate::speech_audio::TTS_MS_PER_CHAR
            };
            chars.push(c.to_string());
            starts.push(at);
            lengths.push(len);
            at += len;
        }
        let alignment =
            json!({"chars": chars, "charStartTimesMs": starts, "charDurationsMs": lengths});
        let (alignment, normalized) = if stream.alignment {
            (alignment.clone(), alignment)
        } else {
            (Value::Null, Value::Null)
        };
        let message = json!({"audio": audio, "isFinal": null, "normalizedAlignment": normalized,
            "alignment": alignment});
        if ws.send(Message::text(message.to_string())).await.is_err() {
            return Next::Close(1006, "the client went away".into());
        }
        stream.audio_sent += 1;
        shared.update(|st| st.audio_messages += 1);
    }
    Next::Go
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;

    async fn client(
        mock: &ElevenLabsMock,
        key: &str,
    ) -> anyhow::Result<WebSocketStream<TcpStream>> {
        let url = format!(
            "{}/v1/text-to-speech/v1/stream-input?model_id=m&output_format=pcm_16000",
            mock.url()
        );
        let mut request = url.into_client_request()?;
        request.headers_mut().insert("xi-api-key", key.parse()?);
        let tcp = TcpStream::connect(mock.addr).await?;
        Ok(tokio_tungstenite::client_async(request, tcp).await?.0)
    }

    async fn send(ws: &mut WebSocketStream<TcpStream>, frame: Value) -> anyhow::Result<()> {
        Ok(ws.send(Message::text(frame.to_string())).await?)
    }

    #[tokio::test]
    async fn without_auto_mode_text_waits_for_the_schedule_a_flush_or_the_eos() -> anyhow::Result<()>
    {
        let mock = ElevenLabsMock::start("k").await?;
        let mut ws = client(&mock, "k").await?;
        let bos = json!({"text": " ", "generation_config": {"chunk_length_schedule": [20]}});
        send(&mut ws, bos).await?;
        send(&mut ws, json!({"text": "Hello there "})).await?;
        send(&mut ws, json!({"text": "my friend, again "})).await?;
        send(&mut ws, json!({"text": "Bye "})).await?;
        send(&mut ws, json!({"text": "now ", "flush": true})).await?;
        send(&mut ws, json!({"text": "End "})).await?;
        send(&mut ws, json!({"text": ""})).await?;
        let mut audio = 0;
        let mut last = Value::Null;
        while let Some(Ok(Message::Text(text))) = ws.next().await {
            last = serde_json::from_str(&text)?;
            audio += usize::from(last["audio"].is_string());
        }
        assert_eq!(last, json!({"isFinal": true}));
        let generated: Vec<String> = mock.generations().into_iter().map(|g| g.1).collect();
        assert_eq!(
            generated,
            ["Hello there my friend, again ", "Bye now ", "End "]
        );
        assert_eq!(audio, 8, "one message per word");
        assert_eq!(
            mock.connections()[0].closed_by_mock,
            Some((1000, String::new()))
        );
        Ok(())
    }

    #[tokio::test]
    async fn the_first_message_must_be_one_space_and_the_key_must_match() -> anyhow::Result<()> {
        let mock = ElevenLabsMock::start("k").await?;
        for (key, bos, reason) in [
            (
                "k",
                json!({"text": "Hello "}),
                "The first message must be the BOS",
            ),
            ("x", json!({"text": " "}), "Invalid API key"),
            ("x", json!({"text": " ", "xi_api_key": "k"}), ""),
        ] {
            let mut ws = client(&mock, key).await?;
            send(&mut ws, bos).await?;
            send(&mut ws, json!({"text": ""})).await?;
            while let Some(Ok(_)) = ws.next().await {}
            let index = mock.connections().len() - 1;
            mock.wait_for(
                |c| c[index].closed_by_mock.is_some(),
                Duration::from_secs(5),
            )
            .await?;
            let (code, said) = mock.connections()[index]
                .closed_by_mock
                .clone()
                .unwrap_or_default();
            assert!(said.starts_with(reason), "{said}");
            assert_eq!(code, if reason.is_empty() { 1000 } else { 1008 });
        }
        Ok(())
    }
}
