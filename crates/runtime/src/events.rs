//! The event log of a session (R-API-6): each event gets the next `seq`, is
//! stored through the [`Journal`], then broadcast to live subscribers. Subscribers replay from the
//! store and fall back to it when they lag (R-RN-5), so a slow consumer
//! never blocks the session.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use futures::Stream;
use rtc_core::time::rfc3339_from_millis;
use rtc_protocol::{Message, SessionEvent};
use rtc_store::{SessionUpdate, Store, now_millis};
use serde_json::{Map, Value};
use tokio::sync::broadcast;

use crate::RuntimeError;
use crate::journal::{Entry, Journal};

/// How many live events a subscriber may fall behind before it re-reads
/// from the store.
const LIVE_BUFFER: usize = 256;
const REPLAY_PAGE: i64 = 500;

pub(crate) struct EventLog {
    session_id: String,
    store: Store,
    journal: Journal,
    live: Arc<Live>,
}

/// The live side of a session's events: a broadcast channel created when
/// the first subscriber comes (an idle session pays nothing for it), told
/// by the journal after each commit.
#[derive(Default)]
pub(crate) struct Live(Mutex<Option<broadcast::Sender<SessionEvent>>>);

impl Live {
    /// Tell the subscribers, if any.
    pub fn send(&self, event: SessionEvent) {
        if let Ok(slot) = self.0.lock()
            && let Some(tx) = slot.as_ref()
            && tx.receiver_count() > 0
        {
            let _ = tx.send(event);
        }
    }

    pub fn subscribe(&self) -> broadcast::Receiver<SessionEvent> {
        match self.0.lock() {
            Ok(mut slot) => slot
                .get_or_insert_with(|| broadcast::channel(LIVE_BUFFER).0)
                .subscribe(),
            Err(_) => broadcast::channel(1).1,
        }
    }

    fn receivers(&self) -> usize {
        self.0
            .lock()
            .ok()
            .and_then(|slot| slot.as_ref().map(broadcast::Sender::receiver_count))
            .unwrap_or(0)
    }
}

/// Whether [`EventLog::record`] waits for the commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Durability {
    /// Go on at once; the journal commits soon, in order.
    Queued,
    /// Return only once the records are committed (acknowledged input).
    Committed,
}

impl EventLog {
    pub fn new(session_id: &str, store: Store, journal: Journal) -> Self {
        Self {
            session_id: session_id.to_owned(),
            store,
            journal,
            live: Arc::default(),
        }
    }

    /// Another instance committed events of this session: live
    /// subscribers re-read the store (a marker no subscriber yields).
    pub fn poke(&self) {
        self.live.send(SessionEvent {
            kind: String::new(),
            session_id: self.session_id.clone(),
            seq: i64::MAX,
            timestamp: String::new(),
            data: Map::new(),
        });
    }

    /// How many live subscribers are attached.
    pub fn subscribers(&self) -> usize {
        self.live.receivers()
    }

    /// Record and broadcast an event; `data` should be a JSON object.
    pub async fn emit(&self, kind: &str, data: Value) -> Result<(), RuntimeError> {
        self.record(
            None,
            vec![(kind, data)],
            SessionUpdate::default(),
            Durability::Queued,
        )
        .await
    }

    /// Record events together with a change of the session row.
    pub async fn emit_with(
        &self,
        items: Vec<(&str, Value)>,
        update: SessionUpdate,
    ) -> Result<(), RuntimeError> {
        self.record(None, items, update, Durability::Queued).await
    }

    /// Store a message (if any) with events in one transaction, then
    /// broadcast the events. Their `seq` numbers are given in the commit,
    /// in the order records reach the journal, so several instances writing
    /// one session never collide.
    pub async fn record(
        &self,
        message: Option<Message>,
        items: Vec<(&str, Value)>,
        update: SessionUpdate,
        durability: Durability,
    ) -> Result<(), RuntimeError> {
        let now = now_millis();
        let timestamp = rfc3339_from_millis(now);
        let events: Vec<SessionEvent> = items
            .into_iter()
            .map(|(kind, data)| SessionEvent {
                kind: kind.to_owned(),
                session_id: self.session_id.clone(),
                seq: 0,
                timestamp: timestamp.clone(),
                data: match data {
                    Value::Object(m) => m,
                    other => Map::from_iter([("value".to_owned(), other)]),
                },
            })
            .collect();
        let entry = Entry {
            session: self.session_id.clone(),
            message,
            events,
            update,
            at_millis: now,
            live: self.live.clone(),
        };
        match durability {
            Durability::Queued => self.journal.write(entry).await,
            Durability::Committed => self.journal.write_awaitable(entry).await?.wait().await,
        }
    }

    /// Events after `after`: the stored ones, then live ones as they come.
    pub fn subscribe(&self, after: i64) -> impl Stream<Item = SessionEvent> + Send + use<> {
        let state = Subscription {
            rx: self.live.subscribe(),
            store: self.store.clone(),
            session: self.session_id.clone(),
            last: after,
            replay: VecDeque::new(),
            replaying: true,
        };
        futures::stream::unfold(state, |mut st| async move {
            loop {
                if let Some(ev) = st.replay.pop_front() {
                    if ev.seq > st.last {
                        st.last = ev.seq;
                        return Some((ev, st));
                    }
                    continue;
                }
                if st.replaying {
                    match st
                        .store
                        .events_after(&st.session, st.last, REPLAY_PAGE)
                        .await
                    {
                        Ok(page) if !page.is_empty() => {
                            st.replay = page.into();
                            continue;
                        }
                        Ok(_) => st.replaying = false,
                        Err(e) => {
                            tracing::warn!(error = %e, "event replay failed");
                            return None;
                        }
                    }
                }
                match st.rx.recv().await {
                    Ok(ev) if ev.seq == st.last + 1 => {
                        st.last = ev.seq;
                        return Some((ev, st));
                    }
                    // A gap: the missing events are in the store.
                    Ok(ev) if ev.seq > st.last => st.replaying = true,
                    Ok(_) => {}
                    Err(broadcast::error::RecvError::Lagged(_)) => st.replaying = true,
                    Err(broadcast::error::RecvError::Closed) => return None,
                }
            }
        })
    }
}

struct Subscription {
    rx: broadcast::Receiver<SessionEvent>,
    store: Store,
    session: String,
    last: i64,
    replay: VecDeque<SessionEvent>,
    replaying: bool,
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;
    use serde_json::json;

    use super::*;
    use crate::test_support::store_with_session;

    /// A subscriber that does not read while far more events than the live
    /// buffer are emitted still gets every event, in order (R-RN-5), and the
    /// emitter never waits for it.
    #[tokio::test]
    async fn lagging_subscribers_resume_from_the_store() {
        let dir = tempfile::tempdir().unwrap();
        let store = store_with_session(&dir).await;
        let log = EventLog::new("s", store.clone(), Journal::start(store, None));
        let mut early = Box::pin(log.subscribe(0));
        let total = LIVE_BUFFER as i64 * 3;
        for i in 1..=total {
            log.emit("test", json!({"i": i})).await.unwrap();
        }
        let mut late = Box::pin(log.subscribe(total - 5));
        for want in 1..=total {
            let ev = early.next().await.unwrap();
            assert_eq!(ev.seq, want);
            assert_eq!(ev.data["i"], want);
        }
        for want in total - 4..=total {
            assert_eq!(late.next().await.unwrap().seq, want);
        }
        log.emit("test", json!({"i": total + 1})).await.unwrap();
        assert_eq!(
            early.next().await.unwrap().seq,
            total + 1,
            "then live again"
        );
    }
}
