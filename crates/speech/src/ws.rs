//! The WebSocket providers' (Deepgram, ElevenLabs) connection: the guarded
//! connect of `rtc-realtime` ([`rtc_realtime::connect_guarded`]) with the
//! dialect's key header, a handshake refusal turned into a
//! [`SpeechError`] that keeps the provider's words (scrubbed), and a
//! close frame described for an event.

use std::time::Duration;

use tokio_tungstenite::tungstenite::protocol::CloseFrame;

pub(crate) use rtc_realtime::GuardedWs;
use rtc_realtime::WsConnectError;

use crate::config::AddressPolicy;
use crate::error::{Scrub, provider_message};
use crate::{Result, SpeechError};

/// How long one frame may take to be sent before the connection counts
/// as gone (a half-open socket).
pub(crate) const SEND_TIMEOUT: Duration = Duration::from_secs(5);

/// Connect to `url` with `headers` within `timeout`.
pub(crate) async fn connect(
    url: &url::Url,
    headers: &[(&'static str, String)],
    policy: AddressPolicy,
    timeout: Duration,
    scrub: &Scrub,
) -> Result<GuardedWs> {
    let connected = tokio::time::timeout(
        timeout,
        rtc_realtime::connect_guarded(url, headers, policy, crate::config::MAX_WS_MESSAGE_BYTES),
    )
    .await
    .map_err(|_| SpeechError::Timeout(timeout))?;
    let err = match connected {
        Ok(ws) => return Ok(ws),
        Err(e) => e,
    };
    let e = match err {
        WsConnectError::InvalidUrl(m) => SpeechError::InvalidUrl(m),
        WsConnectError::Blocked(host) => SpeechError::Blocked(host),
        WsConnectError::Connect(m) => SpeechError::Connect(m),
        WsConnectError::InvalidHeader(name) => {
            SpeechError::Config(format!("the API key is not a valid {name} header value"))
        }
        WsConnectError::Refused {
            status: 401 | 403,
            body,
            ..
        } => SpeechError::Unauthorized(provider_message(body.as_bytes())),
        WsConnectError::Refused { status, body, .. } => SpeechError::Http {
            status,
            message: provider_message(body.as_bytes()),
        },
    };
    Err(scrub.error(e))
}

/// `(code, message)` of a close frame for an error event: a provider code
/// at the start of the reason (`NET-0001 …`) or `closed_<code>`.
pub(crate) fn close_error(frame: Option<&CloseFrame>, scrub: &Scrub) -> (String, String) {
    let Some(frame) = frame else {
        return (
            "closed".into(),
            "the provider closed the connection without a close frame".into(),
        );
    };
    let code = u16::from(frame.code);
    let reason = scrub.text(&crate::error::bounded(&frame.reason));
    let provider_code = reason
        .split(|c: char| c.is_whitespace() || c == ':' || c == ',')
        .next()
        .filter(|w| is_provider_code(w));
    let code_text = provider_code.map_or_else(|| format!("closed_{code}"), str::to_owned);
    let message = if reason.is_empty() {
        format!("the provider closed the connection ({code})")
    } else {
        format!("the provider closed the connection ({code}: {reason})")
    };
    (code_text, message)
}

/// `NET-0001`, `DATA-0000`: capitals, a dash, four digits.
fn is_provider_code(word: &str) -> bool {
    let Some((head, digits)) = word.split_once('-') else {
        return false;
    };
    !head.is_empty()
        && head.chars().all(|c| c.is_ascii_uppercase())
        && digits.len() == 4
        && digits.chars().all(|c| c.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

    #[test]
    fn provider_codes_are_taken_from_the_reason() {
        let scrub = Scrub::new(Some("k3y"));
        let frame = CloseFrame {
            code: CloseCode::Error,
            reason: "NET-0001: no audio received (k3y)".into(),
        };
        let (code, message) = close_error(Some(&frame), &scrub);
        assert_eq!(code, "NET-0001");
        assert!(
            message.contains("1011") && !message.contains("k3y"),
            "{message}"
        );
        let frame = CloseFrame {
            code: CloseCode::Policy,
            reason: "Invalid API key".into(),
        };
        assert_eq!(close_error(Some(&frame), &scrub).0, "closed_1008");
        assert_eq!(close_error(None, &scrub).0, "closed");
    }
}
