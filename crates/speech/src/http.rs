//! The HTTP providers' (OpenAI-compatible STT and TTS) shared pieces: a
//! request failure or an error status turned into a [`SpeechError`] that
//! keeps the provider's words, and bodies read within a bound and a stall
//! timeout.

use std::time::Duration;

use crate::error::provider_message;
use crate::{Result, SpeechError};

/// A failed `send` or body read: refused by the outbound guard, timed out,
/// or the connection's own words (with their causes).
pub(crate) fn request_error(e: &reqwest::Error) -> SpeechError {
    if let Some(blocked) = rtc_tools::net_guard::blocked_host(e) {
        return SpeechError::Blocked(blocked.host.clone());
    }
    let mut message = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    SpeechError::Connect(message)
}

/// The error of a non-success answer, its body read (at most 64 KiB).
pub(crate) async fn status_error(resp: reqwest::Response, stall: Duration) -> SpeechError {
    let status = resp.status().as_u16();
    let body = read_bounded(resp, 64 * 1024, stall)
        .await
        .unwrap_or_default();
    let message = provider_message(&body);
    if matches!(status, 401 | 403) {
        SpeechError::Unauthorized(message)
    } else {
        SpeechError::Http { status, message }
    }
}

/// The next body piece within `stall`, `None` at the end.
pub(crate) async fn next_piece(
    resp: &mut reqwest::Response,
    stall: Duration,
) -> Result<Option<bytes::Bytes>> {
    match tokio::time::timeout(stall, resp.chunk()).await {
        Err(_) => Err(SpeechError::Timeout(stall)),
        Ok(Err(e)) => Err(request_error(&e)),
        Ok(Ok(piece)) => Ok(piece),
    }
}

/// The whole body, refused beyond `max` bytes; each piece within `stall`.
pub(crate) async fn read_bounded(
    mut resp: reqwest::Response,
    max: usize,
    stall: Duration,
) -> Result<Vec<u8>> {
    let mut body = Vec::new();
    while let Some(piece) = next_piece(&mut resp, stall).await? {
        if body.len() + piece.len() > max {
            return Err(SpeechError::TooLarge(format!(
                "the answer exceeds {max} bytes"
            )));
        }
        body.extend_from_slice(&piece);
    }
    Ok(body)
}

/// The media type of a response, lower case, without parameters.
pub(crate) fn media_type(resp: &reqwest::Response) -> Option<(String, String)> {
    let value = resp
        .headers()
        .get(reqwest::header::CONTENT_TYPE)?
        .to_str()
        .ok()?;
    let (kind, params) = value.split_once(';').unwrap_or((value, ""));
    Some((
        kind.trim().to_ascii_lowercase(),
        params.to_ascii_lowercase(),
    ))
}
