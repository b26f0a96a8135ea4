//! What the platform reads from a server someone else chose (a tool's
//! endpoint, a search engine, an OpenCode server, a realtime provider) is
//! bounded (R-SEC-7): [`read_at_most`] reads a body up to a size, refusing
//! a larger one as soon as it is announced or read, and [`UpstreamLimits`]
//! holds the bounds for the servers a tenant names (bodies, one line of
//! an event stream, silence on a stream).

use std::time::Duration;

use futures::StreamExt;

/// Bounds on what is read from a server a tenant names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UpstreamLimits {
    /// Most bytes of one answer (OpenCode's JSON) or one message (a
    /// realtime provider's WebSocket message).
    pub max_body_bytes: usize,
    /// Most bytes of one line (or one event's data) of an event stream.
    pub max_line_bytes: usize,
    /// How long an event stream may stay silent before it is taken as
    /// broken and reopened.
    pub idle_timeout: Duration,
}

impl Default for UpstreamLimits {
    fn default() -> Self {
        Self {
            max_body_bytes: 8 * 1024 * 1024,
            max_line_bytes: 1024 * 1024,
            idle_timeout: Duration::from_secs(120),
        }
    }
}

/// Why a body could not be read.
#[derive(Debug)]
pub enum BodyError {
    /// It is (or was announced) larger than the bound.
    TooLarge(usize),
    /// The transfer failed.
    Transport(reqwest::Error),
}

/// The body of `resp`, at most `max` bytes: a larger `Content-Length` is
/// refused before reading, and reading stops at the first byte past it.
pub async fn read_at_most(resp: reqwest::Response, max: usize) -> Result<Vec<u8>, BodyError> {
    if resp.content_length().is_some_and(|n| n > max as u64) {
        return Err(BodyError::TooLarge(max));
    }
    let mut out = Vec::new();
    let mut stream = resp.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(BodyError::Transport)?;
        if out.len() + chunk.len() > max {
            return Err(BodyError::TooLarge(max));
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out)
}
