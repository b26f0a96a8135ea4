//! A mock OpenAI-compatible speech server (design `voice-pipeline.md`
//! §1.1, §1.2, §4(i)): one axum server on 127.0.0.1 with
//! `POST /v1/audio/transcriptions` — the multipart upload checked (a
//! 16-bit mono WAV at a known rate, `model` present), the transcript found
//! by the pilot tone, answered as `json`, `text` or server-sent events as
//! asked — and `POST /v1/audio/speech` — `pcm` (24 kHz) or `wav`, a 440 Hz
//! tone of 20 ms per non-whitespace character, chunked and paced
//! (`speech_openai_speech.rs`). Every request is logged; on demand it
//! fails the next requests, delays its first byte, cuts a body short, or
//! ignores the format asked for.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};
use tokio::sync::Notify;

use crate::realtime_mock::lock;
use crate::speech_audio::{PilotMap, Wav, parse_wav, pilot_of};

/// The rate of `pcm` answers.
pub const OPENAI_PCM_RATE: u32 = 24_000;
/// The rates an upload may have.
const UPLOAD_RATES: [u32; 5] = [8_000, 16_000, 22_050, 24_000, 48_000];

/// How a transcription is answered when the mock ignores what was asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SttAnswer {
    Json,
    Text,
    Sse,
}

/// What `/audio/speech` answers instead of the format asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TtsAnswer {
    /// Raw PCM16 24 kHz, `Content-Type: audio/pcm`.
    Pcm,
    /// A WAV with placeholder sizes, `Content-Type: audio/wav`.
    Wav,
    /// Bytes that are not audio the client can play (`audio/mpeg`).
    Mp3,
}

/// One request the mock saw.
#[derive(Debug, Clone)]
pub struct SpeechRequest {
    /// `/v1/audio/transcriptions` or `/v1/audio/speech`.
    pub path: String,
    /// The `Authorization` header matched the key (always true without one).
    pub authorized: bool,
    /// Transcriptions: the text fields of the form; speech: the JSON body.
    pub fields: Value,
    /// Transcriptions: the uploaded WAV.
    pub wav: Option<Wav>,
    /// Transcriptions: the pilot found and the transcript answered.
    pub pilot: Option<u32>,
    pub transcript: Option<String>,
    /// The status answered.
    pub status: u16,
    /// Speech: the audio bytes sent so far.
    pub audio_bytes: usize,
    pub started: Instant,
    /// When the body was fully sent.
    pub finished: Option<Instant>,
    /// The client went away before the body ended.
    pub aborted: bool,
}

#[derive(Default)]
pub(crate) struct Knobs {
    pub(crate) transcripts: PilotMap,
    pub(crate) unmatched: String,
    pub(crate) stt_failures: VecDeque<(u16, String)>,
    pub(crate) stt_answer: Option<SttAnswer>,
    pub(crate) stt_delay: Duration,
    pub(crate) expect_rate: Option<u32>,
    pub(crate) tts_failures: VecDeque<(u16, String)>,
    pub(crate) tts_answer: Option<TtsAnswer>,
    pub(crate) first_byte_delay: Duration,
    pub(crate) piece_ms: u64,
    pub(crate) pace: Duration,
    pub(crate) cut_after_bytes: Option<usize>,
}

#[derive(Default)]
pub(crate) struct MockState {
    pub(crate) knobs: Knobs,
    pub(crate) requests: Vec<SpeechRequest>,
    pub(crate) in_flight: usize,
    pub(crate) max_in_flight: usize,
}

pub(crate) struct Shared {
    pub(crate) key: Option<String>,
    pub(crate) state: Mutex<MockState>,
    pub(crate) changed: Notify,
}

impl Shared {
    pub(crate) fn update(&self, f: impl FnOnce(&mut MockState)) {
        f(&mut lock(&self.state));
        self.changed.notify_waiters();
    }
}

