//! Why a speech operation failed ([`SpeechError`]), and the scrubbing of
//! the API key out of anything a provider says ([`Scrub`]): the key is
//! revealed only in the request header of its dialect, and no error or
//! event carries it, even when a provider echoes it back.

use std::sync::Arc;
use std::time::Duration;

/// Why a speech operation failed. Provider texts are kept (bounded), with
/// the API key replaced by `[redacted]`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpeechError {
    #[error("the speech configuration is not valid: {0}")]
    Config(String),
    #[error("the speech provider URL is not valid: {0}")]
    InvalidUrl(String),
    #[error("the outbound guard refused {0}")]
    Blocked(String),
    #[error("could not connect to the speech provider: {0}")]
    Connect(String),
    #[error("the speech provider refused the credentials: {0}")]
    Unauthorized(String),
    #[error("the speech provider answered HTTP {status}: {message}")]
    Http { status: u16, message: String },
    #[error("the speech provider did not answer within {0:?}")]
    Timeout(Duration),
    #[error("the speech provider sent too much: {0}")]
    TooLarge(String),
    #[error("the speech provider's answer is not understood: {0}")]
    Protocol(String),
    #[error("the speech engine is not available: {0}")]
    Unavailable(String),
    #[error("the speech stream is closed")]
    Closed,
}

impl SpeechError {
    /// A short machine code for events: `config`, `invalid_url`, `blocked`,
    /// `connect`, `unauthorized`, `http_<status>`, `timeout`, `too_large`,
    /// `protocol`, `unavailable`, `closed`.
    pub fn code(&self) -> String {
        match self {
            Self::Config(_) => "config".into(),
            Self::InvalidUrl(_) => "invalid_url".into(),
            Self::Blocked(_) => "blocked".into(),
            Self::Connect(_) => "connect".into(),
            Self::Unauthorized(_) => "unauthorized".into(),
            Self::Http { status, .. } => format!("http_{status}"),
            Self::Timeout(_) => "timeout".into(),
            Self::TooLarge(_) => "too_large".into(),
            Self::Protocol(_) => "protocol".into(),
            Self::Unavailable(_) => "unavailable".into(),
            Self::Closed => "closed".into(),
        }
    }

    /// The same error with `scrub` applied to every text it holds.
    pub(crate) fn scrubbed(self, scrub: &Scrub) -> Self {
        match self {
            Self::Config(m) => Self::Config(scrub.text(&m)),
            Self::InvalidUrl(m) => Self::InvalidUrl(scrub.text(&m)),
            Self::Blocked(m) => Self::Blocked(scrub.text(&m)),
            Self::Connect(m) => Self::Connect(scrub.text(&m)),
            Self::Unauthorized(m) => Self::Unauthorized(scrub.text(&m)),
            Self::Http { status, message } => Self::Http {
                status,
                message: scrub.text(&message),
            },
            Self::TooLarge(m) => Self::TooLarge(scrub.text(&m)),
            Self::Protocol(m) => Self::Protocol(scrub.text(&m)),
            Self::Unavailable(m) => Self::Unavailable(scrub.text(&m)),
            other @ (Self::Timeout(_) | Self::Closed) => other,
        }
    }
}

pub type Result<T> = std::result::Result<T, SpeechError>;

/// Replaces the API key in provider texts. Its `Debug` never shows the key.
#[derive(Clone, Default)]
pub(crate) struct Scrub {
    key: Option<Arc<str>>,
}

impl std::fmt::Debug for Scrub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Scrub")
    }
}

/// What stands where the key was.
pub(crate) const REDACTED: &str = "[redacted]";

/// The longest provider text kept in an error, in characters.
const MAX_PROVIDER_TEXT: usize = 500;

impl Scrub {
    pub(crate) fn new(key: Option<&str>) -> Self {
        Self {
            key: key.filter(|k| !k.is_empty()).map(Arc::from),
        }
    }

    /// `text` without the key (and without the key's trimmed form).
    pub(crate) fn text(&self, text: &str) -> String {
        let Some(key) = &self.key else {
            return text.to_owned();
        };
        let mut out = text.replace(&**key, REDACTED);
        let trimmed = key.trim();
        if !trimmed.is_empty() && trimmed != &**key {
            out = out.replace(trimmed, REDACTED);
        }
        out
    }

    pub(crate) fn error(&self, e: SpeechError) -> SpeechError {
        e.scrubbed(self)
    }

    pub(crate) fn result<T>(&self, r: Result<T>) -> Result<T> {
        r.map_err(|e| self.error(e))
    }
}

/// The message in a provider's error body: `error.message`, `err_msg`
/// (Deepgram), `detail` (string or `{message}`), `message`, `error` as a
/// string, else the body itself; trimmed to 500 characters. Not scrubbed.
pub(crate) fn provider_message(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let found = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|v| {
            let candidates = [
                v.pointer("/error/message"),
                v.get("err_msg"),
                v.pointer("/detail/message"),
                v.get("detail"),
                v.get("message"),
                v.get("error"),
            ];
            candidates
                .into_iter()
                .flatten()
                .find_map(|c| c.as_str().map(str::to_owned))
        });
    let message = found.unwrap_or_else(|| text.trim().to_owned());
    bounded(&message)
}

/// `text` cut to [`MAX_PROVIDER_TEXT`] characters.
pub(crate) fn bounded(text: &str) -> String {
    if text.chars().count() <= MAX_PROVIDER_TEXT {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(MAX_PROVIDER_TEXT).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_replaced_everywhere() {
        let scrub = Scrub::new(Some("sk-secret"));
        let e = SpeechError::Http {
            status: 401,
            message: "Incorrect API key provided: sk-secret (sk-secret)".into(),
        };
        let shown = scrub.error(e).to_string();
        assert!(!shown.contains("sk-secret"), "{shown}");
        assert!(shown.contains(REDACTED));
        assert_eq!(Scrub::new(None).text("sk-secret"), "sk-secret");
    }

    #[test]
    fn provider_messages_are_found_in_the_usual_shapes() {
        let cases: [(&str, &str); 5] = [
            (
                r#"{"error":{"message":"bad model","type":"x"}}"#,
                "bad model",
            ),
            (
                r#"{"err_code":"INVALID_AUTH","err_msg":"Invalid credentials."}"#,
                "Invalid credentials.",
            ),
            (r#"{"detail":{"status":"x","message":"quota"}}"#, "quota"),
            (r#"{"detail":"Not found"}"#, "Not found"),
            ("  plain text  ", "plain text"),
        ];
        for (body, want) in cases {
            assert_eq!(provider_message(body.as_bytes()), want);
        }
        let long = "x".repeat(2000);
        assert_eq!(provider_message(long.as_bytes()).chars().count(), 501);
    }
}
