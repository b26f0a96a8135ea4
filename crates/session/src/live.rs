//! The live side of a session's events: what the journal tells
//! subscribers after each commit.
//!
//! A broadcast channel would allocate all its slots when the first
//! subscriber comes, so every subscribed session would pay for a full
//! buffer while it waits on its model (R-PF-5). This one keeps only the
//! events some subscriber has not read yet, each counted by its readers,
//! and frees an event once everyone has read it: a subscribed session
//! that is caught up holds no events.

use std::collections::VecDeque;
use std::pin::pin;
use std::sync::Arc;

use parking_lot::{Mutex, MutexGuard};

use rtc_protocol::SessionEvent;
use tokio::sync::Notify;

/// How many live events a subscriber may fall behind before it re-reads
/// from the store.
pub const LIVE_BUFFER: usize = 256;

/// One live event: shared by every subscriber, not copied per reader.
/// `None` tells subscribers to re-read the store (another instance
/// committed events of the session).
pub type LiveEvent = Option<Arc<SessionEvent>>;

/// Why [`LiveReceiver::recv`] has no event to give.
#[derive(Debug, PartialEq, Eq)]
pub enum LiveError {
    /// The receiver fell more than [`LIVE_BUFFER`] events behind; the
    /// events it missed are in the store.
    Lagged,
    /// The session's event log is gone.
    Closed,
}

#[derive(Default)]
struct Ring {
    /// Unread events, oldest first, each with how many subscribers have
    /// yet to read it; `events[0]` is event number `base`.
    events: VecDeque<(LiveEvent, usize)>,
    base: u64,
    subscribers: usize,
    closed: bool,
}

impl Ring {
    /// The number the next event sent gets.
    fn end(&self) -> u64 {
        self.base + self.events.len() as u64
    }

    /// Free the events everyone has read.
    fn trim(&mut self) {
        while self.events.front().is_some_and(|(_, unread)| *unread == 0) {
            self.events.pop_front();
            self.base += 1;
        }
        if self.events.is_empty() && self.events.capacity() > 16 {
            self.events.shrink_to_fit();
        }
    }
}

/// The live events of one session. Idle, or subscribed and caught up, it
/// holds no event.
#[derive(Default)]
pub struct Live {
    ring: Mutex<Ring>,
    changed: Notify,
}

impl Live {
    fn ring(&self) -> MutexGuard<'_, Ring> {
        // A panic while the lock was held leaves a consistent ring: every
        // change is one push or pop.
        self.ring.lock()
    }

    /// Tell the subscribers, if any.
    pub fn send(&self, event: LiveEvent) {
        {
            let mut ring = self.ring();
            if ring.subscribers == 0 || ring.closed {
                return;
            }
            if ring.events.len() == LIVE_BUFFER {
                // The slowest reader falls behind and re-reads the store.
                ring.events.pop_front();
                ring.base += 1;
            }
            let readers = ring.subscribers;
            ring.events.push_back((event, readers));
        }
        self.changed.notify_waiters();
    }

    /// A receiver of the events sent from now on.
    #[cfg(test)]
    pub fn subscribe(self: &Arc<Self>) -> LiveReceiver {
        self.subscribe_within(usize::MAX)
            .unwrap_or_else(|| unreachable!("no bound"))
    }

    /// A receiver of the events sent from now on, unless `max` receivers
    /// are attached already (checked and counted under one lock).
    pub fn subscribe_within(self: &Arc<Self>, max: usize) -> Option<LiveReceiver> {
        let mut ring = self.ring();
        if ring.subscribers >= max {
            return None;
        }
        ring.subscribers += 1;
        Some(LiveReceiver {
            live: self.clone(),
            next: ring.end(),
        })
    }

    pub fn receivers(&self) -> usize {
        self.ring().subscribers
    }

    /// No more events come: receivers get [`LiveError::Closed`] once they
    /// have read what was sent.
    pub fn close(&self) {
        self.ring().closed = true;
        self.changed.notify_waiters();
    }
}

/// One subscriber's place in a session's live events.
pub struct LiveReceiver {
    live: Arc<Live>,
    /// The number of the next event to read.
    next: u64,
}

