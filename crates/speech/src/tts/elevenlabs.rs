//! ElevenLabs streaming text-to-speech (design §1.4, §4(e)): one
//! `{url}/v1/text-to-speech/{voice}/stream-input?model_id&output_format=
//! pcm_<rate>&auto_mode=true&sync_alignment=true&inactivity_timeout=60`
//! socket per item, the key in `xi-api-key`. The BOS `{"text":" "}` (with
//! `voice_settings`) is sent on connect, each chunk as `{"text": chunk +
//! " "}`, the EOS `{"text":""}` at `finish`; the item is done at
//! `isFinal`. `AudioOutput` audio is base64 PCM16; its `alignment`
//! attributes the audio to chunks by counting non-whitespace characters,
//! splitting a message that spans two chunks at the first character of
//! the next.

use std::collections::VecDeque;
use std::sync::Arc;

use base64::Engine as _;
use bytes::Bytes;
use futures::stream::{SplitSink, SplitStream};
use futures::{SinkExt, StreamExt};
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::Message;

use super::{CharTiming, TtsChunk, TtsEvent, TtsStream, check_chunk};
use crate::config::{TtsConfig, join_path};
use crate::error::Scrub;
use crate::ws::{GuardedWs, SEND_TIMEOUT, close_error};
use crate::{Result, SpeechError};

/// The rates of `pcm_<rate>`.
pub const PCM_RATES: [u32; 5] = [8_000, 16_000, 22_050, 24_000, 44_100];

/// The `stream-input` URL with the design's query.
pub(crate) fn stream_url(cfg: &TtsConfig) -> Result<url::Url> {
    if cfg.voice.is_empty() || cfg.model.is_empty() {
        return Err(SpeechError::Config(
            "an elevenlabs TTS needs a model and a voice".into(),
        ));
    }
    if !PCM_RATES.contains(&cfg.sample_rate) {
        return Err(SpeechError::Config(format!(
            "elevenlabs has no pcm_{} output",
            cfg.sample_rate
        )));
    }
    let mut url = join_path(&cfg.url, "/v1/text-to-speech")?;
    if url.scheme() != "ws" && url.scheme() != "wss" {
        return Err(SpeechError::InvalidUrl(
            "the scheme must be ws or wss".into(),
        ));
    }
    url.path_segments_mut()
        .map_err(|()| SpeechError::InvalidUrl("it cannot take a path".into()))?
        .push(&cfg.voice)
        .push("stream-input");
    {
        let mut q = url.query_pairs_mut();
        q.append_pair("model_id", &cfg.model)
            .append_pair("output_format", &format!("pcm_{}", cfg.sample_rate))
            .append_pair("auto_mode", "true")
            .append_pair("sync_alignment", "true")
            .append_pair("inactivity_timeout", "60");
        if let Some(language) = &cfg.language {
            q.append_pair("language_code", language);
        }
    }
    Ok(url)
}

/// The BOS message.
pub(crate) fn bos(cfg: &TtsConfig) -> Value {
    let mut bos = json!({ "text": " " });
    if let Some(v) = cfg.voice_settings {
        let mut settings = serde_json::Map::new();
        let fields = [
            ("stability", v.stability),
            ("similarity_boost", v.similarity_boost),
            ("speed", v.speed),
        ];
        for (name, value) in fields {
            if let Some(value) = value {
                settings.insert(name.into(), json!(value));
            }
        }
        bos["voice_settings"] = Value::Object(settings);
    }
    bos
}

/// Which chunk the audio belongs to.
#[derive(Debug, Default)]
pub(crate) struct Book {
    /// `(chunk, non-whitespace characters not yet heard)`, oldest first;
    /// the front receives the audio.
    open: VecDeque<(usize, usize)>,
}

impl Book {
    fn push(&mut self, chunk: usize, text: &str) {
        self.open
            .push_back((chunk, text.chars().filter(|c| !c.is_whitespace()).count()));
    }

