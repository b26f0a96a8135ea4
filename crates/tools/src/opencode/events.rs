//! One `GET /event` subscription per OpenCode server, shared by every task
//! on it (design §2.3): the events the backend follows are broadcast to
//! the tasks' followers, which filter them by `sessionID`. The stream is
//! reopened with backoff when it drops; followers hear of the drop (and of
//! the reconnection, `server.connected`) so they re-check the status, since
//! missed events are not replayed. The reader runs only while someone
//! listens.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use tokio::sync::broadcast;
use tokio::task::JoinHandle;

use super::OpencodeClient;
use super::outcome::{OpencodeEvent, parse_event};

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
        let mut reader = self
            .reader
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
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
        if let Ok(mut reader) = self.reader.lock()
            && let Some(task) = reader.take()
        {
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
    let mut slot = reader
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
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
                match pump(response, &sender, &reader).await {
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

/// Forward one open stream's events until it ends.
async fn pump(
    response: reqwest::Response,
    sender: &broadcast::Sender<HubEvent>,
    reader: &Mutex<Option<JoinHandle<()>>>,
) -> Pumped {
    let mut stream = response.bytes_stream();
    let mut lines = SseLines::default();
    while let Some(chunk) = stream.next().await {
        let chunk = match chunk {
            Ok(chunk) => chunk,
            Err(e) => return Pumped::Ended(format!("the event stream broke off: {e}")),
        };
        for data in lines.push(&chunk) {
            if let Some(event) = parse_event(&data) {
                let _ = sender.send(HubEvent::Event(event));
            }
        }
        if nobody_listens(sender, reader) {
            return Pumped::NobodyListens;
        }
    }
    Pumped::Ended("the event stream ended".to_owned())
}

/// The `data:` payloads of a `text/event-stream`, fed in chunks.
#[derive(Default)]
pub(crate) struct SseLines {
    pending: Vec<u8>,
    data: Vec<String>,
}

impl SseLines {
    /// Feed bytes; the payloads of the events they complete.
    pub(crate) fn push(&mut self, bytes: &[u8]) -> Vec<String> {
        self.pending.extend_from_slice(bytes);
        let mut out = Vec::new();
        while let Some(end) = self.pending.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=end).collect();
            let line = String::from_utf8_lossy(&line);
            let line = line.trim_end_matches(['\n', '\r']);
            if line.is_empty() {
                if !self.data.is_empty() {
                    out.push(self.data.join("\n"));
                    self.data.clear();
                }
            } else if let Some(value) = line.strip_prefix("data:") {
                self.data
                    .push(value.strip_prefix(' ').unwrap_or(value).to_owned());
            }
        }
        out
    }
}
