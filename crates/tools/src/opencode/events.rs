//! One `GET /event` subscription per OpenCode server, shared by every task
//! on it (design §2.3): the events the backend follows are broadcast to
//! the tasks' followers, which filter them by `sessionID`. The stream is
//! reopened with backoff when it drops; followers hear of the drop (and of
//! the reconnection, `server.connected`) so they re-check the status, since
//! missed events are not replayed. The reader runs only while someone
//! listens.

use std::sync::Arc;

use parking_lot::Mutex;
use std::time::Duration;

use futures::StreamExt;
use tokio::sync::broadcast;
use tokio::task::JoinHandle;

use super::OpencodeClient;
use super::outcome::{OpencodeEvent, parse_event};
use crate::upstream::UpstreamLimits;

/// Buffered events per listener; a listener that falls further behind
/// misses some and re-checks the status (its receiver reports the lag).
const CAPACITY: usize = 256;

/// The first pause before reopening a dropped stream; it doubles up to
/// [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// How long opening the stream (until its response headers) may take.
const OPEN_TIMEOUT: Duration = Duration::from_secs(5);

/// What a listener hears.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HubEvent {
    Event(OpencodeEvent),
    /// The stream could not be opened or broke off (why); it is being
    /// reopened.
    Disconnected(String),
}

/// The shared subscription of one server. Dropping it stops the reader.
pub struct EventHub {
    sender: broadcast::Sender<HubEvent>,
    client: OpencodeClient,
    reader: Arc<Mutex<Option<JoinHandle<()>>>>,
}

impl std::fmt::Debug for EventHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventHub")
            .field("server", &self.client.base_url())
            .field("listeners", &self.sender.receiver_count())
            .finish()
    }
}

impl EventHub {
    pub fn new(client: OpencodeClient) -> Self {
        let (sender, _) = broadcast::channel(CAPACITY);
        Self {
            sender,
            client,
            reader: Arc::default(),
        }
    }

    /// Listen to the server's events (starting the reader if it is not
    /// running).
    pub fn subscribe(&self) -> broadcast::Receiver<HubEvent> {
        let mut reader = self.reader.lock();
        let receiver = self.sender.subscribe();
        if reader.as_ref().is_none_or(JoinHandle::is_finished) {
            *reader = Some(tokio::spawn(read_events(
                self.client.clone(),
                self.sender.clone(),
                Arc::clone(&self.reader),
            )));
        }
        receiver
    }
}

impl Drop for EventHub {
    fn drop(&mut self) {
        if let Some(task) = self.reader.lock().take() {
            task.abort();
        }
    }
}

/// Whether nobody listens any more; then the reader forgets itself (under
/// the lock [`EventHub::subscribe`] takes, so a new listener restarts it).
fn nobody_listens(
    sender: &broadcast::Sender<HubEvent>,
    reader: &Mutex<Option<JoinHandle<()>>>,
) -> bool {
    let mut slot = reader.lock();
    if sender.receiver_count() == 0 {
        *slot = None;
        return true;
    }
    false
}

async fn read_events(
    client: OpencodeClient,
    sender: broadcast::Sender<HubEvent>,
    reader: Arc<Mutex<Option<JoinHandle<()>>>>,
) {
    let mut backoff = FIRST_BACKOFF;
    loop {
        if nobody_listens(&sender, &reader) {
            return;
        }
        // A request sent while the server starts was seen to hang: opening
        // is bounded, reading is not (the stream lives as long as it can).
        let reason = match tokio::time::timeout(OPEN_TIMEOUT, client.open_events()).await {
            Err(_) => "the event stream did not open in time".to_owned(),
            Ok(Ok(response)) => {
                backoff = FIRST_BACKOFF;
                match pump(response, client.limits(), &sender, &reader).await {
                    Pumped::NobodyListens => return,
                    Pumped::Ended(reason) => reason,
                }
            }
            Ok(Err(e)) => e.to_string(),
        };
        tracing::debug!(server = client.base_url(), %reason, "OpenCode event stream dropped");
        let _ = sender.send(HubEvent::Disconnected(reason));
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

enum Pumped {
    NobodyListens,
    Ended(String),
}

/// Forward one open stream's events until it ends, breaks, stays silent
/// past the idle timeout, or sends a line past the line bound (R-SEC-7:
/// a server that never ends a line must not make us hold its bytes).
async fn pump(
    response: reqwest::Response,
    limits: UpstreamLimits,
    sender: &broadcast::Sender<HubEvent>,
    reader: &Mutex<Option<JoinHandle<()>>>,
) -> Pumped {
    let mut stream = response.bytes_stream();
    let mut lines = SseLines::new(limits.max_line_bytes);
    loop {
        let chunk = match tokio::time::timeout(limits.idle_timeout, stream.next()).await {
            Err(_) => {
                return Pumped::Ended(format!(
                    "the event stream was silent for {} s",
                    limits.idle_timeout.as_secs()
                ));
            }
            Ok(None) => return Pumped::Ended("the event stream ended".to_owned()),
            Ok(Some(Err(e))) => return Pumped::Ended(format!("the event stream broke off: {e}")),
            Ok(Some(Ok(chunk))) => chunk,
        };
        let events = match lines.push(&chunk) {
            Ok(events) => events,
            Err(LineTooLong(max)) => {
                return Pumped::Ended(format!(
                    "the event stream sent a line longer than {max} bytes (RTC_MAX_UPSTREAM_LINE_BYTES)"
                ));
            }
        };
        for data in events {
            if let Some(event) = parse_event(&data) {
                let _ = sender.send(HubEvent::Event(event));
            }
        }
        if nobody_listens(sender, reader) {
            return Pumped::NobodyListens;
        }
    }
}

/// A line (or one event's data) longer than the bound, in bytes.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct LineTooLong(pub usize);

/// The `data:` payloads of a `text/event-stream`, fed in chunks. Each byte
/// is scanned once; an unfinished line or event's data is held only up to
/// `max` bytes.
pub(crate) struct SseLines {
    pending: Vec<u8>,
    /// `pending[..scanned]` holds no newline.
    scanned: usize,
    data: Vec<String>,
    data_bytes: usize,
    max: usize,
}

impl SseLines {
    pub(crate) fn new(max: usize) -> Self {
        Self {
            pending: Vec::new(),
            scanned: 0,
            data: Vec::new(),
            data_bytes: 0,
            max,
        }
    }

    /// Feed bytes; the payloads of the events they complete.
    pub(crate) fn push(&mut self, bytes: &[u8]) -> Result<Vec<String>, LineTooLong> {
        self.pending.extend_from_slice(bytes);
        let mut out = Vec::new();
        let mut start = 0;
        while let Some(at) = memchr::memchr(b'\n', &self.pending[self.scanned..]) {
            let end = self.scanned + at;
            let line = String::from_utf8_lossy(&self.pending[start..end]);
            let line = line.trim_end_matches('\r');
            if line.is_empty() {
                if !self.data.is_empty() {
                    out.push(self.data.join("\n"));
                    self.data.clear();
                    self.data_bytes = 0;
                }
            } else if let Some(value) = line.strip_prefix("data:") {
                let value = value.strip_prefix(' ').unwrap_or(value);
                self.data_bytes += value.len();
                if self.data_bytes > self.max {
                    return Err(LineTooLong(self.max));
                }
                self.data.push(value.to_owned());
            }
            start = end + 1;
            self.scanned = start;
        }
        self.pending.drain(..start);
        self.scanned = self.pending.len();
        if self.pending.len() > self.max {
            return Err(LineTooLong(self.max));
        }
        Ok(out)
    }
}
