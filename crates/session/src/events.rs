//! The event log of a session (R-API-6): each event gets the next `seq`, is
//! stored through the [`Journal`], then broadcast to live subscribers. Subscribers replay from the
//! store and fall back to it when they lag (R-RN-5), so a slow consumer
//! never blocks the session.

use std::collections::VecDeque;
use std::sync::Arc;

use futures::Stream;
use rtc_core::time::rfc3339_from_millis;
use rtc_protocol::{EventBody, Message, SessionEvent};
use rtc_store::{SessionUpdate, Store, now_millis};

use crate::RuntimeError;
use crate::journal::{Entry, Journal};
#[cfg(test)]
use crate::live::LIVE_BUFFER;
use crate::live::{Live, LiveError, LiveReceiver};

const REPLAY_PAGE: i64 = 500;

pub struct EventLog {
    session_id: String,
    /// Every event is marked `testMode` (R-BX-10).
    test_mode: bool,
    store: Store,
    journal: Journal,
    live: Arc<Live>,
    /// Events recorded through this log since it was opened (a workflow
    /// walk counts its own from here).
    emitted: std::sync::atomic::AtomicU64,
}

/// Whether [`EventLog::record`] waits for the commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// Go on at once; the journal commits soon, in order.
    Queued,
    /// Return only once the records are committed (acknowledged input).
    Committed,
}

impl EventLog {
    pub fn new(session_id: &str, test_mode: bool, store: Store, journal: Journal) -> Self {
        Self {
            session_id: session_id.to_owned(),
            test_mode,
            store,
            journal,
            live: Arc::default(),
            emitted: Default::default(),
        }
    }

    /// How many events were recorded through this log so far.
    pub fn emitted(&self) -> u64 {
        self.emitted.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Another instance committed events of this session: live
    /// subscribers re-read the store.
    pub fn poke(&self) {
        self.live.send(None);
    }

    /// How many live subscribers are attached.
    pub fn subscribers(&self) -> usize {
        self.live.receivers()
    }

    /// Record and broadcast an event.
    ///
    /// These are plain functions returning the journal's future: the
    /// record is built and boxed before the first await, so what a caller
    /// holds while the write is queued is a pointer, not every layer's
    /// copy of the record (R-PF-5).
    pub fn emit(
        &self,
        event: EventBody,
    ) -> impl Future<Output = Result<(), RuntimeError>> + Send + '_ {
        self.record(
            None,
            vec![event],
            SessionUpdate::default(),
            Durability::Queued,
        )
    }

    /// Record events together with a change of the session row.
    pub fn emit_with(
        &self,
        events: Vec<EventBody>,
        update: SessionUpdate,
    ) -> impl Future<Output = Result<(), RuntimeError>> + Send + '_ {
        self.record(None, events, update, Durability::Queued)
    }

    /// Store a message (if any) with events in one transaction, then
    /// broadcast the events. Their `seq` numbers are given in the commit,
    /// in the order records reach the journal, so several instances writing
    /// one session never collide.
    pub fn record(
        &self,
        message: Option<Message>,
        events: Vec<EventBody>,
        update: SessionUpdate,
        durability: Durability,
    ) -> impl Future<Output = Result<(), RuntimeError>> + Send + '_ {
        let now = now_millis();
        self.emitted
            .fetch_add(events.len() as u64, std::sync::atomic::Ordering::Relaxed);
        let timestamp = rfc3339_from_millis(now);
        let events: Vec<SessionEvent> = events
            .into_iter()
            .map(|body| SessionEvent {
                session_id: self.session_id.clone(),
                seq: 0,
                timestamp: timestamp.clone(),
                test_mode: self.test_mode,
                body,
            })
            .collect();
        let entry = Box::new(Entry {
            session: self.session_id.clone(),
            message,
            events,
            update,
            at_millis: now,
            live: self.live.clone(),
        });
        let journal = &self.journal;
        async move {
            match durability {
                Durability::Queued => journal.write(entry).await,
                Durability::Committed => journal.write_awaitable(entry).await?.wait().await,
            }
        }
    }

    /// Events after `after`: the stored ones, then live ones as they come;
    /// `None` when `max` subscribers are attached already.
    pub fn subscribe(
        &self,
        after: i64,
        max: usize,
    ) -> Option<impl Stream<Item = SessionEvent> + Send + use<>> {
        let state = Subscription {
            rx: self.live.subscribe_within(max)?,
            store: self.store.clone(),
            session: self.session_id.clone(),
            last: after,
            replay: VecDeque::new(),
            replaying: true,
        };
        Some(futures::stream::unfold(state, |mut st| async move {
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
                            // A short page is all the store had: what
                            // comes after it arrives live (the receiver
                            // was open before the read).
                            st.replaying =
                                i64::try_from(page.len()).unwrap_or(i64::MAX) >= REPLAY_PAGE;
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
                    Ok(Some(ev)) if Some(ev.seq) == st.last.checked_add(1) => {
                        st.last = ev.seq;
                        let ev = Arc::unwrap_or_clone(ev);
                        return Some((ev, st));
                    }
                    // A gap: the missing events are in the store.
                    Ok(Some(ev)) if ev.seq > st.last => st.replaying = true,
                    // Another instance wrote: the store has what is new.
                    Ok(None) => st.replaying = true,
                    Ok(Some(_)) => {}
                    Err(LiveError::Lagged) => st.replaying = true,
                    Err(LiveError::Closed) => return None,
                }
            }
        }))
    }
}

impl Drop for EventLog {
    /// Subscribers end once they have read what was sent.
    fn drop(&mut self) {
        self.live.close();
    }
}

struct Subscription {
    rx: LiveReceiver,
    store: Store,
    session: String,
    last: i64,
    replay: VecDeque<SessionEvent>,
    replaying: bool,
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;
    use rtc_protocol::EventBody;

    use super::*;
    use crate::store_tests::store_with_session;

    /// A subscriber that does not read while far more events than the live
    /// buffer are emitted still gets every event, in order (R-RN-5), and the
    /// emitter never waits for it.
    #[tokio::test]
    async fn lagging_subscribers_resume_from_the_store() {
        let dir = tempfile::tempdir().unwrap();
        let store = store_with_session(&dir).await;
        let log = EventLog::new("s", false, store.clone(), Journal::start(store, None));
        let mut early = Box::pin(log.subscribe(0, 2).unwrap());
        let total = LIVE_BUFFER as i64 * 3;
        for i in 1..=total {
            log.emit(EventBody::error("test", i.to_string()))
                .await
                .unwrap();
        }
        let mut late = Box::pin(log.subscribe(total - 5, 2).unwrap());
        assert!(log.subscribe(0, 2).is_none(), "two is the bound");
        for want in 1..=total {
            let ev = early.next().await.unwrap();
            assert_eq!(ev.seq, want);
            assert_eq!(ev.body, EventBody::error("test", want.to_string()));
        }
        for want in total - 4..=total {
            assert_eq!(late.next().await.unwrap().seq, want);
        }
        log.emit(EventBody::error("test", (total + 1).to_string()))
            .await
            .unwrap();
        assert_eq!(
            early.next().await.unwrap().seq,
            total + 1,
            "then live again"
        );
        drop(late);
        assert!(
            log.subscribe(0, 2).is_some(),
            "a closed one frees its place"
        );
    }
}
