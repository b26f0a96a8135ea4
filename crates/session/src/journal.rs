//! The journal: one writer task that commits session records (a message,
//! its events, changes of the session row) in arrival order, many at a time in one transaction
//! (group commit), and broadcasts each event only after it is committed,
//! with the `seq` the commit gave it.
//!
//! A turn does not wait for its records to reach the disk (R-PF-1): it
//! goes on while the writer commits. Whoever must know a record is durable
//! — a user message before it is acknowledged (R-ST-3) — waits for it with
//! [`Journal::write_awaitable`]; [`Journal::flush`] waits until everything
//! queued so far is committed (before reading the store back). A crash can
//! lose only records of a running turn, which recovery marks interrupted;
//! a tool call left without its result is shown to the model as cancelled.

use rtc_protocol::{Message, SessionEvent};
use rtc_store::{SessionRecords, SessionUpdate, Store};
use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};

use crate::RuntimeError;
use crate::live::Live;

/// Records waiting for the writer before `write` waits for room
/// (backpressure instead of unbounded memory).
const QUEUE: usize = 8192;
/// Most records committed in one transaction.
const BATCH: usize = 512;

/// What one write stores and whom it tells.
pub struct Entry {
    pub session: String,
    pub message: Option<Message>,
    pub events: Vec<SessionEvent>,
    pub update: SessionUpdate,
    pub at_millis: i64,
    /// Live subscribers of the session, told after the commit.
    pub live: Arc<Live>,
}

/// Told when a write is committed (or why it failed).
type Done = oneshot::Sender<Result<(), CommitError>>;

/// Why records queued for a session were not committed.
#[derive(Debug, Clone, thiserror::Error)]
enum CommitError {
    /// The session was deleted meanwhile; its records were dropped.
    #[error("session {0} no longer exists; its records were dropped")]
    SessionGone(String),
    /// The store refused the write.
    #[error("{0}")]
    Store(String),
}

enum Job {
    /// Boxed: a queued write is a pointer, and so is every future that
    /// carries one to the channel (R-PF-5).
    Write(Box<Entry>, Option<Done>),
    Flush(oneshot::Sender<()>),
}

/// Handle to the writer task; cheap to clone.
#[derive(Clone)]
pub struct Journal {
    tx: mpsc::Sender<Job>,
}

/// Who writes: announced to other instances on PostgreSQL.
type Instance = Option<Arc<str>>;

impl Journal {
    /// Start the writer task; it ends when the last handle is dropped,
    /// after committing what was queued.
    pub fn start(store: Store, instance: Option<&str>) -> Self {
        let (tx, rx) = mpsc::channel(QUEUE);
        tokio::spawn(run(store, rx, instance.map(Arc::from)));
        Self { tx }
    }

    /// Queue records; they are committed and broadcast soon, in order.
    pub async fn write(&self, entry: Box<Entry>) -> Result<(), RuntimeError> {
        self.tx
            .send(Job::Write(entry, None))
            .await
            .map_err(|_| stopped())
    }

    /// Queue records and get a handle that tells when they are committed.
    pub async fn write_awaitable(&self, entry: Box<Entry>) -> Result<Commit, RuntimeError> {
        let (done, wait) = oneshot::channel();
        self.tx
            .send(Job::Write(entry, Some(done)))
            .await
            .map_err(|_| stopped())?;
        Ok(Commit(wait))
    }

    /// Wait until every record queued before this call is committed.
    pub async fn flush(&self) {
        let (done, wait) = oneshot::channel();
        if self.tx.send(Job::Flush(done)).await.is_ok() {
            let _ = wait.await;
        }
    }
}

/// The commit of queued records, to wait for.
pub struct Commit(oneshot::Receiver<Result<(), CommitError>>);

impl Commit {
    /// Wait until the records are committed.
    pub async fn wait(self) -> Result<(), RuntimeError> {
        self.0
            .await
            .map_err(|_| stopped())?
            .map_err(|e| RuntimeError::Internal(e.to_string()))
    }
}

fn stopped() -> RuntimeError {
    RuntimeError::Internal("the journal writer has stopped".into())
}

async fn run(store: Store, mut rx: mpsc::Receiver<Job>, me: Instance) {
    let mut jobs = Vec::with_capacity(BATCH);
    while rx.recv_many(&mut jobs, BATCH).await > 0 {
        // One commit for everything taken, then every flush in it is
        // answered: a flush asks only that what was queued before it is
        // committed, and committing more with it costs no extra round trip
        // (many sessions flushing at once share one commit).
        let mut writes = Vec::new();
        let mut flushes = Vec::new();
        for job in jobs.drain(..) {
            match job {
                Job::Write(entry, done) => writes.push((entry, done)),
                Job::Flush(done) => flushes.push(done),
            }
        }
        commit(&store, writes, me.as_deref()).await;
        for done in flushes {
            let _ = done.send(());
        }
    }
}

