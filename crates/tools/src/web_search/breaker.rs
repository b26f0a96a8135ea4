//! A circuit breaker per search engine (R-BX-8): after three failures in a
//! row, or at once on a rate limit, the engine is skipped for a cool-down;
//! then one request may try it again (half-open), and its outcome closes or
//! reopens the circuit.

use parking_lot::Mutex;
use std::time::{Duration, Instant};

const FAILURES_TO_OPEN: u32 = 3;
const COOL_DOWN: Duration = Duration::from_secs(60);

#[derive(Default)]
pub(super) struct Breaker(Mutex<State>);

#[derive(Default)]
struct State {
    failures: u32,
    open_until: Option<Instant>,
}

impl Breaker {
    /// Whether a request may go to the engine now.
    pub fn allows(&self) -> bool {
        self.0
            .lock()
            .open_until
            .is_none_or(|until| Instant::now() >= until)
    }

    pub fn succeeded(&self) {
        *self.0.lock() = State::default();
    }

    pub fn failed(&self) {
        {
            let mut s = self.0.lock();
            s.failures += 1;
            // A failed trial after a cool-down reopens at once.
            if s.failures >= FAILURES_TO_OPEN || s.open_until.is_some() {
                s.open_until = Some(Instant::now() + COOL_DOWN);
            }
        }
    }

    /// Open at once (rate limited).
    pub fn trip(&self) {
        {
            let mut s = self.0.lock();
            s.failures = FAILURES_TO_OPEN;
            s.open_until = Some(Instant::now() + COOL_DOWN);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opens_after_three_failures_and_closes_on_success() {
        let b = Breaker::default();
        b.failed();
        b.failed();
        assert!(b.allows());
        b.failed();
        assert!(!b.allows());
        b.succeeded();
        assert!(b.allows());
    }

    #[test]
    fn a_rate_limit_opens_at_once_and_a_failed_trial_reopens() {
        let b = Breaker::default();
        b.trip();
        assert!(!b.allows());
        // Pretend the cool-down passed.
        b.0.lock().open_until = Some(Instant::now() - Duration::from_millis(1));
        assert!(b.allows(), "half-open: one trial");
        b.failed();
        assert!(!b.allows(), "the trial failed: open again");
    }
}
