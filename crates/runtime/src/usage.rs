//! Model usage through the API (R-RN-9): a session's totals and a
//! workspace's by assistant and by day. What this instance counted is
//! written first, so the answer includes every call it made.

use rtc_core::ValidationError;
use rtc_protocol::{AssistantUsage, DayUsage, UsageReport, UsageTotals};
use rtc_store::UsageCounts;

use crate::{Runtime, RuntimeError};

/// Longest period one usage report covers (days).
const MAX_REPORT_DAYS: i64 = 366;

fn totals(c: &UsageCounts) -> UsageTotals {
    UsageTotals {
        calls: c.calls,
        input_tokens: c.input_tokens,
        output_tokens: c.output_tokens,
        cached_tokens: c.cached_tokens,
    }
}

/// Days since 1970-01-01 of a `YYYY-MM-DD` date, or a 422 naming `field`.
pub(crate) fn day_number(date: &str, field: &'static str) -> Result<i64, RuntimeError> {
    let bad = || {
        RuntimeError::from(ValidationError::new(
            "invalid_date",
            field,
            format!("`{field}` must be a date as YYYY-MM-DD (UTC)"),
        ))
    };
    let parts: Vec<&str> = date.split('-').collect();
    let [y, m, d] = parts.as_slice() else {
        return Err(bad());
    };
    if y.len() != 4 || m.len() != 2 || d.len() != 2 {
        return Err(bad());
    }
    let (y, m, d): (i64, i64, i64) = (
        y.parse().map_err(|_| bad())?,
        m.parse().map_err(|_| bad())?,
        d.parse().map_err(|_| bad())?,
    );
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let month_days = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    if !(1..=12).contains(&m) || d < 1 || d > month_days[usize::try_from(m - 1).unwrap_or(0)] {
        return Err(bad());
    }
    Ok(rtc_core::time::days_from_civil(y, m, d))
}

impl Runtime {
    /// Count one API request of the workspace against its rate (R-RN-10).
    pub async fn admit_request(&self, workspace: &str) -> Result<(), RuntimeError> {
        self.inner.admit_request(workspace).await
    }

    /// The workspace's quota changed: it applies from the next request.
    pub fn quota_changed(&self, workspace: &str) {
        self.inner.quotas.forget(workspace);
    }

    /// A session's usage (R-RN-9).
    pub async fn session_usage(
        &self,
        workspace: &str,
        id: &str,
    ) -> Result<UsageTotals, RuntimeError> {
        self.session(workspace, id).await?;
        self.inner.flush_usage().await?;
        Ok(totals(&self.inner.store.session_usage(id).await?))
    }

    /// A workspace's usage from `from` to `to` (UTC days, both included;
    /// by default the current month up to today), by assistant and day.
    pub async fn usage(
        &self,
        workspace: &str,
        from: Option<&str>,
        to: Option<&str>,
    ) -> Result<UsageReport, RuntimeError> {
        let today = rtc_session::usage::today();
        let to = to.unwrap_or(&today).to_owned();
        let from = from.map_or_else(|| format!("{}-01", &today[..7]), str::to_owned);
        let (first, last) = (day_number(&from, "from")?, day_number(&to, "to")?);
        if first > last || last - first >= MAX_REPORT_DAYS {
            return Err(ValidationError::new(
                "invalid_period",
                "from",
                format!(
                    "`from` must be on or before `to`, at most {MAX_REPORT_DAYS} days before it"
                ),
            )
            .into());
        }
        self.inner.flush_usage().await?;
        let rows = self
            .inner
            .store
            .workspace_usage(workspace, &from, &to)
            .await?;
        let mut total = UsageCounts::default();
        let mut by_assistant: std::collections::BTreeMap<&str, UsageCounts> = Default::default();
        let mut by_day: std::collections::BTreeMap<&str, UsageCounts> = Default::default();
        for r in &rows {
            total.add(&r.counts);
            by_assistant
                .entry(&r.assistant_id)
                .or_default()
                .add(&r.counts);
            by_day.entry(&r.day).or_default().add(&r.counts);
        }
        Ok(UsageReport {
            total: totals(&total),
            by_assistant: by_assistant
                .into_iter()
                .map(|(a, c)| AssistantUsage {
                    assistant_id: a.to_owned(),
                    usage: totals(&c),
                })
                .collect(),
            by_day: by_day
                .into_iter()
                .map(|(d, c)| DayUsage {
                    day: d.to_owned(),
                    usage: totals(&c),
                })
                .collect(),
            from,
            to,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_checked_and_numbered() {
        assert_eq!(day_number("1970-01-01", "from").unwrap(), 0);
        assert_eq!(day_number("2026-12-05", "from").unwrap(), 20_792);
        assert_eq!(
            day_number("2024-03-01", "to").unwrap() - day_number("2024-02-28", "to").unwrap(),
            2
        );
        for bad in [
            "2026-13-01",
            "2026-02-29",
            "2026-1-01",
            "yesterday",
            "2026-12-05T00",
        ] {
            assert!(day_number(bad, "from").is_err(), "{bad}");
        }
    }
}