/// Commit a batch; if the batch fails, each write on its own, so one bad
/// record cannot lose the others. Events are broadcast after their commit.
async fn commit(store: &Store, writes: Vec<(Box<Entry>, Option<Done>)>, me: Option<&str>) {
    if writes.is_empty() {
        return;
    }
    let mut writes = writes;
    let mut batch: Vec<SessionRecords<'_>> = writes.iter_mut().map(|(e, _)| records(e)).collect();
    let outcome = store.append_batch(&mut batch, me).await;
    drop(batch);
    if let Ok(gone) = outcome {
        for (entry, done) in writes {
            let outcome = match gone.contains(&entry.session) {
                true => Err(CommitError::SessionGone(entry.session.clone())),
                false => Ok(()),
            };
            publish(entry, done, outcome);
        }
        return;
    }
    for (mut entry, done) in writes {
        let outcome = match store.append_batch(&mut [records(&mut entry)], me).await {
            Ok(gone) if gone.is_empty() => Ok(()),
            Ok(_) => Err(CommitError::SessionGone(entry.session.clone())),
            Err(e) => {
                tracing::error!(session = %entry.session, error = %e, "recording session events failed");
                Err(CommitError::Store(e.to_string()))
            }
        };
        publish(entry, done, outcome);
    }
}

fn records(e: &mut Entry) -> SessionRecords<'_> {
    SessionRecords {
        session: &e.session,
        message: e.message.as_ref(),
        events: &mut e.events,
        update: &e.update,
        at_millis: e.at_millis,
    }
}

fn publish(entry: Box<Entry>, done: Option<Done>, outcome: Result<(), CommitError>) {
    if outcome.is_ok() {
        for event in entry.events {
            entry.live.send(Some(std::sync::Arc::new(event)));
        }
    }
    if let Some(done) = done {
        let _ = done.send(outcome);
    }
}

#[cfg(test)]
mod tests {
    use rtc_protocol::{EventBody, SessionEvent};

    use super::*;
    use crate::store_tests::store_with_session;

    fn entry(session: &str, n: i64, live: &Arc<Live>) -> Box<Entry> {
        Box::new(Entry {
            session: session.into(),
            message: None,
            events: vec![SessionEvent {
                session_id: session.into(),
                seq: 0,
                timestamp: String::new(),
                test_mode: false,
                body: EventBody::error("test", n.to_string()),
            }],
            update: SessionUpdate::default(),
            at_millis: 0,
            live: live.clone(),
        })
    }

    /// Records queued back to back are committed in order with consecutive
    /// `seq` numbers; a record the database refuses (an unknown session)
    /// fails alone, is not broadcast, and does not take the rest of its
    /// batch with it.
    #[tokio::test]
    async fn a_refused_record_fails_alone_and_order_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let store = store_with_session(&dir).await;
        let journal = Journal::start(store.clone(), None);
        let live = Arc::new(Live::default());
        let mut rx = live.subscribe();
        let mut commits = Vec::new();
        for (n, session) in [(1, "s"), (2, "s"), (3, "ghost"), (4, "s")] {
            commits.push(
                journal
                    .write_awaitable(entry(session, n, &live))
                    .await
                    .unwrap(),
            );
        }
        let outcomes: Vec<bool> = futures::future::join_all(commits.into_iter().map(Commit::wait))
            .await
            .iter()
            .map(Result::is_ok)
            .collect();
        assert_eq!(outcomes, [true, true, false, true]);
        let stored: Vec<(i64, i64)> = store
            .events_after("s", 0, 10)
            .await
            .unwrap()
            .iter()
            .map(|e| {
                let rtc_protocol::EventBody::Error(n) = &e.body else {
                    panic!("a test event")
                };
                (e.seq, n.message.parse::<i64>().unwrap())
            })
            .collect();
        assert_eq!(stored, [(1, 1), (2, 2), (3, 4)]);
        let mut told = Vec::new();
        while let Some(Some(e)) = rx.try_recv() {
            told.push(e.seq);
        }
        assert_eq!(
            told,
            [1, 2, 3],
            "broadcast only what was committed, in order"
        );
    }

    /// After `flush`, everything queued before it is readable.
    #[tokio::test]
    async fn flush_makes_queued_records_readable() {
        let dir = tempfile::tempdir().unwrap();
        let store = store_with_session(&dir).await;
        let journal = Journal::start(store.clone(), None);
        let live = Arc::new(Live::default());
        for n in 1..=300 {
            journal.write(entry("s", n, &live)).await.unwrap();
        }
        journal.flush().await;
        assert_eq!(store.last_event_seq("s").await.unwrap(), 300);
    }
}