impl LiveReceiver {
    /// The next live event, waiting for it if none is there yet.
    pub async fn recv(&mut self) -> Result<LiveEvent, LiveError> {
        loop {
            let mut changed = pin!(self.live.changed.notified());
            {
                let mut ring = self.live.ring();
                if self.next < ring.base {
                    self.next = ring.base;
                    return Err(LiveError::Lagged);
                }
                let index = usize::try_from(self.next - ring.base).unwrap_or(usize::MAX);
                if let Some((event, unread)) = ring.events.get_mut(index) {
                    let event = event.clone();
                    *unread -= 1;
                    self.next += 1;
                    ring.trim();
                    return Ok(event);
                }
                if ring.closed {
                    return Err(LiveError::Closed);
                }
                // Registered under the lock: a send after it wakes us.
                changed.as_mut().enable();
            }
            changed.await;
        }
    }

    /// An event, if one is there now.
    #[cfg(test)]
    pub fn try_recv(&mut self) -> Option<LiveEvent> {
        let mut ring = self.live.ring();
        let index = usize::try_from(self.next.checked_sub(ring.base)?).ok()?;
        let (event, unread) = ring.events.get_mut(index)?;
        let event = event.clone();
        *unread -= 1;
        self.next += 1;
        ring.trim();
        Some(event)
    }
}

impl Drop for LiveReceiver {
    fn drop(&mut self) {
        let mut ring = self.live.ring();
        ring.subscribers -= 1;
        let from = usize::try_from(self.next.saturating_sub(ring.base)).unwrap_or(usize::MAX);
        for (_, unread) in ring.events.iter_mut().skip(from) {
            *unread -= 1;
        }
        ring.trim();
    }
}

#[cfg(test)]
mod tests {
    use rtc_protocol::EventBody;

    use super::*;

    fn event(seq: i64) -> LiveEvent {
        Some(Arc::new(SessionEvent {
            session_id: "s".into(),
            seq,
            timestamp: String::new(),
            test_mode: false,
            body: EventBody::error("test", seq.to_string()),
        }))
    }

    fn seq(e: &LiveEvent) -> i64 {
        e.as_ref().map_or(0, |e| e.seq)
    }

    fn held(live: &Live) -> usize {
        live.ring().events.len()
    }

    /// Each subscriber gets every event sent after it came, in order; an
    /// event is freed once every subscriber has read it, and a dropped
    /// subscriber no longer holds any.
    #[tokio::test]
    async fn events_are_kept_only_until_everyone_read_them() {
        let live = Arc::new(Live::default());
        live.send(event(1));
        assert_eq!(held(&live), 0, "nobody listens: nothing is kept");
        let mut a = live.subscribe();
        let mut b = live.subscribe();
        live.send(event(2));
        live.send(event(3));
        assert_eq!(seq(&a.recv().await.unwrap()), 2);
        assert_eq!(seq(&a.recv().await.unwrap()), 3);
        assert_eq!(held(&live), 2, "b has read nothing yet");
        assert_eq!(seq(&b.recv().await.unwrap()), 2);
        assert_eq!(held(&live), 1);
        drop(b);
        assert_eq!(
            held(&live),
            0,
            "a dropped reader releases what it had not read"
        );
        assert_eq!(live.receivers(), 1);
        let late = live.subscribe();
        live.send(event(4));
        drop(late);
        assert_eq!(seq(&a.try_recv().unwrap()), 4);
        assert_eq!(held(&live), 0);
    }

    /// A waiting receiver wakes for a new event, and for the close.
    #[tokio::test]
    async fn a_waiting_receiver_wakes_for_an_event_and_for_the_close() {
        let live = Arc::new(Live::default());
        let mut rx = live.subscribe();
        let sender = live.clone();
        let waiting = tokio::spawn(async move {
            let first = rx.recv().await;
            let second = rx.recv().await;
            (first, second)
        });
        tokio::task::yield_now().await;
        sender.send(event(7));
        tokio::task::yield_now().await;
        sender.close();
        let (first, second) = waiting.await.unwrap();
        assert_eq!(seq(&first.unwrap()), 7);
        assert_eq!(second.unwrap_err(), LiveError::Closed);
    }

    /// A receiver that falls more than the buffer behind is told so once,
    /// then reads on from the oldest event kept.
    #[tokio::test]
    async fn a_slow_receiver_lags_and_goes_on() {
        let live = Arc::new(Live::default());
        let mut rx = live.subscribe();
        let total = LIVE_BUFFER as i64 + 10;
        for n in 1..=total {
            live.send(event(n));
        }
        assert_eq!(held(&live), LIVE_BUFFER);
        assert_eq!(rx.recv().await.unwrap_err(), LiveError::Lagged);
        assert_eq!(seq(&rx.recv().await.unwrap()), 11);
    }
}
