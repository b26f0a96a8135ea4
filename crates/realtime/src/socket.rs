//! [`connect`]: the guarded WebSocket to a realtime provider and the
//! [`RealtimeAdapter`] over it; [`connect_guarded`], the guarded
//! WebSocket itself, is shared with the speech providers. The host is
//! resolved once and only addresses the
//! [`AddressPolicy`](rtc_tools::net_guard::AddressPolicy) permits are
//! dialled (no second resolution a rebinding name could change); `wss`
//! runs rustls (ring, webpki roots) over that very stream.
//! A reader task turns every provider frame into [`RtEvent`]s on a bounded
//! channel: audio is dropped when the channel is full, everything else
//! waits, and [`RtEvent::Closed`] comes last. The API key travels only in
//! the `Authorization` header, marked sensitive, and no error names it.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;
use std::time::Duration;

use futures::stream::{SplitSink, SplitStream};
use futures::{SinkExt, StreamExt};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};

use crate::codec::decode::{Decoder, Inbound};
use crate::codec::{self, caps};
use crate::{
    AudioFmt, Dialect, EVENT_CHANNEL_CAPACITY, ProviderCfg, RealtimeAdapter, RealtimeError,
    ResponseOpts, Result, RtCaps, RtEvent, SessionSpec,
};

type Ws = GuardedWs;

/// A `session.update` waiting for its `session.updated` (or `error`).
struct PendingUpdate {
    event_id: String,
    reply: oneshot::Sender<Result<()>>,
}

type PendingSlot = Arc<Mutex<Option<PendingUpdate>>>;

fn take_pending(slot: &PendingSlot) -> Option<PendingUpdate> {
    slot.lock().take()
}

/// Connect to the provider, wait for `session.created`, and return the
/// adapter with the receiver of its events. The session is not yet
/// configured: call [`RealtimeAdapter::update_session`] next.
pub async fn connect(
    cfg: &ProviderCfg,
) -> Result<(Box<dyn RealtimeAdapter>, mpsc::Receiver<RtEvent>)> {
    let (url, _tls_host) = provider_url(cfg)?;
    let mut ws = tokio::time::timeout(cfg.timeout, open(cfg, &url))
        .await
        .map_err(|_| RealtimeError::Timeout(cfg.timeout))??;
    let mut decoder = Decoder::new(cfg.dialect);
    let session_id = tokio::time::timeout(cfg.timeout, session_created(&mut ws, &mut decoder))
        .await
        .map_err(|_| RealtimeError::Timeout(cfg.timeout))??;
    let (sink, stream) = ws.split();
    let (events, receiver) = mpsc::channel(EVENT_CHANNEL_CAPACITY);
    let pending: PendingSlot = Arc::default();
    let caps = caps(cfg.dialect, cfg.input_rate, cfg.output_rate);
    let closing = Arc::new(AtomicBool::new(false));
    let reader = Reader {
        events,
        decoder,
        pending: pending.clone(),
        session_id,
        input: caps.input,
        output: caps.output,
        ready_sent: false,
        dropped_audio: 0,
        closing: closing.clone(),
    };
    let reader = tokio::spawn(reader.run(stream));
    let adapter = SocketAdapter {
        dialect: cfg.dialect,
        caps,
        sink,
        pending,
        timeout: cfg.timeout,
        next_event: 0,
        closing,
        reader,
    };
    Ok((Box::new(adapter), receiver))
}

/// The URL with `model=` added, and the host name TLS must verify (`None`
/// for `ws://`).
fn provider_url(cfg: &ProviderCfg) -> Result<(url::Url, Option<String>)> {
    let mut url = url::Url::parse(&cfg.url)
        .map_err(|e| RealtimeError::InvalidUrl(format!("cannot parse it: {e}")))?;
    let tls = match url.scheme() {
        "wss" => true,
        "ws" => false,
        other => {
            return Err(RealtimeError::InvalidUrl(format!(
                "the scheme must be ws or wss, not {other}"
            )));
        }
    };
    let host = host_of(&url)?;
    url.query_pairs_mut().append_pair("model", &cfg.model);
    Ok((url, tls.then_some(host)))
}

fn host_of(url: &url::Url) -> Result<String> {
    match url.host() {
        Some(url::Host::Domain(d)) => Ok(d.to_owned()),
        Some(url::Host::Ipv4(ip)) => Ok(ip.to_string()),
        Some(url::Host::Ipv6(ip)) => Ok(ip.to_string()),
        None => Err(RealtimeError::InvalidUrl("it has no host".into())),
    }
}

