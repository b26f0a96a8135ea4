//! OpenAI-compatible speech-to-text (design §1.1): the utterance is
//! buffered and, at [`SttStream::finalize`], uploaded whole as a 16-bit
//! mono WAV in `multipart/form-data` to `POST {url}/audio/transcriptions`
//! with `model`, `language` and `response_format=json`. The answer is read
//! by its `Content-Type`, since OpenAI-compatible servers differ: JSON
//! `{text}`, plain text, or server-sent `transcript.text.delta`/`done`.
//! Uploads run one at a time on a worker, so answers keep their order.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::{SttEvent, SttStream, bounded_transcript};
use crate::config::{MAX_STT_ANSWER_BYTES, MAX_UPLOAD_BYTES, SttConfig, join_path};
use crate::error::Scrub;
use crate::http::{media_type, read_bounded, request_error, status_error};
use crate::{Result, SpeechError};

/// What the worker does for one `finalize`.
enum Job {
    Upload(Vec<u8>),
    /// Nothing was buffered: an empty final at once.
    Empty,
    /// The utterance outgrew the upload limit.
    TooLarge,
}

pub(crate) struct OpenAiStt {
    buf: Vec<u8>,
    rate: u32,
    overflow: bool,
    jobs: Option<mpsc::Sender<Job>>,
    worker: JoinHandle<()>,
}

struct Uploader {
    client: reqwest::Client,
    url: url::Url,
    model: String,
    language: Option<String>,
    key: Option<String>,
    timeout: Duration,
    events: mpsc::Sender<SttEvent>,
    scrub: Scrub,
}

impl OpenAiStt {
    pub(crate) fn new(
        cfg: &SttConfig,
        events: mpsc::Sender<SttEvent>,
        scrub: Scrub,
    ) -> Result<Self> {
        let model = cfg
            .model
            .clone()
            .filter(|m| !m.is_empty())
            .ok_or_else(|| SpeechError::Config("an openai STT needs a model".into()))?;
        let url = join_path(&cfg.url, "/audio/transcriptions")?;
        if url.scheme() != "http" && url.scheme() != "https" {
            return Err(SpeechError::InvalidUrl(
                "the scheme must be http or https".into(),
            ));
        }
        rtc_tools::net_guard::check_url(&url, cfg.policy)
            .map_err(|e| SpeechError::Blocked(e.to_string()))?;
        let client = match &cfg.http {
            Some(c) => c.clone(),
            None => crate::config::http_client(cfg.policy)?,
        };
        let uploader = Uploader {
            client,
            url,
            model,
            language: cfg.language.clone(),
            key: cfg.api_key.clone(),
            timeout: cfg.timeout,
            events,
            scrub,
        };
        let (jobs, queue) = mpsc::channel(4);
        Ok(Self {
            buf: Vec::new(),
            rate: cfg.sample_rate,
            overflow: false,
            jobs: Some(jobs),
            worker: tokio::spawn(uploader.run(queue)),
        })
    }
}

impl Drop for OpenAiStt {
    fn drop(&mut self) {
        self.worker.abort();
    }
}

#[async_trait::async_trait]
impl SttStream for OpenAiStt {
    async fn audio(&mut self, pcm16: &[u8]) -> Result<()> {
        if self.jobs.is_none() {
            return Err(SpeechError::Closed);
        }
        if self.buf.len() + pcm16.len() + WAV_HEADER_BYTES > MAX_UPLOAD_BYTES {
            self.overflow = true;
            return Err(SpeechError::TooLarge(format!(
                "the utterance exceeds the upload limit of {MAX_UPLOAD_BYTES} bytes"
            )));
        }
        self.buf.extend_from_slice(pcm16);
        Ok(())
    }

    async fn finalize(&mut self) -> Result<()> {
        let jobs = self.jobs.as_ref().ok_or(SpeechError::Closed)?;
        let pcm = std::mem::take(&mut self.buf);
        let job = if std::mem::take(&mut self.overflow) {
            Job::TooLarge
        } else if pcm.len() < 2 {
            Job::Empty
        } else {
            match crate::wav::encode_pcm16_mono(&pcm, self.rate) {
                Ok(wav) => Job::Upload(wav),
                Err(_) => Job::TooLarge,
            }
        };
        jobs.send(job).await.map_err(|_| SpeechError::Closed)
    }

    async fn keep_alive(&mut self) -> Result<()> {
        Ok(())
    }

    async fn close(&mut self) -> Result<()> {
        self.buf.clear();
        self.jobs = None;
        Ok(())
    }
}

impl Uploader {
    async fn run(self, mut queue: mpsc::Receiver<Job>) {
        while let Some(job) = queue.recv().await {
            let answer = match job {
                Job::Empty => Ok(String::new()),
                Job::TooLarge => Err(SpeechError::TooLarge(format!(
                    "the utterance exceeded the upload limit of {MAX_UPLOAD_BYTES} bytes"
                ))),
                Job::Upload(wav) => {
                    match tokio::time::timeout(self.timeout, self.upload(wav)).await {
                        Ok(r) => r,
                        Err(_) => Err(SpeechError::Timeout(self.timeout)),
                    }
                }
            };
            let event = match answer.and_then(bounded_transcript) {
                Ok(text) => SttEvent::Final {
                    text,
                    speech_final: true,
                    from_finalize: true,
                },
                Err(e) => {
                    let e = self.scrub.error(e);
                    SttEvent::Error {
                        code: e.code(),
                        message: e.to_string(),
                        fatal: false,
                    }
                }
            };
            if self.events.send(event).await.is_err() {
                return;
            }
        }
        let _ = self.events.send(SttEvent::Closed).await;
    }

