//! `POST /v1/audio/speech` of the mock OpenAI-compatible speech server
//! (`speech_openai_mock.rs`): the real server's rules on the body, then a
//! 440 Hz tone of 20 ms per non-whitespace character as `pcm` (24 kHz) or
//! a `wav` with placeholder sizes (or what the mock is forced to answer),
//! after the first-byte delay, in paced pieces; a cut breaks the
//! connection mid-body. Each body notes its end, or the client leaving.

use std::sync::Arc;
use std::time::Instant;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::realtime_mock::lock;
use crate::speech_audio::{to_samples, tts_tone, wav_bytes};
use crate::speech_openai_mock::{OPENAI_PCM_RATE, Shared, TtsAnswer, check_key, log, openai_error};

/// The speech request's problem, if any (the real server's rules).
fn speech_refusal(body: &Value) -> Option<String> {
    let model = body["model"].as_str().unwrap_or_default();
    let input = body["input"].as_str().unwrap_or_default();
    if model.is_empty() {
        return Some("model: a model is required".into());
    }
    if input.is_empty() || input.chars().count() > 4096 {
        return Some("input: 1 to 4096 characters are required".into());
    }
    if body["voice"].is_null() {
        return Some("voice: a voice is required".into());
    }
    if model.starts_with("tts-1")
        && (body.get("stream_format").is_some() || body.get("instructions").is_some())
    {
        return Some(format!(
            "stream_format and instructions are not supported for {model}"
        ));
    }
    if body["speed"]
        .as_f64()
        .is_some_and(|s| !(0.25..=4.0).contains(&s))
    {
        return Some("speed: 0.25 to 4.0".into());
    }
    match body["response_format"].as_str() {
        Some("pcm" | "wav") => None,
        other => Some(format!("the mock answers pcm or wav, not {other:?}")),
    }
}

pub(crate) async fn speak(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let authorized = check_key(&shared, &headers);
    let index = log(
        &shared,
        "/v1/audio/speech",
        authorized.is_none(),
        request.clone(),
    );
    let finish = |status: u16| {
        shared.update(|st| {
            st.requests[index].status = status;
            st.requests[index].finished = Some(Instant::now());
        });
    };
    if let Some(refusal) = authorized {
        finish(401);
        return refusal;
    }
    if let Some(problem) = speech_refusal(&request) {
        finish(400);
        return openai_error(400, &problem, "invalid_value");
    }
    let (failure, delay, forced) = {
        let mut st = lock(&shared.state);
        st.in_flight += 1;
        st.max_in_flight = st.max_in_flight.max(st.in_flight);
        let k = &mut st.knobs;
        (k.tts_failures.pop_front(), k.first_byte_delay, k.tts_answer)
    };
    tokio::time::sleep(delay).await;
    if let Some((status, message)) = failure {
        shared.update(|st| st.in_flight -= 1);
        finish(status);
        return openai_error(status, &message, "server_error");
    }
    let asked = if request["response_format"] == "wav" {
        TtsAnswer::Wav
    } else {
        TtsAnswer::Pcm
    };
    let input = request["input"].as_str().unwrap_or_default().to_owned();
    let (content_type, audio) = match forced.unwrap_or(asked) {
        TtsAnswer::Pcm => ("audio/pcm", tts_tone(&input, OPENAI_PCM_RATE)),
        TtsAnswer::Wav => {
            let samples = to_samples(&tts_tone(&input, OPENAI_PCM_RATE));
            ("audio/wav", wav_bytes(&samples, OPENAI_PCM_RATE, true))
        }
        TtsAnswer::Mp3 => ("audio/mpeg", b"ID3\x04\x00\x00\x00\x00\x00\x00".to_vec()),
    };
    let (tx, rx) = mpsc::channel::<Result<Bytes, std::io::Error>>(1);
    tokio::spawn(stream_body(shared.clone(), index, audio, tx));
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    });
    (
        [(header::CONTENT_TYPE, content_type)],
        Body::from_stream(stream),
    )
        .into_response()
}

/// Send `audio` in paced pieces; note the end, a cut, or the client leaving.
async fn stream_body(
    shared: Arc<Shared>,
    index: usize,
    audio: Vec<u8>,
    tx: mpsc::Sender<Result<Bytes, std::io::Error>>,
) {
    let (piece_ms, pace, cut) = {
        let st = lock(&shared.state);
        (st.knobs.piece_ms, st.knobs.pace, st.knobs.cut_after_bytes)
    };
    let piece = usize::try_from(piece_ms * u64::from(OPENAI_PCM_RATE) / 1000 * 2).unwrap_or(4800);
    let mut sent = 0;
    let mut aborted = false;
    for (i, bytes) in audio.chunks(piece.max(2)).enumerate() {
        if i > 0 && !pace.is_zero() {
            tokio::time::sleep(pace).await;
        }
        let bytes = match cut {
            Some(limit) if sent + bytes.len() > limit => &bytes[..limit.saturating_sub(sent)],
            _ => bytes,
        };
        if tx.send(Ok(Bytes::copy_from_slice(bytes))).await.is_err() {
            aborted = true;
            break;
        }
        sent += bytes.len();
        shared.update(|st| st.requests[index].audio_bytes = sent);
        if cut.is_some_and(|limit| sent >= limit) {
            let _ = tx.send(Err(std::io::Error::other("cut by the mock"))).await;
            aborted = true;
            break;
        }
    }
    if !aborted {
        // Wait for the body's end to be taken (or the client to leave).
        aborted = tx.send(Ok(Bytes::new())).await.is_err();
    }
    shared.update(|st| {
        st.in_flight -= 1;
        let r = &mut st.requests[index];
        r.finished = Some(Instant::now());
        r.aborted = aborted;
    });
}
