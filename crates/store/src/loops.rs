//! Loops and their lease-based tick schedule (R-LP-3, R-BX-1, R-ST-2).
//!
//! A due tick is claimed by one instance with an optimistic update that
//! checks the loop's `tick_seq` and lease, takes the lease and advances
//! `tick_seq`; the tick's row in `loop_ticks` (primary key loop + seq) is
//! written in the same transaction, so a tick is claimed once across
//! instances. The holder heartbeats the lease while the tick runs and
//! releases it when it records the outcome and the next due time; a
//! crashed holder's lease expires and another instance claims the next
//! tick.

use rtc_protocol::LoopStatus;

use crate::{Store, StoreError};

/// A stored loop; times are epoch milliseconds.
#[derive(Debug, Clone, PartialEq)]
pub struct LoopRecord {
    pub id: String,
    pub session_id: String,
    pub prompt: String,
    pub interval_ms: i64,
    pub max_turns: i64,
    pub turns_done: i64,
    pub skipped_ticks: i64,
    pub status: LoopStatus,
    pub reason: Option<String>,
    pub expires_at: i64,
    pub next_tick_at: i64,
    pub created_at: i64,
    pub updated_at: i64,
}

/// A tick this instance claimed.
#[derive(Debug, Clone, PartialEq)]
pub struct ClaimedTick {
    pub loop_id: String,
    pub session_id: String,
    pub seq: i64,
    pub due_at: i64,
    /// The loop as it was when claimed.
    pub record: LoopRecord,
}

/// A recorded tick.
#[derive(Debug, Clone, PartialEq)]
pub struct TickRow {
    pub seq: i64,
    pub instance: String,
    pub due_at: i64,
    pub started_at: i64,
    pub finished_at: Option<i64>,
    /// `ran` or `skipped`; `None` while running (or if its holder died).
    pub outcome: Option<String>,
}

/// How a tick ended.
#[derive(Debug, Clone, PartialEq)]
pub struct TickOutcome {
    /// `ran` or `skipped` (the previous turn was still running).
    pub ran: bool,
    pub next_tick_at: i64,
    /// A final status to set if the loop is still active (limits reached).
    pub status: Option<(LoopStatus, String)>,
}

/// Loop ticks per multi-row insert of a claim (5 parameters each).
const TICKS_PER_INSERT: usize = 100;

const COLUMNS: &str = "id, session_id, prompt, interval_ms, max_turns, turns_done, skipped_ticks, status, reason, expires_at, next_tick_at, created_at, updated_at";

fn record(row: &crate::engine::Row) -> Result<LoopRecord, StoreError> {
    let status: String = row.try_get("status")?;
    Ok(LoopRecord {
        id: row.try_get("id")?,
        session_id: row.try_get("session_id")?,
        prompt: row.try_get("prompt")?,
        interval_ms: row.try_get("interval_ms")?,
        max_turns: row.try_get("max_turns")?,
        turns_done: row.try_get("turns_done")?,
        skipped_ticks: row.try_get("skipped_ticks")?,
        status: LoopStatus::parse(&status)
            .ok_or_else(|| StoreError::Corrupt(format!("loop status `{status}`")))?,
        reason: row.try_get("reason")?,
        expires_at: row.try_get("expires_at")?,
        next_tick_at: row.try_get("next_tick_at")?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
    })
}

impl Store {
    pub async fn insert_loop(&self, l: &LoopRecord) -> Result<(), StoreError> {
        let sql = format!(
            "INSERT INTO loops ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)"
        );
        crate::engine::query(sql)
            .bind(&l.id)
            .bind(&l.session_id)
            .bind(&l.prompt)
            .bind(l.interval_ms)
            .bind(l.max_turns)
            .bind(l.turns_done)
            .bind(l.skipped_ticks)
            .bind(l.status.as_str())
            .bind(&l.reason)
            .bind(l.expires_at)
            .bind(l.next_tick_at)
            .bind(l.created_at)
            .bind(l.updated_at)
            .execute(&self.writer)
            .await?;
        Ok(())
    }

    /// A session's loops, oldest first.
    pub async fn loops(&self, session: &str) -> Result<Vec<LoopRecord>, StoreError> {
        let sql =
            format!("SELECT {COLUMNS} FROM loops WHERE session_id = $1 ORDER BY created_at, id");
        let rows = crate::engine::query(sql)
            .bind(session)
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(record).collect()
    }

