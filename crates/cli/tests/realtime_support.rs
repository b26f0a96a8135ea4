//! What the realtime scenarios share: a server allowed to reach the mock
//! provider on loopback, the mock itself, an HTTP tool stub, test audio
//! and a host socket that reads everything the server sends.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use futures::{SinkExt, StreamExt};
use rtc_testkit::{Engine, RealtimeFlavor, RealtimeMock};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message as WsMessage;

use crate::harness::{Api, Server, start};
use crate::realtime::{interface, seed_key};

/// The key the mock expects (the value of `secret__rt_key`).
pub const MOCK_KEY: &str = "sk-realtime-test-key-0123456789";

/// A server, a workspace with the key secret and an interface `rt` on a
/// mock of `flavor` playing `script`.
pub struct Stage {
    pub srv: Server,
    pub ws: Api,
    pub mock: RealtimeMock,
}

pub async fn stage(
    engine: Engine,
    flavor: RealtimeFlavor,
    script: Value,
) -> anyhow::Result<Option<Stage>> {
    stage_with(engine, flavor, script, &[]).await
}

/// [`stage`] with more settings for the server.
pub async fn stage_with(
    engine: Engine,
    flavor: RealtimeFlavor,
    script: Value,
    settings: &[(&str, &str)],
) -> anyhow::Result<Option<Stage>> {
    let mut env = HashMap::from([("RTC_ALLOW_PRIVATE_NETWORK".to_owned(), "1".to_owned())]);
    for (k, v) in settings {
        env.insert((*k).to_owned(), (*v).to_owned());
    }
    let Some(srv) = start(engine, env).await? else {
        return Ok(None);
    };
    let mock = RealtimeMock::start(flavor, MOCK_KEY, script).await?;
    let (_, ws) = srv.workspace("A").await?;
    seed_key(&ws).await?;
    let dialect = match flavor {
        RealtimeFlavor::OpenaiGa => "openai",
        RealtimeFlavor::Qwen => "qwen",
        RealtimeFlavor::Stepfun => "stepfun",
    };
    ws.create(
        "/v1/realtime-interfaces",
        interface("rt", dialect, &mock.url()),
    )
    .await?;
    Ok(Some(Stage { srv, ws, mock }))
}

impl Stage {
    /// A realtime assistant on `rt` with `extra` fields; its id.
    pub async fn assistant(&self, extra: Value) -> anyhow::Result<String> {
        let mut body = json!({"name": "Voice", "runMode": "realtime", "realtimeInterfaceId": "rt",
            "systemPrompt": "You are a voice assistant."});
        if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
            b.extend(e.clone());
        }
        Ok(self.ws.create("/v1/assistants", body).await?["id"]
            .as_str()
            .unwrap()
            .to_owned())
    }

    /// A session of `assistant` with a host socket that said hello at
    /// 16 kHz in, 24 kHz out, declaring `client_tools`.
    pub async fn open(
        &self,
        assistant: &str,
        variables: Value,
        client_tools: Value,
    ) -> anyhow::Result<(String, Host)> {
        let s = self
            .ws
            .create(
                "/v1/sessions",
                json!({"assistantId": assistant, "dynamicVariables": variables}),
            )
            .await?;
        let sid = s["id"].as_str().unwrap().to_owned();
        let token = s["clientToken"].as_str().unwrap().to_owned();
        let mut host = Host::connect(&self.srv, &sid, &token).await?;
        host.send(json!({"type": "client.hello", "clientTools": client_tools,
            "audio": {"inputRate": 16000, "outputRate": 24000}}))
            .await?;
        Ok((sid, host))
    }

    pub async fn messages(&self, sid: &str) -> anyhow::Result<Vec<Value>> {
        let r = self.ws.get(&format!("/v1/sessions/{sid}/messages")).await?;
        Ok(r.assert_status(200)["data"]
            .as_array()
            .cloned()
            .unwrap_or_default())
    }
}

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// The host's WebSocket: every frame it received is kept, in order.
pub struct Host {
    sock: Socket,
    pub seen: Vec<Value>,
    pub sid: String,
    pub token: String,
    base: String,
}

impl Host {
    pub async fn connect(srv: &Server, sid: &str, token: &str) -> anyhow::Result<Self> {
        let base = srv.process.base_url.replace("http://", "ws://");
        let url = format!("{base}/v1/sessions/{sid}/ws?token={token}");
        let (sock, _) = tokio_tungstenite::connect_async(url).await?;
        Ok(Self {
            sock,
            seen: Vec::new(),
            sid: sid.to_owned(),
            token: token.to_owned(),
            base,
        })
    }

    /// A second socket on the same session.
    pub async fn reconnect(&self) -> anyhow::Result<Self> {
        let url = format!(
            "{}/v1/sessions/{}/ws?token={}",
            self.base, self.sid, self.token
        );
        let (sock, _) = tokio_tungstenite::connect_async(url).await?;
        Ok(Self {
            sock,
            seen: Vec::new(),
            sid: self.sid.clone(),
            token: self.token.clone(),
            base: self.base.clone(),
        })
    }

    pub async fn send(&mut self, frame: Value) -> anyhow::Result<()> {
        self.sock
            .send(WsMessage::Text(frame.to_string().into()))
            .await?;
        Ok(())
    }

