//! The live side of a session's events: what the journal tells
//! subscribers after each commit.

use std::sync::{Arc, Mutex};

use rtc_protocol::SessionEvent;
use tokio::sync::broadcast;

/// How many live events a subscriber may fall behind before it re-reads
/// from the store. Each slot is a pointer: the channel is allocated whole
/// when the first subscriber comes, so this is what a subscribed session
/// holds for it (a few KiB).
pub(crate) const LIVE_BUFFER: usize = 256;

/// One live event: shared by every subscriber, not copied per slot.
pub(crate) type LiveEvent = Option<Arc<SessionEvent>>;

/// The live side of a session's events: a broadcast channel created when
/// the first subscriber comes (an idle session pays nothing for it), told
/// by the journal after each commit. `None` tells subscribers to re-read
/// the store (another instance committed events of the session).
#[derive(Default)]
pub(crate) struct Live(Mutex<Option<broadcast::Sender<LiveEvent>>>);

impl Live {
    /// Tell the subscribers, if any.
    pub fn send(&self, event: LiveEvent) {
        if let Ok(slot) = self.0.lock()
            && let Some(tx) = slot.as_ref()
            && tx.receiver_count() > 0
        {
            let _ = tx.send(event);
        }
    }

    pub fn subscribe(&self) -> broadcast::Receiver<LiveEvent> {
        match self.0.lock() {
            Ok(mut slot) => slot
                .get_or_insert_with(|| broadcast::channel(LIVE_BUFFER).0)
                .subscribe(),
            Err(_) => broadcast::channel(1).1,
        }
    }

    pub fn receivers(&self) -> usize {
        self.0
            .lock()
            .ok()
            .and_then(|slot| slot.as_ref().map(broadcast::Sender::receiver_count))
            .unwrap_or(0)
    }
}
