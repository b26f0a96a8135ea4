//! The scheduler: every round (as often as the most frequent job), once recovery after
//! a restart is done, the adoption of stopped instances' work (on a
//! shared store, every third of a lease), then each feature's periodic
//! work that is due (`Feature::periodic`: goals renew and take over their
//! leases, loops expire and run their due ticks, the task keeper renews
//! and takes over tasks), in registration order, each first in the first
//! round.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::background::spawn_every;
use crate::feature::Periodic;
use crate::kernel::Host;

/// A periodic job and when it last ran.
struct Job<H> {
    periodic: Periodic<H>,
    last: Option<Instant>,
}

impl<H> Job<H> {
    /// Whether it is due in a round starting now. Rounds come a little
    /// late or early, so a job is due half a round before its time (a job
    /// of one round's period runs every round, not every other one).
    fn due(&self, round: Duration) -> bool {
        self.last
            .is_none_or(|t| t.elapsed() + round / 2 >= self.periodic.every)
    }
}

/// Start the scheduler; it runs until the host is dropped or shut down.
pub(crate) fn spawn_scheduler<H: Host>(inner: &Arc<H>) {
    let started = Instant::now();
    let mut jobs: Vec<Job<H>> = inner
        .features
        .iter()
        .flat_map(|f| f.periodic(inner.config()))
        .map(|periodic| Job {
            last: None,
            periodic,
        })
        .collect();
    // The kernel's own: model usage counted in memory is written.
    jobs.push(Job {
        last: None,
        periodic: Periodic {
            what: "writing model usage",
            every: Duration::from_secs(1),
            work: |host| Box::pin(async move { host.flush_usage().await }),
        },
    });
    let adopt_every = inner.settings.cluster.lease / 3;
    // As often as the most frequent job, within 10 ms and 1 s.
    let round = jobs
        .iter()
        .map(|j| j.periodic.every)
        .chain([adopt_every])
        .min()
        .unwrap_or(Duration::from_secs(1))
        .clamp(Duration::from_millis(10), Duration::from_secs(1));
    let mut adopted = started;
    spawn_every(inner, round, move |inner| {
        let adopt = adopted.elapsed() >= adopt_every;
        if adopt {
            adopted = Instant::now();
        }
        let due: Vec<(&'static str, _)> = jobs
            .iter_mut()
            .filter(|j| j.due(round))
            .map(|j| {
                j.last = Some(Instant::now());
                (j.periodic.what, j.periodic.work)
            })
            .collect();
        async move {
            // Nothing starts a turn by itself before recovery has closed
            // the turns a crash cut off (see `Runtime::recover`).
            if let Err(e) = inner.recover().await {
                tracing::warn!(error = %e, "recovering after a restart failed");
                return;
            }
            // The heartbeat, and the work of instances that stopped.
            if adopt
                && inner.store.allows_several_instances()
                && let Err(e) = inner.cluster().adopt_orphans(false).await
            {
                tracing::warn!(error = %e, "adopting the work of stopped instances failed");
            }
            for (what, work) in due {
                if let Err(e) = work(inner.clone()).await {
                    tracing::warn!(error = %e, "{what} failed");
                }
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(every: Duration, ran_ago: Option<Duration>) -> Job<()> {
        Job {
            periodic: Periodic {
                what: "test",
                every,
                work: |_| Box::pin(async { Ok(()) }),
            },
            last: ran_ago.map(|d| Instant::now() - d),
        }
    }

    #[test]
    fn a_job_is_due_half_a_round_early_and_at_first() {
        let round = Duration::from_millis(100);
        assert!(job(round, None).due(round), "first in the first round");
        // A round that comes a little early still runs a job of its period.
        assert!(job(round, Some(Duration::from_millis(97))).due(round));
        assert!(!job(round, Some(Duration::from_millis(40))).due(round));
        let ten = Duration::from_secs(10);
        assert!(!job(ten, Some(Duration::from_secs(9))).due(round));
        assert!(job(ten, Some(Duration::from_millis(9_960))).due(round));
    }
}