/// The running mock; stops when dropped.
pub struct SpeechOpenAiMock {
    /// `http://127.0.0.1:<port>/v1`, the interface's `url`.
    pub base_url: String,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for SpeechOpenAiMock {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl SpeechOpenAiMock {
    /// Start; with `api_key`, requests need `Authorization: Bearer <key>`
    /// (a wrong key is answered 401 with the key it got echoed back, to
    /// prove clients scrub it).
    pub async fn start(api_key: Option<&str>, transcripts: PilotMap) -> anyhow::Result<Self> {
        let shared = Arc::new(Shared {
            key: api_key.map(str::to_owned),
            state: Mutex::new(MockState::default()),
            changed: Notify::new(),
        });
        lock(&shared.state).knobs = Knobs {
            transcripts,
            piece_ms: 100,
            ..Knobs::default()
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let app = Router::new()
            .route("/v1/audio/transcriptions", post(transcribe))
            .route("/v1/audio/speech", post(crate::speech_openai_speech::speak))
            .layer(DefaultBodyLimit::max(26 * 1024 * 1024))
            .with_state(shared.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(Self {
            base_url: format!("http://{addr}/v1"),
            shared,
            task,
        })
    }

    fn knobs(&self, f: impl FnOnce(&mut Knobs)) {
        f(&mut lock(&self.shared.state).knobs);
    }

    /// Replace the pilot → transcript map.
    pub fn set_transcripts(&self, transcripts: PilotMap) {
        self.knobs(|k| k.transcripts = transcripts);
    }

    /// The transcript of audio without a known pilot (default empty).
    pub fn set_unmatched(&self, text: &str) {
        self.knobs(|k| k.unmatched = text.to_owned());
    }

    /// Fail the next `count` transcriptions with `status` and `message`.
    pub fn fail_transcriptions(&self, count: usize, status: u16, message: &str) {
        self.knobs(|k| {
            k.stt_failures
                .extend(std::iter::repeat_n((status, message.to_owned()), count));
        });
    }

    /// Answer transcriptions in this form whatever was asked (`None`: as asked).
    pub fn force_stt_answer(&self, answer: Option<SttAnswer>) {
        self.knobs(|k| k.stt_answer = answer);
    }

    /// Wait this long before answering a transcription.
    pub fn set_stt_delay(&self, delay: Duration) {
        self.knobs(|k| k.stt_delay = delay);
    }

    /// Refuse uploads at another rate (400).
    pub fn expect_rate(&self, rate: Option<u32>) {
        self.knobs(|k| k.expect_rate = rate);
    }

    /// Fail the next `count` speech requests with `status` and `message`.
    pub fn fail_speech(&self, count: usize, status: u16, message: &str) {
        self.knobs(|k| {
            k.tts_failures
                .extend(std::iter::repeat_n((status, message.to_owned()), count));
        });
    }

    /// Answer speech in this form whatever was asked (`None`: as asked).
    pub fn force_tts_answer(&self, answer: Option<TtsAnswer>) {
        self.knobs(|k| k.tts_answer = answer);
    }

    /// Wait this long before answering a speech request (a slow first byte).
    pub fn set_first_byte_delay(&self, delay: Duration) {
        self.knobs(|k| k.first_byte_delay = delay);
    }

    /// Send speech bodies in pieces of `piece_ms` audio (default 100),
    /// `pace` apart (default none).
    pub fn set_pacing(&self, piece_ms: u64, pace: Duration) {
        self.knobs(|k| {
            k.piece_ms = piece_ms.max(1);
            k.pace = pace;
        });
    }

    /// Break each speech body's connection after this many audio bytes.
    pub fn cut_speech_after(&self, bytes: Option<usize>) {
        self.knobs(|k| k.cut_after_bytes = bytes);
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<SpeechRequest> {
        lock(&self.shared.state).requests.clone()
    }

    /// The requests to one path's end (`transcriptions` or `speech`).
    pub fn requests_to(&self, suffix: &str) -> Vec<SpeechRequest> {
        self.requests()
            .into_iter()
            .filter(|r| r.path.ends_with(suffix))
            .collect()
    }

    /// The most speech requests that were in flight at once.
    pub fn max_speech_in_flight(&self) -> usize {
        lock(&self.shared.state).max_in_flight
    }

    /// Wait until `pred` holds for the requests, or fail after `timeout`.
    pub async fn wait_for(
        &self,
        pred: impl Fn(&[SpeechRequest]) -> bool,
        timeout: Duration,
    ) -> anyhow::Result<()> {
        crate::realtime_mock::wait_until(
            &self.shared.changed,
            || pred(&lock(&self.shared.state).requests),
            timeout,
            "speech mock",
        )
        .await
    }
}

pub(crate) fn openai_error(status: u16, message: &str, code: &str) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let body = json!({"error": {"message": message, "type": "invalid_request_error",
        "param": null, "code": code}});
    (status, axum::Json(body)).into_response()
}

/// Log a request; its index.
pub(crate) fn log(shared: &Shared, path: &str, authorized: bool, fields: Value) -> usize {
    let mut index = 0;
    shared.update(|st| {
        index = st.requests.len();
        st.requests.push(SpeechRequest {
            path: path.to_owned(),
            authorized,
            fields,
            wav: None,
            pilot: None,
            transcript: None,
            status: 200,
            audio_bytes: 0,
            started: Instant::now(),
            finished: None,
            aborted: false,
        });
    });
    index
}

/// The 401 to answer when the key does not match.
pub(crate) fn check_key(shared: &Shared, headers: &HeaderMap) -> Option<Response> {
    let Some(key) = &shared.key else {
        return None;
    };
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if given == format!("Bearer {key}") {
        return None;
    }
    let shown = given.strip_prefix("Bearer ").unwrap_or(given);
    Some(openai_error(
        401,
        &format!("Incorrect API key provided: {shown}."),
        "invalid_api_key",
    ))
}

/// The parts of a `multipart/form-data` body: name → (filename, bytes).
type Parts = BTreeMap<String, (Option<String>, Vec<u8>)>;

fn multipart(headers: &HeaderMap, body: &[u8]) -> Result<Parts, String> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let boundary = content_type
        .strip_prefix("multipart/form-data")
        .and_then(|rest| {
            rest.split(';')
                .find_map(|p| p.trim().strip_prefix("boundary="))
        })
        .ok_or("the body is not multipart/form-data with a boundary")?
        .trim_matches('"');
    let delimiter = format!("\r\n--{boundary}").into_bytes();
    let mut rest = body
        .strip_prefix(format!("--{boundary}").as_bytes())
        .ok_or("the body does not start with the boundary")?;
    let mut parts = Parts::new();
    while !rest.starts_with(b"--") {
        rest = rest.strip_prefix(b"\r\n").ok_or("a part has no CRLF")?;
        let end = find(rest, &delimiter).ok_or("a part has no closing boundary")?;
        let part = &rest[..end];
        rest = &rest[end + delimiter.len()..];
        let split = find(part, b"\r\n\r\n").ok_or("a part has no headers")?;
        let head = String::from_utf8_lossy(&part[..split]).to_ascii_lowercase();
        let disposition = head
            .lines()
            .find(|l| l.starts_with("content-disposition:"))
            .ok_or("a part has no Content-Disposition")?
            .to_owned();
        let attr = |name: &str| {
            disposition
                .split(';')
                .find_map(|p| p.trim().strip_prefix(&format!("{name}=")))
                .map(|v| v.trim_matches('"').to_owned())
        };
        let name = attr("name").ok_or("a part has no name")?;
        parts.insert(name, (attr("filename"), part[split + 4..].to_vec()));
    }
    Ok(parts)
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

async fn transcribe(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = "/v1/audio/transcriptions";
    let authorized = check_key(&shared, &headers);
    let parts = multipart(&headers, &body);
    let fields: Value = match &parts {
        Ok(parts) => parts
            .iter()
            .filter(|(_, (file, _))| file.is_none())
            .map(|(k, (_, v))| (k.clone(), json!(String::from_utf8_lossy(v))))
            .collect::<serde_json::Map<_, _>>()
            .into(),
        Err(_) => Value::Null,
    };
    let index = log(&shared, path, authorized.is_none(), fields.clone());
    let answer = transcribe_answer(&shared, index, authorized, parts, &fields).await;
    let status = answer.status().as_u16();
    shared.update(|st| {
        st.requests[index].status = status;
        st.requests[index].finished = Some(Instant::now());
    });
    answer
}

async fn transcribe_answer(
    shared: &Shared,
    index: usize,
    refusal: Option<Response>,
    parts: Result<Parts, String>,
    fields: &Value,
) -> Response {
    if let Some(refusal) = refusal {
        return refusal;
    }
    let parts = match parts {
        Ok(p) => p,
        Err(e) => return openai_error(400, &e, "invalid_multipart"),
    };
    let Some((Some(_), file)) = parts.get("file") else {
        return openai_error(400, "file: a file is required", "missing_file");
    };
    if fields["model"].as_str().is_none_or(str::is_empty) {
        return openai_error(400, "model: a model is required", "missing_model");
    }
    let wav = match parse_wav(file) {
        Ok(w) => w,
        Err(e) => {
            return openai_error(
                400,
                &format!("the file is not a valid WAV: {e}"),
                "invalid_file",
            );
        }
    };
    let (knobs_rate, failure, delay) = {
        let mut st = lock(&shared.state);
        let k = &mut st.knobs;
        (k.expect_rate, k.stt_failures.pop_front(), k.stt_delay)
    };
    let bad = if wav.format != 1 || wav.bits != 16 || wav.channels != 1 {
        Some(format!(
            "the WAV must be 16-bit mono PCM, not format {} with {} channel(s) of {} bits",
            wav.format, wav.channels, wav.bits
        ))
    } else if !UPLOAD_RATES.contains(&wav.rate) || knobs_rate.is_some_and(|r| r != wav.rate) {
        Some(format!("the WAV's rate {} is not expected", wav.rate))
    } else {
        None
    };
    let pilot = pilot_of(&wav.samples, wav.rate);
    let transcript = {
        let st = lock(&shared.state);
        pilot
            .and_then(|p| st.knobs.transcripts.get(&p).cloned())
            .unwrap_or_else(|| st.knobs.unmatched.clone())
    };
    shared.update(|st| {
        let r = &mut st.requests[index];
        r.wav = Some(wav);
        r.pilot = pilot;
    });
    if let Some(bad) = bad {
        return openai_error(400, &bad, "invalid_file");
    }
    tokio::time::sleep(delay).await;
    if let Some((status, message)) = failure {
        return openai_error(status, &message, "server_error");
    }
    shared.update(|st| st.requests[index].transcript = Some(transcript.clone()));
    let asked = match (
        fields["stream"].as_str(),
        fields["response_format"].as_str(),
    ) {
        (Some("true"), _) => SttAnswer::Sse,
        (_, Some("text" | "srt" | "vtt")) => SttAnswer::Text,
        _ => SttAnswer::Json,
    };
    let answer = lock(&shared.state).knobs.stt_answer.unwrap_or(asked);
    match answer {
        SttAnswer::Json => axum::Json(json!({"text": transcript,
            "usage": {"type": "duration", "seconds": 1}}))
        .into_response(),
        SttAnswer::Text => (
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            format!("{transcript}\n"),
        )
            .into_response(),
        SttAnswer::Sse => {
            let mut body = String::new();
            for word in transcript.split_inclusive(' ') {
                let delta = json!({"type": "transcript.text.delta", "delta": word});
                body.push_str(&format!("data: {delta}\n\n"));
            }
            let done = json!({"type": "transcript.text.done", "text": transcript});
            body.push_str(&format!("data: {done}\n\n"));
            ([(header::CONTENT_TYPE, "text/event-stream")], body).into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multipart_bodies_are_split_into_named_parts() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::CONTENT_TYPE,
            "multipart/form-data; boundary=XyZ"
                .parse()
                .unwrap_or_else(|_| unreachable!()),
        );
        let body = b"--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.wav\"\r\n\
Content-Type: audio/wav\r\n\r\nRIFF\r\n--XyZ\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\n\
whisper-1\r\n--XyZ--\r\n";
        let parts = multipart(&headers, body).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(parts["file"], (Some("a.wav".to_owned()), b"RIFF".to_vec()));
        assert_eq!(parts["model"].1, b"whisper-1".to_vec());
    }
}
