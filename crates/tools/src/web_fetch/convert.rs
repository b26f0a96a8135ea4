//! Where HTML becomes Markdown: on a thread of its own with a large stack
//! (never a runtime worker, whose 2 MB a deep tree could overflow, which
//! aborts the process), at most a few at a time, under a deadline. A
//! conversion that outlives its deadline is abandoned by the caller, who
//! gets an error at once; its thread finishes on its own and holds its
//! slot until then, so runaway conversions cannot pile up on the CPUs.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;

/// Stack of a conversion thread: far more than the recursion of a tree of
/// [`MAX_DEPTH`](super::limits::MAX_DEPTH) levels needs. Only the pages
/// actually touched are committed.
pub const STACK_BYTES: usize = 64 * 1024 * 1024;

/// Why a job did not produce its value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunError {
    #[error("did not finish within {0:?}")]
    Deadline(Duration),
    #[error("could not start a conversion thread: {0}")]
    Spawn(String),
    #[error("the conversion failed unexpectedly")]
    Panicked,
}

/// A bounded set of conversion threads.
#[derive(Debug, Clone)]
pub struct Converter {
    slots: Arc<Semaphore>,
    deadline: Duration,
}

impl Converter {
    /// At most `threads` jobs at once (at least one), each given `deadline`
    /// from the call, waiting for a slot included.
    pub fn new(threads: usize, deadline: Duration) -> Self {
        Self {
            slots: Arc::new(Semaphore::new(threads.max(1))),
            deadline,
        }
    }

    /// Run `job` on a fresh thread with a [`STACK_BYTES`] stack.
    pub async fn run<T, F>(&self, job: F) -> Result<T, RunError>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let started = Instant::now();
        let slot = tokio::time::timeout(self.deadline, self.slots.clone().acquire_owned())
            .await
            .map_err(|_| RunError::Deadline(self.deadline))?
            .map_err(|_| RunError::Panicked)?;
        let (tx, rx) = tokio::sync::oneshot::channel();
        std::thread::Builder::new()
            .name("webfetch-convert".into())
            .stack_size(STACK_BYTES)
            .spawn(move || {
                let _slot = slot;
                let _ = tx.send(job());
            })
            .map_err(|e| RunError::Spawn(e.to_string()))?;
        let left = self.deadline.saturating_sub(started.elapsed());
        match tokio::time::timeout(left, rx).await {
            Err(_) => Err(RunError::Deadline(self.deadline)),
            Ok(Err(_)) => Err(RunError::Panicked),
            Ok(Ok(value)) => Ok(value),
        }
    }
}

#[cfg(test)]
#[path = "convert_tests.rs"]
mod tests;