    pub async fn loop_by_id(&self, id: &str) -> Result<Option<LoopRecord>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM loops WHERE id = $1");
        let row = crate::engine::query(sql)
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(record).transpose()
    }

    /// Change a loop's status if it is one of `from`; `next_tick_at` too
    /// when given (resuming). Whether it changed.
    pub async fn set_loop_status(
        &self,
        id: &str,
        from: &[LoopStatus],
        to: LoopStatus,
        reason: Option<&str>,
        next_tick_at: Option<i64>,
        now: i64,
    ) -> Result<bool, StoreError> {
        let allowed: Vec<String> = from.iter().map(|s| format!("'{}'", s.as_str())).collect();
        let sql = format!(
            "UPDATE loops SET status = $1, reason = $2, next_tick_at = COALESCE($3, next_tick_at), updated_at = $4 \
             WHERE id = $5 AND status IN ({})",
            allowed.join(", ")
        );
        let done = crate::engine::query(sql)
            .bind(to.as_str())
            .bind(reason)
            .bind(next_tick_at)
            .bind(now)
            .bind(id)
            .execute(&self.writer)
            .await?;
        Ok(done.rows_affected() > 0)
    }

    /// Loops past their expiry that are active or paused and not held by
    /// a running tick (which settles its loop's expiry itself), at most
    /// `limit`, soonest expired first (R-LP-4).
    pub async fn expired_loops(&self, now: i64, limit: i64) -> Result<Vec<LoopRecord>, StoreError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM loops WHERE status IN ('active', 'paused') AND expires_at <= $1 \
             AND (lease_until IS NULL OR lease_until < $1) ORDER BY expires_at, id LIMIT $2"
        );
        let rows = crate::engine::query(sql)
            .bind(now)
            .bind(limit)
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(record).collect()
    }

    /// Claim up to `limit` due ticks for `instance`, with a lease until
    /// `now + lease_ms`.
    pub async fn claim_due_ticks(
        &self,
        instance: &str,
        now: i64,
        lease_ms: i64,
        limit: i64,
    ) -> Result<Vec<ClaimedTick>, StoreError> {
        // On PostgreSQL rows another instance is claiming are skipped, not
        // waited for; SQLite's write transaction is exclusive anyway.
        let lock = self.dialect.skip_locked();
        // Most polls find nothing due: check that without a write transaction.
        let any = crate::engine::query(
            "SELECT 1 AS due FROM loops WHERE status = 'active' AND next_tick_at <= $1 \
             AND (lease_until IS NULL OR lease_until < $1) LIMIT 1",
        )
        .bind(now)
        .fetch_optional(&self.pool)
        .await?;
        if any.is_none() {
            return Ok(Vec::new());
        }
        // One statement leases the due loops and moves their tick numbers
        // on, one per chunk records their ticks: a claim costs a handful
        // of statements on the single writer, not two per tick (R-PF-3).
        let sql = format!(
            "UPDATE loops SET tick_seq = tick_seq + 1, lease_owner = $1, lease_until = $2 \
             WHERE id IN (SELECT id FROM loops \
               WHERE status = 'active' AND next_tick_at <= $3 AND (lease_until IS NULL OR lease_until < $3) \
               ORDER BY next_tick_at, id LIMIT $4{lock}) \
             RETURNING {COLUMNS}, tick_seq"
        );
        let mut tx = self.begin_write().await?;
        let rows = crate::engine::query(sql)
            .bind(instance)
            .bind(now + lease_ms)
            .bind(now)
            .bind(limit)
            .fetch_all(&mut *tx)
            .await?;
        let mut claimed = rows
            .iter()
            .map(|row| {
                let record = record(row)?;
                Ok(ClaimedTick {
                    loop_id: record.id.clone(),
                    session_id: record.session_id.clone(),
                    seq: row.try_get("tick_seq")?,
                    due_at: record.next_tick_at,
                    record,
                })
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        // RETURNING gives no order: the most overdue first, as selected.
        claimed.sort_by(|a, b| (a.due_at, &a.loop_id).cmp(&(b.due_at, &b.loop_id)));
        for chunk in claimed.chunks(TICKS_PER_INSERT) {
            let sql = format!(
                "INSERT INTO loop_ticks (loop_id, seq, instance, due_at, started_at) VALUES {}",
                crate::records::value_rows(chunk.len(), 5)
            );
            let mut query = crate::engine::query(sql);
            for t in chunk {
                query = query
                    .bind(&t.loop_id)
                    .bind(t.seq)
                    .bind(instance)
                    .bind(t.due_at)
                    .bind(now);
            }
            query.execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(claimed)
    }

    /// Extend the lease of a tick this instance holds; whether it still does.
    pub async fn heartbeat_tick(
        &self,
        loop_id: &str,
        instance: &str,
        until: i64,
    ) -> Result<bool, StoreError> {
        let done = crate::engine::query(
            "UPDATE loops SET lease_until = $1 WHERE id = $2 AND lease_owner = $3",
        )
        .bind(until)
        .bind(loop_id)
        .bind(instance)
        .execute(&self.writer)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Record a tick's outcome, schedule the next one and release the
    /// lease; the loop as it is now (`None` if the lease was lost).
    pub async fn finish_tick(
        &self,
        tick: &ClaimedTick,
        instance: &str,
        outcome: &TickOutcome,
        now: i64,
    ) -> Result<Option<LoopRecord>, StoreError> {
        let mut loops = self.finish_ticks(&[(tick, outcome)], instance, now).await?;
        Ok(loops.pop().flatten())
    }

    /// [`Store::finish_tick`] for several ticks in one transaction (the
    /// runtime's group commit of finished ticks): each loop as it is now,
    /// in the order given.
    pub async fn finish_ticks(
        &self,
        ticks: &[(&ClaimedTick, &TickOutcome)],
        instance: &str,
        now: i64,
    ) -> Result<Vec<Option<LoopRecord>>, StoreError> {
        let sql = format!(
            "UPDATE loops SET turns_done = turns_done + $1, skipped_ticks = skipped_ticks + $2, next_tick_at = $3, \
             status = CASE WHEN status = 'active' AND $4 IS NOT NULL THEN $4 ELSE status END, \
             reason = CASE WHEN status = 'active' AND $4 IS NOT NULL THEN $5 ELSE reason END, \
             lease_owner = NULL, lease_until = NULL, updated_at = $6 \
             WHERE id = $7 AND lease_owner = $8 RETURNING {COLUMNS}"
        );
        let mut tx = self.begin_write().await?;
        let mut loops = Vec::with_capacity(ticks.len());
        for (tick, outcome) in ticks {
            let (status, reason) = match &outcome.status {
                Some((s, r)) => (Some(s.as_str()), Some(r.as_str())),
                None => (None, None),
            };
            let row = crate::engine::query(sql.as_str())
                .bind(i64::from(outcome.ran))
                .bind(i64::from(!outcome.ran))
                .bind(outcome.next_tick_at)
                .bind(status)
                .bind(reason)
                .bind(now)
                .bind(&tick.loop_id)
                .bind(instance)
                .fetch_optional(&mut *tx)
                .await?;
            crate::engine::query(
                "UPDATE loop_ticks SET finished_at = $1, outcome = $2 WHERE loop_id = $3 AND seq = $4",
            )
            .bind(now)
            .bind(if outcome.ran { "ran" } else { "skipped" })
            .bind(&tick.loop_id)
            .bind(tick.seq)
            .execute(&mut *tx)
            .await?;
            loops.push(row.as_ref().map(record).transpose()?);
        }
        tx.commit().await?;
        Ok(loops)
    }

    /// `(loop_id, due_at, started_at, outcome)` of every tick started in
    /// `[from, to)` (for benchmarks).
    pub async fn ticks_started_between(
        &self,
        from: i64,
        to: i64,
    ) -> Result<Vec<(String, i64, i64, Option<String>)>, StoreError> {
        let rows = crate::engine::query(
            "SELECT loop_id, due_at, started_at, outcome FROM loop_ticks WHERE started_at >= $1 AND started_at < $2",
        )
        .bind(from)
        .bind(to)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| {
                Ok((
                    r.try_get("loop_id")?,
                    r.try_get("due_at")?,
                    r.try_get("started_at")?,
                    r.try_get("outcome")?,
                ))
            })
            .collect()
    }

    /// A loop's ticks in order (for tests and benchmarks).
    pub async fn loop_ticks(&self, loop_id: &str) -> Result<Vec<TickRow>, StoreError> {
        let rows = crate::engine::query(
            "SELECT seq, instance, due_at, started_at, finished_at, outcome FROM loop_ticks WHERE loop_id = $1 ORDER BY seq",
        )
        .bind(loop_id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| {
                Ok(TickRow {
                    seq: r.try_get("seq")?,
                    instance: r.try_get("instance")?,
                    due_at: r.try_get("due_at")?,
                    started_at: r.try_get("started_at")?,
                    finished_at: r.try_get("finished_at")?,
                    outcome: r.try_get("outcome")?,
                })
            })
            .collect()
    }
}