    async fn upload(&self, wav: Vec<u8>) -> Result<String> {
        let boundary = boundary();
        let mut fields = vec![("model", self.model.as_str())];
        if let Some(language) = &self.language {
            fields.push(("language", language));
        }
        fields.push(("response_format", "json"));
        let body = multipart(&boundary, &wav, &fields);
        let mut request = self
            .client
            .post(self.url.clone())
            .header(
                reqwest::header::CONTENT_TYPE,
                format!("multipart/form-data; boundary={boundary}"),
            )
            .body(body);
        if let Some(key) = &self.key {
            request = request.bearer_auth(key);
        }
        let resp = request.send().await.map_err(|e| request_error(&e))?;
        if !resp.status().is_success() {
            return Err(status_error(resp, self.timeout).await);
        }
        let kind = media_type(&resp).map(|(kind, _)| kind);
        let body = read_bounded(resp, MAX_STT_ANSWER_BYTES, self.timeout).await?;
        transcript(kind.as_deref(), &body)
    }
}

/// The transcript in an answer of media type `kind`.
pub(crate) fn transcript(kind: Option<&str>, body: &[u8]) -> Result<String> {
    let text = String::from_utf8_lossy(body);
    match kind {
        Some("text/event-stream") => sse_transcript(&text),
        Some(k) if k.starts_with("text/") => Ok(text.trim().to_owned()),
        _ => {
            let value: serde_json::Value = serde_json::from_str(&text).map_err(|_| {
                SpeechError::Protocol(format!(
                    "the transcription answer ({}) is not JSON",
                    kind.unwrap_or("no content type")
                ))
            })?;
            value["text"]
                .as_str()
                .map(|t| t.trim().to_owned())
                .ok_or_else(|| SpeechError::Protocol("the JSON answer has no text".into()))
        }
    }
}

/// `transcript.text.done`'s text, else the `delta`s joined.
fn sse_transcript(body: &str) -> Result<String> {
    let mut deltas = String::new();
    for line in body.lines() {
        let Some(data) = line.strip_prefix("data:") else {
            continue;
        };
        let Ok(event) = serde_json::from_str::<serde_json::Value>(data.trim()) else {
            continue;
        };
        match event["type"].as_str() {
            Some("transcript.text.done") => {
                if let Some(text) = event["text"].as_str() {
                    return Ok(text.trim().to_owned());
                }
            }
            Some("transcript.text.delta") => {
                deltas.push_str(event["delta"].as_str().unwrap_or_default());
            }
            Some("error") => {
                return Err(SpeechError::Protocol(crate::error::provider_message(
                    data.trim().as_bytes(),
                )));
            }
            _ => {}
        }
    }
    Ok(deltas.trim().to_owned())
}

const WAV_HEADER_BYTES: usize = crate::wav::CANONICAL_HEADER_LEN;

/// A boundary unlikely to occur in the parts.
fn boundary() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "rtc-speech-{nanos:x}-{:x}",
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// `multipart/form-data` with the WAV as `file` and text `fields`.
fn multipart(boundary: &str, wav: &[u8], fields: &[(&str, &str)]) -> Vec<u8> {
    let mut body = Vec::with_capacity(wav.len() + 512);
    body.extend_from_slice(
        format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; \
             filename=\"utterance.wav\"\r\nContent-Type: audio/wav\r\n\r\n"
        )
        .as_bytes(),
    );
    body.extend_from_slice(wav);
    body.extend_from_slice(b"\r\n");
    for (name, value) in fields {
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
            )
            .as_bytes(),
        );
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_by_their_content_type() {
        let ok = |kind: Option<&str>, body: &str| {
            transcript(kind, body.as_bytes()).unwrap_or_else(|e| panic!("{e}"))
        };
        assert_eq!(
            ok(Some("application/json"), r#"{"text":" Hi there. "}"#),
            "Hi there."
        );
        assert_eq!(ok(None, r#"{"text":"Hi","usage":{}}"#), "Hi");
        assert_eq!(ok(Some("text/plain"), "Hi there.\n"), "Hi there.");
        let sse = "data: {\"type\":\"transcript.text.delta\",\"delta\":\"Hi\"}\n\n\
                   data: {\"type\":\"transcript.text.delta\",\"delta\":\" there\"}\n\n";
        assert_eq!(ok(Some("text/event-stream"), sse), "Hi there");
        let done =
            format!("{sse}data: {{\"type\":\"transcript.text.done\",\"text\":\"Hi there.\"}}\n\n");
        assert_eq!(ok(Some("text/event-stream"), &done), "Hi there.");
        assert!(transcript(Some("application/json"), b"<html>").is_err());
    }
}