/// Resolve, guard, dial, TLS, WebSocket handshake.
async fn open(cfg: &ProviderCfg, url: &url::Url) -> Result<Ws> {
    let headers = [("authorization", format!("Bearer {}", cfg.api_key))];
    connect_guarded(url, &headers, cfg.policy, cfg.max_message_bytes)
        .await
        .map_err(|e| match e {
            WsConnectError::InvalidUrl(m) => RealtimeError::InvalidUrl(m),
            WsConnectError::Blocked(host) => RealtimeError::Blocked(host),
            WsConnectError::Connect(m) => RealtimeError::Connect(m),
            WsConnectError::InvalidHeader(_) => {
                RealtimeError::Connect("the API key is not a valid HTTP header value".into())
            }
            WsConnectError::Refused {
                status: 401 | 403, ..
            } => RealtimeError::Unauthorized,
            WsConnectError::Refused { status_line, .. } => {
                RealtimeError::Connect(format!("the handshake was refused with HTTP {status_line}"))
            }
        })
}

/// The I/O under a [`GuardedWs`]: TCP, or rustls over TCP.
pub trait WsIo: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> WsIo for T {}

/// A WebSocket opened by [`connect_guarded`].
pub type GuardedWs = WebSocketStream<Box<dyn WsIo>>;

/// Why [`connect_guarded`] failed. No message carries a header value.
#[derive(Debug, thiserror::Error)]
pub enum WsConnectError {
    #[error("the URL is not valid: {0}")]
    InvalidUrl(String),
    #[error("the outbound guard refused {0}")]
    Blocked(String),
    #[error("{0}")]
    Connect(String),
    /// The named header's value is not a valid HTTP header value.
    #[error("the {0} header value is not valid")]
    InvalidHeader(&'static str),
    /// The server answered the upgrade with another status; `body` is
    /// what it said (at most 4 KiB, lossy UTF-8; not scrubbed).
    #[error("the handshake was refused with HTTP {status_line}")]
    Refused {
        status: u16,
        status_line: String,
        body: String,
    },
}

/// Open a WebSocket to `url` (`ws` or `wss`) through the outbound guard:
/// the host is resolved once and only addresses `policy` permits are
/// dialled; `wss` runs rustls (ring, webpki roots) over that very stream.
/// `headers` are added to the upgrade request and marked sensitive;
/// messages and frames above `max_message_bytes` fail the connection. The
/// realtime adapter and the speech providers (`rtc-speech`) share it.
pub async fn connect_guarded(
    url: &url::Url,
    headers: &[(&'static str, String)],
    policy: rtc_tools::net_guard::AddressPolicy,
    max_message_bytes: usize,
) -> std::result::Result<GuardedWs, WsConnectError> {
    let tls = match url.scheme() {
        "wss" => true,
        "ws" => false,
        other => {
            return Err(WsConnectError::InvalidUrl(format!(
                "the scheme must be ws or wss, not {other}"
            )));
        }
    };
    let host = host_of(url).map_err(|_| WsConnectError::InvalidUrl("it has no host".into()))?;
    let port = url
        .port_or_known_default()
        .ok_or_else(|| WsConnectError::InvalidUrl("it has no port".into()))?;
    let resolved: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), port))
        .await
        .map_err(|e| WsConnectError::Connect(format!("cannot resolve {host}: {e}")))?
        .collect();
    let allowed: Vec<SocketAddr> = resolved
        .into_iter()
        .filter(|a| policy.permits(a.ip()))
        .collect();
    if allowed.is_empty() {
        return Err(WsConnectError::Blocked(host));
    }
    let tcp = dial(&allowed, &host).await.map_err(unwrap_connect)?;
    let _ = tcp.set_nodelay(true);
    let io: Box<dyn WsIo> = if tls {
        Box::new(self::tls(tcp, &host).await.map_err(unwrap_connect)?)
    } else {
        Box::new(tcp)
    };
    let mut request = url
        .as_str()
        .into_client_request()
        .map_err(|e| WsConnectError::InvalidUrl(format!("not a WebSocket request: {e}")))?;
    for (name, value) in headers {
        let mut value =
            HeaderValue::from_str(value).map_err(|_| WsConnectError::InvalidHeader(name))?;
        value.set_sensitive(true);
        request.headers_mut().insert(*name, value);
    }
    let limits = tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default()
        .max_message_size(Some(max_message_bytes))
        .max_frame_size(Some(max_message_bytes));
    match tokio_tungstenite::client_async_with_config(request, io, Some(limits)).await {
        Ok((ws, _response)) => Ok(ws),
        Err(WsError::Http(resp)) => {
            let body = resp.body().as_deref().unwrap_or_default();
            let body = String::from_utf8_lossy(&body[..body.len().min(4096)]).into_owned();
            Err(WsConnectError::Refused {
                status: resp.status().as_u16(),
                status_line: resp.status().to_string(),
                body,
            })
        }
        Err(e) => Err(WsConnectError::Connect(format!(
            "the WebSocket handshake failed: {e}"
        ))),
    }
}