    /// The events of one audio message: its audio split where the next
    /// chunk's first character starts, a `ChunkDone` at each split.
    pub(crate) fn audio(
        &mut self,
        pcm: Bytes,
        rate: u32,
        align: Option<Vec<CharTiming>>,
    ) -> Vec<TtsEvent> {
        let mut events = Vec::new();
        let mut chunk = self.open.front().map(|f| f.0);
        let Some(align) = align else {
            events.extend(chunk.map(|chunk| TtsEvent::Audio {
                chunk,
                pcm,
                rate,
                align: None,
            }));
            return events;
        };
        let bytes_at = |ms: u32| -> usize {
            let samples = u64::from(ms) * u64::from(rate) / 1000;
            usize::try_from(samples * 2)
                .unwrap_or(usize::MAX)
                .min(pcm.len())
        };
        let (mut from, mut offset_ms) = (0, 0);
        let mut timings: Vec<CharTiming> = Vec::new();
        for (c, start, len) in align {
            if !c.is_whitespace() {
                while self.open.len() > 1 && self.open.front().is_some_and(|f| f.1 == 0) {
                    let to = bytes_at(start).max(from);
                    if let Some(chunk) = chunk
                        && (to > from || !timings.is_empty())
                    {
                        events.push(TtsEvent::Audio {
                            chunk,
                            pcm: pcm.slice(from..to),
                            rate,
                            align: Some(std::mem::take(&mut timings)),
                        });
                    }
                    if let Some((done, _)) = self.open.pop_front() {
                        events.push(TtsEvent::ChunkDone { chunk: done });
                    }
                    (from, offset_ms) = (to, start);
                    chunk = self.open.front().map(|f| f.0);
                }
                if let Some(front) = self.open.front_mut() {
                    front.1 = front.1.saturating_sub(1);
                }
            }
            timings.push((c, start.saturating_sub(offset_ms), len));
        }
        if let Some(chunk) = chunk
            && (from < pcm.len() || !timings.is_empty())
        {
            events.push(TtsEvent::Audio {
                chunk,
                pcm: pcm.slice(from..),
                rate,
                align: Some(timings),
            });
        }
        events
    }

    /// `ChunkDone` for every chunk still open (at `isFinal`).
    fn finish(&mut self) -> Vec<TtsEvent> {
        self.open
            .drain(..)
            .map(|(chunk, _)| TtsEvent::ChunkDone { chunk })
            .collect()
    }
}

pub(crate) struct ElevenLabsTts {
    sink: SplitSink<GuardedWs, Message>,
    book: Arc<Mutex<Book>>,
    next_chunk: usize,
    finished: bool,
    reader: JoinHandle<()>,
}

impl ElevenLabsTts {
    pub(crate) async fn connect(
        cfg: &TtsConfig,
        events: mpsc::Sender<TtsEvent>,
        scrub: Scrub,
    ) -> Result<Self> {
        let url = stream_url(cfg)?;
        let key = cfg
            .api_key
            .as_deref()
            .filter(|k| !k.is_empty())
            .ok_or_else(|| SpeechError::Config("an elevenlabs TTS needs an API key".into()))?;
        let headers = [("xi-api-key", key.to_owned())];
        let ws = crate::ws::connect(&url, &headers, cfg.policy, cfg.timeout, &scrub).await?;
        let (sink, stream) = ws.split();
        let book = Arc::new(Mutex::new(Book::default()));
        let reader = tokio::spawn(read(stream, events, book.clone(), cfg.sample_rate, scrub));
        let mut tts = Self {
            sink,
            book,
            next_chunk: 0,
            finished: false,
            reader,
        };
        tts.send(bos(cfg)).await?;
        Ok(tts)
    }

    async fn send(&mut self, frame: Value) -> Result<()> {
        match tokio::time::timeout(
            SEND_TIMEOUT,
            self.sink.send(Message::text(frame.to_string())),
        )
        .await
        {
            Ok(Ok(())) => Ok(()),
            Ok(Err(_)) => Err(SpeechError::Closed),
            Err(_) => Err(SpeechError::Timeout(SEND_TIMEOUT)),
        }
    }
}

