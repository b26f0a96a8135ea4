//! Workspace quotas (R-RN-10): a token budget per period (the calendar
//! month by default, or the day, UTC) and a request rate per minute. The
//! budget counts input and output tokens of every model call (stored
//! usage plus what this instance has not written yet); it is checked
//! before a session is opened or a message taken (429
//! `token_quota_exceeded`) and before each model call of a turn (the turn
//! ends with that error). Requests are counted per minute in one shared
//! table, so every instance counts against the same limit (429
//! `rate_limited`). Both answer with the seconds until the limit lifts.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use rtc_core::time::days_from_civil;
use rtc_protocol::{QuotaPeriod, WorkspaceQuota};

use crate::RuntimeError;
use crate::kernel::{Host, Kernel};

/// How long a workspace's quota and stored usage are taken as known.
const FRESH: Duration = Duration::from_secs(1);

/// The most workspaces remembered; a full memory starts over.
const MAX_KNOWN: usize = 4_096;

const DAY_MS: i64 = 86_400_000;

/// What is known of each workspace's quota, for about a second.
#[derive(Default)]
pub struct Quotas {
    known: parking_lot::Mutex<HashMap<String, Known>>,
}

impl Quotas {
    /// Read the workspace's quota again at its next use (it was changed).
    pub fn forget(&self, workspace: &str) {
        self.known.lock().remove(workspace);
    }
}

#[derive(Clone)]
struct Known {
    at: Instant,
    quota: Option<WorkspaceQuota>,
    /// Tokens stored for the current period when read.
    used: i64,
}

/// The current period of `period` at `now` (epoch ms): its first day
/// (`YYYY-MM-DD`) and when the next begins (epoch ms).
fn period_bounds(period: QuotaPeriod, now: i64) -> (String, i64) {
    let today = rtc_core::time::rfc3339_from_millis(now);
    match period {
        QuotaPeriod::Day => (
            today[..10].to_owned(),
            now - now.rem_euclid(DAY_MS) + DAY_MS,
        ),
        QuotaPeriod::Month => {
            let y: i64 = today[..4].parse().unwrap_or(1970);
            let m: i64 = today[5..7].parse().unwrap_or(1);
            let (ny, nm) = if m == 12 { (y + 1, 1) } else { (y, m + 1) };
            (
                format!("{}-01", &today[..7]),
                days_from_civil(ny, nm, 1) * DAY_MS,
            )
        }
    }
}

/// Whole seconds from `now` until `until` (at least one).
fn seconds_until(until: i64, now: i64) -> u64 {
    u64::try_from((until - now).max(0))
        .unwrap_or(0)
        .div_ceil(1000)
        .max(1)
}

impl<H: Host> Kernel<H> {
    /// The workspace's quota and its stored usage, read at most once a
    /// second.
    async fn known_quota(&self, workspace: &str) -> Result<Known, RuntimeError> {
        if let Some(k) = self.quotas.known.lock().get(workspace)
            && k.at.elapsed() < FRESH
        {
            return Ok(k.clone());
        }
        let quota = match self.store.workspace_quota(workspace).await? {
            Some(text) => serde_json::from_str::<WorkspaceQuota>(&text)
                .map_err(|e| RuntimeError::Internal(format!("the workspace's quota: {e}")))
                .map(Some)?,
            None => None,
        };
        let used = match quota {
            Some(WorkspaceQuota {
                tokens_per_period: Some(_),
                period,
                ..
            }) => {
                let (since, _) = period_bounds(period, rtc_store::now_millis());
                self.store.workspace_tokens_since(workspace, &since).await?
            }
            _ => 0,
        };
        let known = Known {
            at: Instant::now(),
            quota,
            used,
        };
        let mut all = self.quotas.known.lock();
        if all.len() >= MAX_KNOWN {
            all.clear();
        }
        all.insert(workspace.to_owned(), known.clone());
        Ok(known)
    }

    /// Whether the workspace may still spend model tokens; past its
    /// budget, `token_quota_exceeded` with the seconds until the next
    /// period.
    pub async fn check_token_quota(&self, workspace: &str) -> Result<(), RuntimeError> {
        let known = self.known_quota(workspace).await?;
        let Some(WorkspaceQuota {
            tokens_per_period: Some(budget),
            period,
            ..
        }) = known.quota
        else {
            return Ok(());
        };
        let used = known.used + self.usage.pending_tokens(workspace);
        if used < budget {
            return Ok(());
        }
        let now = rtc_store::now_millis();
        let (_, next) = period_bounds(period, now);
        let name = match period {
            QuotaPeriod::Day => "day",
            QuotaPeriod::Month => "month",
        };
        Err(RuntimeError::Limited {
            code: "token_quota_exceeded",
            message: format!(
                "the workspace's token quota is spent: {used} of its {budget} tokens this {name} (UTC); it renews at {}",
                rtc_core::time::rfc3339_from_millis(next)
            ),
            retry_after_secs: seconds_until(next, now),
        })
    }

    /// Count one API request of the workspace; past its rate,
    /// `rate_limited` with the seconds until the next minute.
    pub async fn admit_request(&self, workspace: &str) -> Result<(), RuntimeError> {
        let known = self.known_quota(workspace).await?;
        let Some(limit) = known.quota.and_then(|q| q.requests_per_minute) else {
            return Ok(());
        };
        let now = rtc_store::now_millis();
        let window = now - now.rem_euclid(60_000);
        let n = self.store.count_request(workspace, window).await?;
        if n == 1 {
            // A new minute: the ones before the last are not needed.
            self.store.prune_request_windows(window - 60_000).await?;
        }
        if n <= limit {
            return Ok(());
        }
        Err(RuntimeError::Limited {
            code: "rate_limited",
            message: format!("the workspace's limit of {limit} requests per minute is reached"),
            retry_after_secs: seconds_until(window + 60_000, now),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periods_begin_and_end_in_utc() {
        // 2026-12-05T07:30:00Z
        let now = days_from_civil(2026, 12, 5) * DAY_MS + 27_000_000;
        let (since, next) = period_bounds(QuotaPeriod::Month, now);
        assert_eq!(since, "2026-12-01");
        assert_eq!(next, days_from_civil(2027, 1, 1) * DAY_MS);
        let (since, next) = period_bounds(QuotaPeriod::Day, now);
        assert_eq!(since, "2026-12-05");
        assert_eq!(next, days_from_civil(2026, 12, 6) * DAY_MS);
        assert_eq!(seconds_until(next, now), 59_400);
        assert_eq!(seconds_until(now, now), 1);
    }
}