/// The message of a [`dial`] or [`tls`] failure, without the realtime
/// wording around it.
fn unwrap_connect(e: RealtimeError) -> WsConnectError {
    match e {
        RealtimeError::InvalidUrl(m) => WsConnectError::InvalidUrl(m),
        RealtimeError::Connect(m) => WsConnectError::Connect(m),
        other => WsConnectError::Connect(other.to_string()),
    }
}

/// The first allowed address that accepts.
async fn dial(allowed: &[SocketAddr], host: &str) -> Result<TcpStream> {
    let mut last = None;
    for addr in allowed {
        match TcpStream::connect(addr).await {
            Ok(tcp) => return Ok(tcp),
            Err(e) => last = Some(e),
        }
    }
    let why = last.map_or_else(|| "no address".to_owned(), |e| e.kind().to_string());
    Err(RealtimeError::Connect(format!(
        "cannot reach {host}: {why}"
    )))
}

async fn tls(tcp: TcpStream, host: &str) -> Result<tokio_rustls::client::TlsStream<TcpStream>> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| RealtimeError::Connect(format!("TLS setup failed: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from(host.to_owned())
        .map_err(|_| RealtimeError::InvalidUrl(format!("{host} is not a TLS server name")))?;
    tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .map_err(|e| RealtimeError::Connect(format!("TLS with {host} failed: {e}")))
}

/// Read until `session.created`; its session id.
async fn session_created(ws: &mut Ws, decoder: &mut Decoder) -> Result<String> {
    loop {
        match ws.next().await {
            Some(Ok(Message::Text(text))) => {
                let Ok(frame) = serde_json::from_str::<Value>(&text) else {
                    continue;
                };
                match decoder.decode(&frame) {
                    Some(Inbound::SessionCreated { id }) => return Ok(id),
                    Some(Inbound::ProviderError { message, .. }) => {
                        return Err(RealtimeError::Rejected(message));
                    }
                    _ => {}
                }
            }
            Some(Ok(Message::Close(_))) | None => return Err(RealtimeError::Closed),
            Some(Ok(_)) => {}
            Some(Err(e)) => {
                return Err(RealtimeError::Connect(format!(
                    "the connection failed before session.created: {e}"
                )));
            }
        }
    }
}

struct Reader {
    events: mpsc::Sender<RtEvent>,
    decoder: Decoder,
    pending: PendingSlot,
    session_id: String,
    input: AudioFmt,
    output: AudioFmt,
    ready_sent: bool,
    dropped_audio: u64,
    /// Set by [`RealtimeAdapter::close`].
    closing: Arc<AtomicBool>,
}

impl Reader {
    async fn run(mut self, mut stream: SplitStream<Ws>) {
        let reason = loop {
            match stream.next().await {
                None => break "the provider closed the connection".to_owned(),
                Some(Err(e)) => break format!("the connection failed: {e}"),
                Some(Ok(Message::Close(frame))) => {
                    break match frame {
                        Some(f) if !f.reason.is_empty() => {
                            format!(
                                "the provider closed the connection ({}: {})",
                                f.code, f.reason
                            )
                        }
                        Some(f) => format!("the provider closed the connection ({})", f.code),
                        None => "the provider closed the connection".to_owned(),
                    };
                }
                Some(Ok(Message::Text(text))) => {
                    let Ok(frame) = serde_json::from_str::<Value>(&text) else {
                        tracing::debug!("ignoring a realtime frame that is not JSON");
                        continue;
                    };
                    if !self.handle(&frame).await {
                        break "the event receiver was dropped".to_owned();
                    }
                }
                Some(Ok(_)) => {}
            }
        };
        let reason = if self.closing.load(Ordering::Relaxed) {
            "closed by the client".to_owned()
        } else {
            reason
        };
        if let Some(p) = take_pending(&self.pending) {
            let _ = p.reply.send(Err(RealtimeError::Closed));
        }
        if self.dropped_audio > 0 {
            tracing::debug!(frames = self.dropped_audio, "realtime audio dropped on lag");
        }
        let _ = self.events.send(RtEvent::Closed { reason }).await;
    }

    /// False once nobody receives events.
    async fn handle(&mut self, frame: &Value) -> bool {
        let event = match self.decoder.decode(frame) {
            None | Some(Inbound::SessionCreated { .. }) => return true,
            Some(Inbound::SessionUpdated) => {
                let Some(p) = take_pending(&self.pending) else {
                    return true;
                };
                if !self.ready_sent {
                    self.ready_sent = true;
                    let ready = RtEvent::Ready {
                        provider_session_id: self.session_id.clone(),
                        input: self.input,
                        output: self.output,
                    };
                    if self.events.send(ready).await.is_err() {
                        return false;
                    }
                }
                let _ = p.reply.send(Ok(()));
                return true;
            }
            Some(Inbound::ProviderError {
                code,
                message,
                event_id,
            }) => {
                let mut slot = self.pending.lock();
                let about_update = slot
                    .as_ref()
                    .is_some_and(|p| event_id.as_deref().is_none_or(|id| id == p.event_id));
                if about_update && let Some(p) = slot.take() {
                    let _ = p.reply.send(Err(RealtimeError::Rejected(message)));
                    return true;
                }
                drop(slot);
                RtEvent::Error {
                    code,
                    message,
                    fatal: false,
                }
            }
            Some(Inbound::Event(event)) => event,
        };
        if matches!(event, RtEvent::Audio { .. }) {
            return match self.events.try_send(event) {
                Ok(()) => true,
                Err(mpsc::error::TrySendError::Full(_)) => {
                    self.dropped_audio += 1;
                    true
                }
                Err(mpsc::error::TrySendError::Closed(_)) => false,
            };
        }
        self.events.send(event).await.is_ok()
    }
}

struct SocketAdapter {
    dialect: Dialect,
    caps: RtCaps,
    sink: SplitSink<Ws, Message>,
    pending: PendingSlot,
    timeout: Duration,
    next_event: u64,
    closing: Arc<AtomicBool>,
    reader: JoinHandle<()>,
}

impl SocketAdapter {
    /// Send one frame; a provider that does not take it within
    /// [`SEND_TIMEOUT`] (a half-open connection) counts as gone.
    async fn send(&mut self, frame: Value) -> Result<()> {
        match tokio::time::timeout(
            SEND_TIMEOUT,
            self.sink.send(Message::text(frame.to_string())),
        )
        .await
        {
            Ok(sent) => sent.map_err(|_| RealtimeError::Closed),
            Err(_) => Err(RealtimeError::Timeout(SEND_TIMEOUT)),
        }
    }
}

/// How long one frame may take to be sent.
const SEND_TIMEOUT: Duration = Duration::from_secs(5);

impl Drop for SocketAdapter {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

#[async_trait::async_trait]
impl RealtimeAdapter for SocketAdapter {
    fn dialect(&self) -> Dialect {
        self.dialect
    }

    fn caps(&self) -> RtCaps {
        self.caps
    }

    async fn update_session(&mut self, spec: &SessionSpec) -> Result<()> {
        self.next_event += 1;
        let event_id = format!("evt_rtc_{}", self.next_event);
        let frame = codec::session_update(&self.caps, self.dialect, spec, &event_id);
        let (reply, answer) = oneshot::channel();
        *self.pending.lock() = Some(PendingUpdate { event_id, reply });
        if let Err(e) = self.send(frame).await {
            take_pending(&self.pending);
            return Err(e);
        }
        match tokio::time::timeout(self.timeout, answer).await {
            Ok(Ok(result)) => result,
            Ok(Err(_)) => Err(RealtimeError::Closed),
            Err(_) => {
                take_pending(&self.pending);
                Err(RealtimeError::Timeout(self.timeout))
            }
        }
    }

    async fn send_audio(&mut self, pcm16: &[u8]) -> Result<()> {
        self.send(codec::append_audio(pcm16)).await
    }

    async fn commit_audio(&mut self) -> Result<()> {
        self.send(codec::commit_audio()).await
    }

    async fn send_text(&mut self, text: &str) -> Result<()> {
        if !self.caps.supports_text_input {
            return Err(RealtimeError::Unsupported("text input"));
        }
        self.send(codec::user_text(text)).await
    }

    async fn submit_tool_result(&mut self, call_id: &str, output: &str) -> Result<()> {
        self.send(codec::tool_result(call_id, output)).await
    }

    async fn create_response(&mut self, opts: ResponseOpts) -> Result<()> {
        self.send(codec::create_response(&opts)).await
    }

    async fn cancel(&mut self) -> Result<()> {
        self.send(codec::cancel_response()).await
    }

    async fn truncate(&mut self, item_id: &str, played_ms: u32) -> Result<()> {
        if !self.caps.supports_truncate {
            return Ok(());
        }
        self.send(codec::truncate(item_id, played_ms)).await
    }

    async fn close(&mut self) -> Result<()> {
        self.closing.store(true, Ordering::Relaxed);
        self.sink.close().await.map_err(|_| RealtimeError::Closed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(url: &str) -> ProviderCfg {
        ProviderCfg {
            dialect: Dialect::Openai,
            url: url.into(),
            model: "gpt-realtime".into(),
            api_key: "sk-secret".into(),
            input_rate: 24_000,
            output_rate: 24_000,
            policy: rtc_tools::net_guard::AddressPolicy::PublicOnly,
            timeout: Duration::from_secs(1),
            max_message_bytes: 1024 * 1024,
        }
    }

    #[test]
    fn the_model_becomes_a_query_parameter() {
        let (url, tls) = provider_url(&cfg("wss://api.openai.com/v1/realtime"))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            url.as_str(),
            "wss://api.openai.com/v1/realtime?model=gpt-realtime"
        );
        assert_eq!(tls.as_deref(), Some("api.openai.com"));
        let (url, tls) =
            provider_url(&cfg("ws://127.0.0.1:9/rt?x=1")).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(url.as_str(), "ws://127.0.0.1:9/rt?x=1&model=gpt-realtime");
        assert_eq!(tls, None);
    }

    fn reader(capacity: usize) -> (Reader, mpsc::Receiver<RtEvent>) {
        let (events, receiver) = mpsc::channel(capacity);
        let reader = Reader {
            events,
            decoder: Decoder::new(Dialect::Openai),
            pending: Arc::default(),
            session_id: "sess".into(),
            input: AudioFmt { rate: 24_000 },
            output: AudioFmt { rate: 24_000 },
            ready_sent: false,
            dropped_audio: 0,
            closing: Arc::default(),
        };
        (reader, receiver)
    }

    #[tokio::test]
    async fn audio_is_dropped_when_the_channel_is_full_and_control_events_wait() {
        let (mut reader, mut receiver) = reader(2);
        let audio = serde_json::json!({"type": "response.output_audio.delta", "response_id": "r",
            "item_id": "a", "delta": "AAA="});
        for _ in 0..3 {
            assert!(reader.handle(&audio).await);
        }
        assert_eq!(reader.dropped_audio, 1);
        let done = serde_json::json!({"type": "response.done", "response": {"id": "r", "status": "completed"}});
        let frame = done.clone();
        let waiting = tokio::spawn(async move {
            let alive = reader.handle(&frame).await;
            (alive, reader)
        });
        assert!(matches!(receiver.recv().await, Some(RtEvent::Audio { .. })));
        assert!(matches!(receiver.recv().await, Some(RtEvent::Audio { .. })));
        assert!(matches!(
            receiver.recv().await,
            Some(RtEvent::ResponseDone { .. })
        ));
        let (alive, reader) = waiting.await.unwrap_or_else(|e| panic!("{e}"));
        assert!(alive);
        assert_eq!(reader.dropped_audio, 1);
        drop(receiver);
        let mut reader = reader;
        assert!(
            !reader.handle(&done).await,
            "a dropped receiver stops the reader"
        );
    }

    #[tokio::test]
    async fn an_error_about_the_pending_update_rejects_it_and_others_are_events() {
        let (mut reader, mut receiver) = reader(8);
        let (reply, answer) = oneshot::channel();
        *reader.pending.lock() = Some(PendingUpdate {
            event_id: "evt_rtc_1".into(),
            reply,
        });
        let other = serde_json::json!({"type": "error", "error": {"code": "x", "message": "not yours", "event_id": "evt_9"}});
        assert!(reader.handle(&other).await);
        assert!(
            matches!(receiver.recv().await, Some(RtEvent::Error { code, fatal: false, .. }) if code == "x")
        );
        let ours = serde_json::json!({"type": "error", "error": {"code": "invalid_value", "message": "bad voice", "event_id": "evt_rtc_1"}});
        assert!(reader.handle(&ours).await);
        let rejected = answer.await.unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(rejected, Err(RealtimeError::Rejected(m)) if m == "bad voice"));
        assert!(receiver.try_recv().is_err());
    }

    #[test]
    fn only_websocket_urls_with_a_host() {
        for bad in ["https://api.openai.com/v1/realtime", "not a url", "ws://"] {
            assert!(
                matches!(provider_url(&cfg(bad)), Err(RealtimeError::InvalidUrl(_))),
                "{bad}"
            );
        }
    }
}
