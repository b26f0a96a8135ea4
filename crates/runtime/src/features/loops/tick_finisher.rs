//! Group commit of finished loop ticks (R-PF-3). Every tick ends with a
//! write on the store's single writer: its outcome, the next due time, the
//! lease released. Written one transaction each, 10,000 loops ask for more
//! of them than the writer turns around; here the ticks that finish while
//! one batch commits go together in the next.
//!
//! No task of its own: whoever finds the writer free commits everything
//! queued so far and answers each waiter; a waiter whose tick a previous
//! commit took finds its answer ready once it holds the writer.

use parking_lot::Mutex;

use rtc_store::{ClaimedTick, LoopRecord, Store, TickOutcome, now_millis};
use tokio::sync::oneshot;

/// Why a finished tick was not recorded.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum FinishError {
    /// The store refused the batch's transaction (its message: several
    /// waiters share it).
    #[error("{0}")]
    Store(String),
    /// The commit was dropped before it answered (shutdown).
    #[error("the tick's commit was dropped")]
    Dropped,
}

/// A finished tick waiting for its commit, and where to say how it went.
struct Pending {
    tick: ClaimedTick,
    outcome: TickOutcome,
    done: oneshot::Sender<Result<Option<LoopRecord>, FinishError>>,
}

/// The queue of finished ticks and the right to commit them.
#[derive(Default)]
pub(crate) struct TickFinisher {
    queue: Mutex<Vec<Pending>>,
    writing: tokio::sync::Mutex<()>,
}

impl TickFinisher {
    /// Record `tick`'s outcome, schedule its next tick and release its
    /// lease; the loop as it is now (`None` if the lease was lost).
    pub async fn finish(
        &self,
        store: &Store,
        instance: &str,
        tick: ClaimedTick,
        outcome: TickOutcome,
    ) -> Result<Option<LoopRecord>, FinishError> {
        let (done, answer) = oneshot::channel();
        self.queue.lock().push(Pending {
            tick,
            outcome,
            done,
        });
        {
            let _writer = self.writing.lock().await;
            let batch = std::mem::take(&mut *self.queue.lock());
            if !batch.is_empty() {
                commit(store, instance, batch).await;
            }
        }
        answer.await.unwrap_or(Err(FinishError::Dropped))
    }
}

/// One transaction for the batch; each waiter gets its loop or the error.
async fn commit(store: &Store, instance: &str, batch: Vec<Pending>) {
    let ticks: Vec<(&ClaimedTick, &TickOutcome)> =
        batch.iter().map(|p| (&p.tick, &p.outcome)).collect();
    match store.finish_ticks(&ticks, instance, now_millis()).await {
        Ok(loops) => {
            for (p, l) in batch.into_iter().zip(loops) {
                let _ = p.done.send(Ok(l));
            }
        }
        Err(e) => {
            let e = FinishError::Store(e.to_string());
            for p in batch {
                let _ = p.done.send(Err(e.clone()));
            }
        }
    }
}
