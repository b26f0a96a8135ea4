//! How often a realtime session may open a provider connection (R-SEC-7):
//! every host socket starts a bridge and every bridge connects, and the
//! workspace pays for each connection. A token bucket per session (a
//! burst of [`BURST`], then `per_minute`) is shared by all its bridges in
//! this process; a connection past it waits for the next token
//! (`realtime_connect_limited`, reported at most once a minute).

use parking_lot::Mutex;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Connections a session may open at once before the rate applies.
pub(crate) const BURST: f64 = 3.0;
/// Sessions whose bucket is kept; beyond it, full buckets are forgotten.
const KEPT: usize = 1024;
/// How often a session hears that it is limited.
const REPORT_EVERY: Duration = Duration::from_secs(60);

/// The buckets of this process's realtime sessions.
pub(crate) struct ConnectBudget {
    per_minute: f64,
    buckets: Mutex<HashMap<String, Bucket>>,
}

struct Bucket {
    tokens: f64,
    at: Instant,
    reported: Option<Instant>,
}

/// The answer to [`ConnectBudget::take`].
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Grant {
    /// Connect.
    Go,
    /// Not now; `report` says whether to tell the session (once a minute).
    Wait { report: bool },
}

impl ConnectBudget {
    pub(crate) fn new(per_minute: u32) -> Self {
        Self {
            per_minute: f64::from(per_minute.max(1)),
            buckets: Mutex::default(),
        }
    }

    /// Take a token of `session` for a connection at `now`.
    pub(crate) fn take(&self, session: &str, now: Instant) -> Grant {
        let mut buckets = self.buckets.lock();
        if buckets.len() >= KEPT && !buckets.contains_key(session) {
            let refill = self.refill_time();
            buckets.retain(|_, b| now.duration_since(b.at) < refill);
        }
        let bucket = buckets.entry(session.to_owned()).or_insert(Bucket {
            tokens: BURST,
            at: now,
            reported: None,
        });
        let elapsed = now.duration_since(bucket.at).as_secs_f64();
        bucket.tokens = (bucket.tokens + elapsed * self.per_minute / 60.0).min(BURST);
        bucket.at = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            return Grant::Go;
        }
        let report = bucket
            .reported
            .is_none_or(|t| now.duration_since(t) >= REPORT_EVERY);
        if report {
            bucket.reported = Some(now);
        }
        Grant::Wait { report }
    }

    /// How long an empty bucket takes to fill.
    fn refill_time(&self) -> Duration {
        Duration::from_secs_f64(BURST * 60.0 / self.per_minute)
    }

    /// The rate, for messages.
    pub(crate) fn per_minute(&self) -> f64 {
        self.per_minute
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_then_the_rate() {
        let budget = ConnectBudget::new(6);
        let t0 = Instant::now();
        for _ in 0..3 {
            assert_eq!(budget.take("s", t0), Grant::Go);
        }
        assert_eq!(budget.take("s", t0), Grant::Wait { report: true });
        assert_eq!(budget.take("s", t0), Grant::Wait { report: false });
        // Another session has its own bucket.
        assert_eq!(budget.take("other", t0), Grant::Go);
        // Six a minute: one every ten seconds.
        assert_eq!(
            budget.take("s", t0 + Duration::from_secs(5)),
            Grant::Wait { report: false }
        );
        assert_eq!(budget.take("s", t0 + Duration::from_secs(11)), Grant::Go);
        assert_eq!(
            budget.take("s", t0 + Duration::from_secs(12)),
            Grant::Wait { report: false }
        );
        // A minute later the session hears it again.
        assert_eq!(
            budget.take("s", t0 + Duration::from_secs(61)),
            Grant::Go,
            "50 s refilled tokens"
        );
    }

    #[test]
    fn thirty_opens_in_a_second_connect_three_times() {
        let budget = ConnectBudget::new(6);
        let t0 = Instant::now();
        let opened = (0..30)
            .filter(|i| budget.take("s", t0 + Duration::from_millis(33 * i)) == Grant::Go)
            .count();
        assert_eq!(opened, 3);
    }

    #[test]
    fn the_table_forgets_full_buckets() {
        let budget = ConnectBudget::new(60);
        let t0 = Instant::now();
        for i in 0..KEPT {
            budget.take(&format!("s{i}"), t0);
        }
        budget.take("late", t0 + Duration::from_secs(10));
        let kept = budget.buckets.lock().len();
        assert_eq!(kept, 1, "only the new session's bucket is left");
    }
}
