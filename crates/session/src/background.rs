//! The kernel's long-lived background work: periodic loops (the idle
//! sweeper, the scheduler of the features' periodic work, heartbeats) and the
//! listeners of other instances' writes and control messages. They run as
//! tasks of one supervised set under one cancellation token, which
//! shutdown cancels and awaits (`Kernel::shutdown`). [`spawn_every`] is
//! the one helper for periodic work: it holds the host weakly, so a
//! dropped host stops its loops too, and it stops when shutdown begins.
//!
//! What is not here has an owner of its own: turns run in `Kernel::tasks`
//! (shutdown waits for them), a feature's own workers with its service (aborted at
//! shutdown), the journal's writer with its handle.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::kernel::Host;

/// The supervised set of background tasks.
#[derive(Default)]
pub struct Background {
    token: CancellationToken,
    tracker: TaskTracker,
}

impl Background {
    /// Run `work` until it ends or shutdown cancels it.
    pub fn spawn(&self, work: impl Future<Output = ()> + Send + 'static) {
        let token = self.token.child_token();
        self.tracker.spawn(async move {
            tokio::select! {
                () = token.cancelled() => {}
                () = work => {}
            }
        });
    }

    /// Cancel every task and wait, at most `within`, for them to stop.
    pub async fn stop(&self, within: Duration) {
        self.token.cancel();
        self.tracker.close();
        if tokio::time::timeout(within, self.tracker.wait())
            .await
            .is_err()
        {
            tracing::warn!("background tasks did not stop in time");
        }
    }
}

/// Run `work` every `period` (a late round delays the next), from now
/// until the host is dropped or its shutdown begins.
pub fn spawn_every<H, F, Fut>(inner: &Arc<H>, period: Duration, mut work: F)
where
    H: Host,
    F: FnMut(Arc<H>) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let weak = Arc::downgrade(inner);
    inner.background.spawn(async move {
        let mut tick = tokio::time::interval(period);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let Some(inner) = weak.upgrade() else { return };
            if inner.tasks.is_closed() {
                return;
            }
            work(inner).await;
        }
    });
}
