//! Deepgram streaming speech-to-text (design §1.3, §4(d)): a WebSocket to
//! `{url}/v1/listen?model&language&encoding=linear16&sample_rate&channels=1
//! &interim_results=true&vad_events=true&smart_format=true` (plus
//! `endpointing&utterance_end_ms=1000` for turn detection `stt`), the key
//! in `Authorization: Token`. Audio goes as binary frames; `KeepAlive`,
//! `Finalize` and `CloseStream` as text frames, a `KeepAlive` also by
//! itself after [`SttConfig::keep_alive`] without a frame (Deepgram closes
//! an idle socket after 10 s with `NET-0001`). A reader task maps
//! `Results`, `SpeechStarted`, `UtteranceEnd`, errors and close frames to
//! [`SttEvent`]s.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::stream::{SplitSink, SplitStream};
use futures::{SinkExt, StreamExt};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::Message;

use super::{SttEvent, SttStream, bounded_transcript};
use crate::config::{SttConfig, join_path};
use crate::error::Scrub;
use crate::ws::{GuardedWs, SEND_TIMEOUT, close_error};
use crate::{Result, SpeechError};

/// The model when the interface names none.
pub const DEFAULT_MODEL: &str = "nova-3";

type Sink = SplitSink<GuardedWs, Message>;

/// The sink and the time of its last frame, shared with the keep-alive task.
struct Writer {
    sink: Sink,
    last_sent: Instant,
}

type SharedWriter = Arc<tokio::sync::Mutex<Writer>>;

pub(crate) struct DeepgramStt {
    writer: SharedWriter,
    closing: Arc<AtomicBool>,
    reader: JoinHandle<()>,
    keeper: Option<JoinHandle<()>>,
}

/// The `/v1/listen` URL with the design's query.
pub(crate) fn listen_url(cfg: &SttConfig) -> Result<url::Url> {
    let mut url = join_path(&cfg.url, "/v1/listen")?;
    if url.scheme() != "ws" && url.scheme() != "wss" {
        return Err(SpeechError::InvalidUrl(
            "the scheme must be ws or wss".into(),
        ));
    }
    {
        let mut q = url.query_pairs_mut();
        let model = cfg.model.as_deref().filter(|m| !m.is_empty());
        q.append_pair("model", model.unwrap_or(DEFAULT_MODEL));
        if let Some(language) = &cfg.language {
            q.append_pair("language", language);
        }
        q.append_pair("encoding", "linear16")
            .append_pair("sample_rate", &cfg.sample_rate.to_string())
            .append_pair("channels", "1")
            .append_pair("interim_results", "true")
            .append_pair("vad_events", "true")
            .append_pair("smart_format", "true");
        if let Some(ms) = cfg.endpointing_ms {
            q.append_pair("endpointing", &ms.to_string())
                .append_pair("utterance_end_ms", "1000");
        }
    }
    Ok(url)
}

impl DeepgramStt {
    pub(crate) async fn connect(
        cfg: &SttConfig,
        events: mpsc::Sender<SttEvent>,
        scrub: Scrub,
    ) -> Result<Self> {
        let url = listen_url(cfg)?;
        let key = cfg
            .api_key
            .as_deref()
            .filter(|k| !k.is_empty())
            .ok_or_else(|| SpeechError::Config("a deepgram STT needs an API key".into()))?;
        let headers = [("authorization", format!("Token {key}"))];
        let ws = crate::ws::connect(&url, &headers, cfg.policy, cfg.timeout, &scrub).await?;
        let (sink, stream) = ws.split();
        let writer = Arc::new(tokio::sync::Mutex::new(Writer {
            sink,
            last_sent: Instant::now(),
        }));
        let closing = Arc::new(AtomicBool::new(false));
        let reader = tokio::spawn(read(stream, events, scrub, closing.clone()));
        let keeper = cfg
            .keep_alive
            .map(|every| tokio::spawn(keep_alive(writer.clone(), every, closing.clone())));
        Ok(Self {
            writer,
            closing,
            reader,
            keeper,
        })
    }

    async fn send(&self, message: Message) -> Result<()> {
        send(&self.writer, message).await
    }
}