impl Drop for ElevenLabsTts {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

#[async_trait::async_trait]
impl TtsStream for ElevenLabsTts {
    async fn push(&mut self, chunk: TtsChunk) -> Result<()> {
        if self.finished || self.reader.is_finished() {
            return Err(SpeechError::Closed);
        }
        check_chunk(&chunk)?;
        let index = self.next_chunk;
        self.next_chunk += 1;
        self.book.lock().push(index, &chunk.text);
        let text = chunk.text.trim_end();
        if text.is_empty() {
            // "" would be the EOS; nothing is spoken for this chunk.
            return Ok(());
        }
        self.send(json!({ "text": format!("{text} ") })).await
    }

    async fn finish(&mut self) -> Result<()> {
        if std::mem::replace(&mut self.finished, true) {
            return Ok(());
        }
        self.send(json!({ "text": "" })).await
    }

    async fn cancel(&mut self) {
        self.finished = true;
        self.reader.abort();
        let _ = tokio::time::timeout(SEND_TIMEOUT, self.sink.close()).await;
    }
}

/// `alignment` as timings (`None` when absent or malformed).
fn alignment(frame: &Value) -> Option<Vec<CharTiming>> {
    let a = frame.get("alignment").filter(|a| a.is_object())?;
    let chars = a["chars"].as_array()?;
    let starts = a["charStartTimesMs"].as_array()?;
    let lengths = a["charDurationsMs"].as_array()?;
    let ms = |v: &Value| v.as_f64().map_or(0, |f| f.max(0.0).round() as u32);
    Some(
        chars
            .iter()
            .zip(starts)
            .zip(lengths)
            .filter_map(|((c, s), l)| Some((c.as_str()?.chars().next()?, ms(s), ms(l))))
            .collect(),
    )
}

async fn read(
    mut stream: SplitStream<GuardedWs>,
    events: mpsc::Sender<TtsEvent>,
    book: Arc<Mutex<Book>>,
    rate: u32,
    scrub: Scrub,
) {
    let mut carry: Option<u8> = None;
    let failure = loop {
        let frame = match stream.next().await {
            None => break close_error(None, &scrub),
            Some(Err(e)) => {
                break (
                    "connection_failed".into(),
                    scrub.text(&format!("the connection failed: {e}")),
                );
            }
            Some(Ok(Message::Close(frame))) => break close_error(frame.as_ref(), &scrub),
            Some(Ok(Message::Text(text))) => match serde_json::from_str::<Value>(&text) {
                Ok(v) => v,
                Err(_) => continue,
            },
            Some(Ok(_)) => continue,
        };
        let mut out = Vec::new();
        if let Some(b64) = frame["audio"].as_str().filter(|a| !a.is_empty()) {
            let Ok(mut pcm) = base64::engine::general_purpose::STANDARD.decode(b64) else {
                break ("protocol".into(), "the audio is not base64".into());
            };
            if let Some(b) = carry.take() {
                pcm.insert(0, b);
            }
            if pcm.len() % 2 == 1 {
                carry = pcm.pop();
            }
            out = book.lock().audio(Bytes::from(pcm), rate, alignment(&frame));
        } else if frame["audio"].is_null()
            && frame["isFinal"].is_null()
            && (frame.get("error").is_some() || frame.get("message").is_some())
        {
            let code = frame["error"]
                .as_str()
                .unwrap_or("provider_error")
                .to_owned();
            let message = frame["message"]
                .as_str()
                .or_else(|| frame["error"].as_str())
                .unwrap_or("the provider reported an error");
            break (code, scrub.text(&crate::error::bounded(message)));
        }
        let is_final = frame["isFinal"].as_bool() == Some(true);
        if is_final {
            out.extend(book.lock().finish());
            out.push(TtsEvent::Done);
        }
        for event in out {
            if events.send(event).await.is_err() {
                return;
            }
        }
        if is_final {
            return;
        }
    };
    let (code, message) = failure;
    let message = format!("the item ended before isFinal: {message}");
    let _ = events.send(TtsEvent::Error { code, message }).await;
}

#[cfg(test)]
#[path = "elevenlabs_tests.rs"]
mod tests;