    /// Send PCM16 at 16 kHz as `audio.append` frames of 100 ms. Sent
    /// faster than real time, so few enough that the bridge's input queue
    /// (which drops audio rather than stall the socket) takes them all.
    pub async fn speak(&mut self, pcm: &[u8]) -> anyhow::Result<()> {
        for chunk in pcm.chunks(3200) {
            let audio = base64::engine::general_purpose::STANDARD.encode(chunk);
            self.send(json!({"type": "audio.append", "audio": audio}))
                .await?;
        }
        Ok(())
    }

    /// Read until a frame satisfies `pred` (returned), within `within`.
    pub async fn until(
        &mut self,
        within: Duration,
        pred: impl Fn(&Value) -> bool,
    ) -> anyhow::Result<Value> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let next = tokio::time::timeout_at(deadline, self.sock.next())
                .await
                .map_err(|_| {
                    let kinds: Vec<&str> = self
                        .seen
                        .iter()
                        .filter_map(|v| v["type"].as_str())
                        .filter(|k| *k != "audio.delta")
                        .collect();
                    anyhow::anyhow!(
                        "no expected frame within {within:?}; seen (without audio): {kinds:?}"
                    )
                })?;
            let Some(msg) = next else {
                anyhow::bail!("the socket closed");
            };
            let WsMessage::Text(text) = msg? else {
                continue;
            };
            let v: Value = serde_json::from_str(&text)?;
            let hit = pred(&v);
            self.seen.push(v.clone());
            if hit {
                return Ok(v);
            }
        }
    }

    /// Read until a frame of `kind` arrives.
    pub async fn until_type(&mut self, kind: &str) -> anyhow::Result<Value> {
        self.until(Duration::from_secs(20), |v| v["type"] == kind)
            .await
    }

    /// Keep reading for `d` (frames are kept).
    pub async fn drain(&mut self, d: Duration) -> anyhow::Result<()> {
        match self.until(d, |_| false).await {
            Ok(_) => Ok(()),
            Err(e) if e.to_string().contains("no expected frame") => Ok(()),
            Err(e) => Err(e),
        }
    }

    pub fn of_type(&self, kind: &str) -> Vec<&Value> {
        self.seen.iter().filter(|v| v["type"] == kind).collect()
    }

    /// Milliseconds of assistant audio received (24 kHz PCM16).
    pub fn audio_ms(&self, item: Option<&str>) -> u64 {
        self.of_type("audio.delta")
            .into_iter()
            .filter(|v| item.is_none_or(|i| v["itemId"] == i))
            .map(|v| {
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(v["audio"].as_str().unwrap_or_default())
                    .map(|b| b.len())
                    .unwrap_or(0);
                (bytes / 2) as u64 * 1000 / v["rate"].as_u64().unwrap_or(24_000)
            })
            .sum()
    }
}

/// `ms` of a 440 Hz tone (speech to the mock) at 16 kHz PCM16.
pub fn tone(ms: u32) -> Vec<u8> {
    let n = 16 * ms as usize;
    (0..n)
        .flat_map(|i| {
            {
                let t = i as f64 / 16_000.0;
                ((t * 440.0 * std::f64::consts::TAU).sin() * 8_000.0) as i16
            }
            .to_le_bytes()
        })
        .collect()
}

/// `ms` of silence at 16 kHz PCM16.
pub fn silence(ms: u32) -> Vec<u8> {
    vec![0; 32 * ms as usize]
}

/// A user turn: `speech_ms` of tone, then enough silence to end it.
pub fn utterance(speech_ms: u32) -> Vec<u8> {
    let mut pcm = tone(speech_ms);
    pcm.extend(silence(500));
    pcm
}

/// A local HTTP tool: `GET /orders/{id}?tenant=` answers after `delay`;
/// every request is logged.
pub async fn order_stub(delay: Duration) -> anyhow::Result<(String, Arc<Mutex<Vec<Value>>>)> {
    let seen: Arc<Mutex<Vec<Value>>> = Arc::default();
    let log = seen.clone();
    let app = axum::Router::new().route(
        "/orders/{id}",
        axum::routing::get(
            move |axum::extract::Path(id): axum::extract::Path<String>,
                  axum::extract::Query(q): axum::extract::Query<HashMap<String, String>>| {
                let log = log.clone();
                async move {
                    log.lock().unwrap().push(json!({"id": id, "tenant": q.get("tenant")}));
                    tokio::time::sleep(delay).await;
                    axum::Json(json!({"status": "shipped", "eta": "tomorrow"}))
                }
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok((format!("http://{addr}"), seen))
}

/// The `lookup_order` HTTP tool at `base` and a binding with the order id
/// from the model, the tenant from a variable, the status assigned.
pub async fn order_tool(ws: &Api, base: &str) -> anyhow::Result<Value> {
    ws.create("/v1/tools", json!({"id": "lookup_order", "name": "lookup_order", "type": "http",
        "description": "Look an order up.",
        "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}, "tenant": {"type": "string"}},
            "required": ["order_id"]},
        "http": {"method": "GET", "url": format!("{base}/orders/{{{{order_id}}}}?tenant={{{{tenant}}}}")}}))
        .await?;
    Ok(json!({"toolId": "lookup_order",
        "argumentBindings": {"order_id": {"source": "model"}, "tenant": {"source": "variable", "variableName": "tenant_id"}},
        "resultAssignments": {"order_status": "status"}}))
}

/// The variables the order binding reads and writes.
pub fn order_variables() -> Value {
    json!([{"name": "tenant_id", "type": "string"}, {"name": "order_status", "type": "string"}])
}