async fn send(writer: &SharedWriter, message: Message) -> Result<()> {
    let mut w = writer.lock().await;
    match tokio::time::timeout(SEND_TIMEOUT, w.sink.send(message)).await {
        Ok(Ok(())) => {
            w.last_sent = Instant::now();
            Ok(())
        }
        Ok(Err(_)) => Err(SpeechError::Closed),
        Err(_) => Err(SpeechError::Timeout(SEND_TIMEOUT)),
    }
}

fn control(kind: &str) -> Message {
    Message::text(serde_json::json!({ "type": kind }).to_string())
}

/// Send a `KeepAlive` whenever `every` passed without a frame.
async fn keep_alive(writer: SharedWriter, every: Duration, closing: Arc<AtomicBool>) {
    loop {
        let due = writer.lock().await.last_sent + every;
        tokio::time::sleep_until(due).await;
        if closing.load(Ordering::Relaxed) {
            return;
        }
        let idle = writer.lock().await.last_sent.elapsed() >= every;
        if idle && send(&writer, control("KeepAlive")).await.is_err() {
            return;
        }
    }
}

impl Drop for DeepgramStt {
    fn drop(&mut self) {
        self.reader.abort();
        if let Some(k) = &self.keeper {
            k.abort();
        }
    }
}

#[async_trait::async_trait]
impl SttStream for DeepgramStt {
    async fn audio(&mut self, pcm16: &[u8]) -> Result<()> {
        if self.closing.load(Ordering::Relaxed) {
            return Err(SpeechError::Closed);
        }
        if pcm16.is_empty() {
            return Ok(());
        }
        self.send(Message::binary(pcm16.to_vec())).await
    }

    async fn finalize(&mut self) -> Result<()> {
        self.send(control("Finalize")).await
    }

    async fn keep_alive(&mut self) -> Result<()> {
        self.send(control("KeepAlive")).await
    }

    async fn close(&mut self) -> Result<()> {
        if self.closing.swap(true, Ordering::Relaxed) {
            return Ok(());
        }
        if let Some(k) = self.keeper.take() {
            k.abort();
        }
        self.send(control("CloseStream")).await
    }
}

async fn read(
    mut stream: SplitStream<GuardedWs>,
    events: mpsc::Sender<SttEvent>,
    scrub: Scrub,
    closing: Arc<AtomicBool>,
) {
    loop {
        let event = match stream.next().await {
            None => {
                if !closing.load(Ordering::Relaxed) {
                    let _ = events
                        .send(SttEvent::Error {
                            code: "closed".into(),
                            message: "the provider closed the connection".into(),
                            fatal: true,
                        })
                        .await;
                }
                break;
            }
            Some(Err(e)) => {
                let message = scrub.text(&format!("the connection failed: {e}"));
                let code = if message.contains("too long") || message.contains("Space limit") {
                    "too_large"
                } else {
                    "connection_failed"
                };
                let _ = events
                    .send(SttEvent::Error {
                        code: code.into(),
                        message,
                        fatal: true,
                    })
                    .await;
                break;
            }
            Some(Ok(Message::Close(frame))) => {
                let normal = frame.as_ref().is_some_and(|f| u16::from(f.code) == 1000);
                if !(normal && closing.load(Ordering::Relaxed)) {
                    let (code, message) = close_error(frame.as_ref(), &scrub);
                    let _ = events
                        .send(SttEvent::Error {
                            code,
                            message,
                            fatal: true,
                        })
                        .await;
                }
                break;
            }
            Some(Ok(Message::Text(text))) => match serde_json::from_str::<Value>(&text) {
                Ok(frame) => match decode(&frame, &scrub) {
                    Some(event) => event,
                    None => continue,
                },
                Err(_) => {
                    tracing::debug!("ignoring a deepgram frame that is not JSON");
                    continue;
                }
            },
            Some(Ok(_)) => continue,
        };
        let sent = if matches!(event, SttEvent::Interim { .. }) {
            !matches!(
                events.try_send(event),
                Err(mpsc::error::TrySendError::Closed(_))
            )
        } else {
            events.send(event).await.is_ok()
        };
        if !sent {
            return;
        }
    }
    let _ = events.send(SttEvent::Closed).await;
}

