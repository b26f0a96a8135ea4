//! Rates of one kind of request (R-SEC-7): at most `n` in any
//! minute-long window, counted where the request is served — over the
//! whole server for the requests the operator pays for whoever sends them
//! (provider checks, of which one caller gets at most half), per
//! workspace for those a workspace's own configuration pays for (speech
//! interface checks).

use parking_lot::Mutex;
use std::collections::HashMap;
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

/// At most `per_minute` admissions per key (a workspace) per fixed
/// one-minute window; windows that ended are forgotten as others open.
#[derive(Debug)]
pub struct PerMinuteEach {
    per_minute: u32,
    windows: Mutex<HashMap<String, (Instant, u32)>>,
}

impl PerMinuteEach {
    pub fn new(per_minute: u32) -> Self {
        Self {
            per_minute: per_minute.max(1),
            windows: Mutex::new(HashMap::new()),
        }
    }

    /// Admit one for `key` at `now`, or the time until its window opens
    /// again.
    pub fn admit(&self, key: &str, now: Instant) -> Result<(), Duration> {
        let mut windows = self.windows.lock();
        if !windows.contains_key(key) {
            windows.retain(|_, (start, _)| now.duration_since(*start) < WINDOW);
        }
        let (start, count) = windows.entry(key.to_owned()).or_insert((now, 0));
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

/// Provider checks: at most `per_minute` over the whole server (each is a
/// model request the operator pays for), and at most half of them for
/// one caller (a workspace, or the admin), so one workspace cannot spend
/// the minute of every other.
#[derive(Debug)]
pub struct ProviderChecks {
    server: PerMinute,
    each: PerMinuteEach,
}

impl ProviderChecks {
    pub fn new(per_minute: u32) -> Self {
        let per_minute = per_minute.max(1);
        Self {
            server: PerMinute::new(per_minute),
            each: PerMinuteEach::new(per_minute.div_ceil(2)),
        }
    }

    /// Admit one check of `caller` at `now`, or the time until it may run
    /// and whether the caller's own share (`true`) or the server's ran out.
    pub fn admit(&self, caller: &str, now: Instant) -> Result<(), (Duration, bool)> {
        self.each.admit(caller, now).map_err(|wait| (wait, true))?;
        self.server.admit(now).map_err(|wait| (wait, false))
    }

    /// The server's checks per minute, and one caller's.
    pub fn per_minute(&self) -> (u32, u32) {
        (self.server.per_minute(), self.each.per_minute())
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

    #[test]
    fn one_caller_spends_at_most_half_of_the_servers_checks() {
        let checks = ProviderChecks::new(4);
        let t0 = Instant::now();
        assert!(checks.admit("a", t0).is_ok());
        assert!(checks.admit("a", t0).is_ok());
        assert_eq!(checks.admit("a", t0).map_err(|(_, own)| own), Err(true));
        assert!(checks.admit("b", t0).is_ok());
        assert!(checks.admit("admin", t0).is_ok());
        assert_eq!(checks.admit("c", t0).map_err(|(_, own)| own), Err(false));
    }

    #[test]
    fn each_key_has_its_own_minute() {
        let rate = PerMinuteEach::new(1);
        let t0 = Instant::now();
        assert!(rate.admit("a", t0).is_ok());
        assert!(rate.admit("a", t0 + Duration::from_secs(1)).is_err());
        assert!(rate.admit("b", t0 + Duration::from_secs(1)).is_ok());
        assert!(rate.admit("a", t0 + Duration::from_secs(60)).is_ok());
        // Ended windows are forgotten when another key opens one.
        assert!(rate.admit("c", t0 + Duration::from_secs(62)).is_ok());
        assert_eq!(rate.windows.lock().len(), 2);
    }
}
