//! Model usage (R-RN-9): tokens per session, task, day, provider, model
//! and kind of call, added to in batches (the server gathers calls in
//! memory and writes them about once a second), summed per session and
//! per workspace by assistant and by day.

use crate::{Store, StoreError};

/// What the calls of one key cost, to be added to the stored row.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct UsageKey {
    pub workspace_id: String,
    pub session_id: String,
    pub root_session_id: String,
    pub assistant_id: String,
    /// `""` when the calls are not a task's.
    pub task_id: String,
    /// The UTC day, `YYYY-MM-DD`.
    pub day: String,
    pub provider: String,
    pub model: String,
    /// `turn`, `small` or `task`.
    pub kind: String,
}

/// Calls and tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UsageCounts {
    pub calls: i64,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub cached_tokens: i64,
}

impl UsageCounts {
    /// `self` with `other` added.
    pub fn add(&mut self, other: &Self) {
        self.calls += other.calls;
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cached_tokens += other.cached_tokens;
    }
}

/// A workspace's usage of one assistant on one day.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageByDay {
    pub assistant_id: String,
    pub day: String,
    pub counts: UsageCounts,
}

/// PostgreSQL sums BIGINTs as NUMERIC: cast back.
const SUMS: &str = "CAST(COALESCE(SUM(calls), 0) AS BIGINT) AS calls, \
     CAST(COALESCE(SUM(input_tokens), 0) AS BIGINT) AS input_tokens, \
     CAST(COALESCE(SUM(output_tokens), 0) AS BIGINT) AS output_tokens, \
     CAST(COALESCE(SUM(cached_tokens), 0) AS BIGINT) AS cached_tokens";

fn counts(row: &crate::engine::Row) -> Result<UsageCounts, StoreError> {
    Ok(UsageCounts {
        calls: row.try_get("calls")?,
        input_tokens: row.try_get("input_tokens")?,
        output_tokens: row.try_get("output_tokens")?,
        cached_tokens: row.try_get("cached_tokens")?,
    })
}

impl Store {
    /// Add `rows` to the stored usage, in one transaction.
    pub async fn add_usage(&self, rows: &[(UsageKey, UsageCounts)]) -> Result<(), StoreError> {
        if rows.is_empty() {
            return Ok(());
        }
        let mut tx = self.begin_write().await?;
        for (k, c) in rows {
            crate::engine::query(
                "INSERT INTO model_usage (workspace_id, session_id, root_session_id, assistant_id, task_id, day, provider, model, kind, \
                 calls, input_tokens, output_tokens, cached_tokens) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) \
                 ON CONFLICT (session_id, task_id, day, provider, model, kind) DO UPDATE SET \
                 calls = model_usage.calls + $10, input_tokens = model_usage.input_tokens + $11, \
                 output_tokens = model_usage.output_tokens + $12, cached_tokens = model_usage.cached_tokens + $13",
            )
            .bind(&k.workspace_id)
            .bind(&k.session_id)
            .bind(&k.root_session_id)
            .bind(&k.assistant_id)
            .bind(&k.task_id)
            .bind(&k.day)
            .bind(&k.provider)
            .bind(&k.model)
            .bind(&k.kind)
            .bind(c.calls)
            .bind(c.input_tokens)
            .bind(c.output_tokens)
            .bind(c.cached_tokens)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// A session's usage (its own calls; a sub-agent's are its own
    /// session's).
    pub async fn session_usage(&self, session_id: &str) -> Result<UsageCounts, StoreError> {
        let sql = format!("SELECT {SUMS} FROM model_usage WHERE session_id = $1");
        let row = crate::engine::query(sql)
            .bind(session_id)
            .fetch_one(&self.pool)
            .await?;
        counts(&row)
    }

    /// A workspace's usage from day `from` to day `to` (both included,
    /// `YYYY-MM-DD`), by assistant and day.
    pub async fn workspace_usage(
        &self,
        workspace_id: &str,
        from: &str,
        to: &str,
    ) -> Result<Vec<UsageByDay>, StoreError> {
        let sql = format!(
            "SELECT assistant_id, day, {SUMS} FROM model_usage WHERE workspace_id = $1 AND day >= $2 AND day <= $3 \
             GROUP BY assistant_id, day ORDER BY day, assistant_id"
        );
        let rows = crate::engine::query(sql)
            .bind(workspace_id)
            .bind(from)
            .bind(to)
            .fetch_all(&self.pool)
            .await?;
        rows.iter()
            .map(|r| {
                Ok(UsageByDay {
                    assistant_id: r.try_get("assistant_id")?,
                    day: r.try_get("day")?,
                    counts: counts(r)?,
                })
            })
            .collect()
    }

    /// A workspace's input and output tokens from day `from` on.
    pub async fn workspace_tokens_since(
        &self,
        workspace_id: &str,
        from: &str,
    ) -> Result<i64, StoreError> {
        let sql = format!("SELECT {SUMS} FROM model_usage WHERE workspace_id = $1 AND day >= $2");
        let row = crate::engine::query(sql)
            .bind(workspace_id)
            .bind(from)
            .fetch_one(&self.pool)
            .await?;
        let c = counts(&row)?;
        Ok(c.input_tokens + c.output_tokens)
    }
}