/// One server frame as an event (`None`: nothing to say).
pub(crate) fn decode(frame: &Value, scrub: &Scrub) -> Option<SttEvent> {
    match frame["type"].as_str()? {
        "Results" => {
            let text = frame
                .pointer("/channel/alternatives/0/transcript")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            let text = match bounded_transcript(text) {
                Ok(t) => t,
                Err(e) => {
                    return Some(SttEvent::Error {
                        code: e.code(),
                        message: e.to_string(),
                        fatal: false,
                    });
                }
            };
            let flag = |name: &str| frame[name].as_bool().unwrap_or(false);
            if flag("is_final") {
                Some(SttEvent::Final {
                    text,
                    speech_final: flag("speech_final"),
                    from_finalize: flag("from_finalize"),
                })
            } else if text.is_empty() {
                None
            } else {
                Some(SttEvent::Interim { text })
            }
        }
        "SpeechStarted" => Some(SttEvent::SpeechStarted),
        "UtteranceEnd" => Some(SttEvent::UtteranceEnd),
        "Metadata" => {
            tracing::debug!(request_id = ?frame["request_id"].as_str(), "deepgram metadata");
            None
        }
        "Error" => {
            let code = frame["variant"]
                .as_str()
                .or_else(|| frame["err_code"].as_str())
                .unwrap_or("provider_error");
            let message = frame["description"]
                .as_str()
                .or_else(|| frame["message"].as_str())
                .or_else(|| frame["err_msg"].as_str())
                .unwrap_or("the provider reported an error");
            Some(SttEvent::Error {
                code: code.to_owned(),
                message: scrub.text(&crate::error::bounded(message)),
                fatal: false,
            })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_query_is_the_designs() {
        let mut cfg = SttConfig::new(crate::SttDialect::Deepgram, "wss://api.deepgram.com");
        cfg.language = Some("en-US".into());
        let url = listen_url(&cfg).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            url.as_str(),
            "wss://api.deepgram.com/v1/listen?model=nova-3&language=en-US&encoding=linear16\
             &sample_rate=16000&channels=1&interim_results=true&vad_events=true&smart_format=true"
        );
        cfg.endpointing_ms = Some(500);
        cfg.url = "https://api.deepgram.com".into();
        assert!(listen_url(&cfg).is_err());
        cfg.url = "ws://127.0.0.1:9".into();
        let url = listen_url(&cfg).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            url.as_str()
                .ends_with("&endpointing=500&utterance_end_ms=1000")
        );
    }

    #[test]
    fn results_map_to_events() {
        let scrub = Scrub::new(Some("k"));
        let results = |is_final: bool, speech_final: bool, text: &str| {
            json!({"type": "Results", "is_final": is_final, "speech_final": speech_final,
                   "from_finalize": false,
                   "channel": {"alternatives": [{"transcript": text, "confidence": 0.9}]}})
        };
        assert_eq!(
            decode(&results(false, false, "hel"), &scrub),
            Some(SttEvent::Interim { text: "hel".into() })
        );
        assert_eq!(decode(&results(false, false, ""), &scrub), None);
        assert_eq!(
            decode(&results(true, true, "hello"), &scrub),
            Some(SttEvent::Final {
                text: "hello".into(),
                speech_final: true,
                from_finalize: false
            })
        );
        assert_eq!(
            decode(
                &json!({"type": "SpeechStarted", "channel": [0], "timestamp": 0.5}),
                &scrub
            ),
            Some(SttEvent::SpeechStarted)
        );
        assert_eq!(
            decode(
                &json!({"type": "UtteranceEnd", "channel": [0, 1], "last_word_end": 1.2}),
                &scrub
            ),
            Some(SttEvent::UtteranceEnd)
        );
        assert_eq!(
            decode(&json!({"type": "Metadata", "request_id": "r"}), &scrub),
            None
        );
        let long = "x".repeat(crate::config::MAX_TRANSCRIPT_BYTES + 1);
        assert!(matches!(
            decode(&results(true, false, &long), &scrub),
            Some(SttEvent::Error { fatal: false, .. })
        ));
    }
}
