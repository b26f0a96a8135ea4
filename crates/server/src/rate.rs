//! A server-wide rate of one kind of request (R-SEC-7): at most `n` in
//! any minute-long window, counted where the request is served. For the
//! requests the operator pays for whoever sends them (provider checks).

use parking_lot::Mutex;
use std::time::{Duration, Instant};

const WINDOW: Duration = Duration::from_secs(60);

/// At most `per_minute` admissions per fixed one-minute window.
#[derive(Debug)]
pub struct PerMinute {
    per_minute: u32,
    window: Mutex<(Instant, u32)>,
}

impl PerMinute {
    pub fn new(per_minute: u32) -> Self {
        Self {
            per_minute: per_minute.max(1),
            window: Mutex::new((Instant::now(), 0)),
        }
    }

    /// Admit one at `now`, or the time until the window opens again.
    pub fn admit(&self, now: Instant) -> Result<(), Duration> {
        let mut window = self.window.lock();
        let (start, count) = &mut *window;
        if now.duration_since(*start) >= WINDOW {
            *start = now;
            *count = 0;
        }
        if *count >= self.per_minute {
            return Err(WINDOW.saturating_sub(now.duration_since(*start)));
        }
        *count += 1;
        Ok(())
    }

    pub fn per_minute(&self) -> u32 {
        self.per_minute
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_minute_admits_its_count_then_opens_again() {
        let rate = PerMinute::new(2);
        let t0 = Instant::now();
        assert!(rate.admit(t0).is_ok());
        assert!(rate.admit(t0).is_ok());
        let wait = rate.admit(t0 + Duration::from_secs(20)).unwrap_err();
        assert!(wait <= Duration::from_secs(40), "{wait:?}");
        assert!(rate.admit(t0 + Duration::from_secs(61)).is_ok());
    }
}
