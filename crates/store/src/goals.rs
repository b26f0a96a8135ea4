//! Goals of a session (R-GL, R-BX-2): one row each, rewritten whole when
//! the runtime changes it.

use rtc_protocol::GoalStatus;

use crate::{Store, StoreError};

/// A stored goal; times are epoch milliseconds.
#[derive(Debug, Clone, PartialEq)]
pub struct GoalRecord {
    pub id: String,
    pub session_id: String,
    pub condition: String,
    pub status: GoalStatus,
    pub max_turns: i64,
    pub completed_turns: i64,
    pub token_budget: Option<i64>,
    pub tokens_used: i64,
    pub deadline: Option<i64>,
    pub reason: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
    /// The instance driving the goal and until when (R-ST-2); written when
    /// the goal is created and by the lease calls, never by a rewrite.
    pub lease_owner: Option<String>,
    pub lease_until: Option<i64>,
    /// Set for a goal created during this loop's tick: a periodic check,
    /// judged after later turns, with no turns of its own.
    pub loop_id: Option<String>,
}

const COLUMNS: &str = "id, session_id, condition, status, max_turns, completed_turns, token_budget, tokens_used, deadline, reason, created_at, updated_at, lease_owner, lease_until, loop_id";

fn record(row: &crate::engine::Row) -> Result<GoalRecord, StoreError> {
    let status: String = row.try_get("status")?;
    Ok(GoalRecord {
        id: row.try_get("id")?,
        session_id: row.try_get("session_id")?,
        condition: row.try_get("condition")?,
        status: GoalStatus::parse(&status)
            .ok_or_else(|| StoreError::Corrupt(format!("goal status `{status}`")))?,
        max_turns: row.try_get("max_turns")?,
        completed_turns: row.try_get("completed_turns")?,
        token_budget: row.try_get("token_budget")?,
        tokens_used: row.try_get("tokens_used")?,
        deadline: row.try_get("deadline")?,
        reason: row.try_get("reason")?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
        lease_owner: row.try_get("lease_owner")?,
        lease_until: row.try_get("lease_until")?,
        loop_id: row.try_get("loop_id")?,
    })
}

impl Store {
    /// Insert or rewrite a goal (its lease is kept on a rewrite).
    pub async fn save_goal(&self, g: &GoalRecord) -> Result<(), StoreError> {
        let sql = format!(
            "INSERT INTO goals ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) \
             ON CONFLICT (id) DO UPDATE SET status = $4, max_turns = $5, completed_turns = $6, token_budget = $7, \
             tokens_used = $8, deadline = $9, reason = $10, updated_at = $12"
        );
        crate::engine::query(sql)
            .bind(&g.id)
            .bind(&g.session_id)
            .bind(&g.condition)
            .bind(g.status.as_str())
            .bind(g.max_turns)
            .bind(g.completed_turns)
            .bind(g.token_budget)
            .bind(g.tokens_used)
            .bind(g.deadline)
            .bind(&g.reason)
            .bind(g.created_at)
            .bind(g.updated_at)
            .bind(&g.lease_owner)
            .bind(g.lease_until)
            .bind(&g.loop_id)
            .execute(&self.writer)
            .await?;
        Ok(())
    }

    /// `owner` drives the goal until `until`.
    pub async fn set_goal_lease(
        &self,
        id: &str,
        owner: &str,
        until: i64,
    ) -> Result<(), StoreError> {
        crate::engine::query("UPDATE goals SET lease_owner = $1, lease_until = $2 WHERE id = $3")
            .bind(owner)
            .bind(until)
            .bind(id)
            .execute(&self.writer)
            .await?;
        Ok(())
    }

    /// Extend the leases of the active goals `owner` drives.
    pub async fn renew_goal_leases(&self, owner: &str, until: i64) -> Result<u64, StoreError> {
        let done = crate::engine::query(
            "UPDATE goals SET lease_until = $1 WHERE lease_owner = $2 AND status = 'active'",
        )
        .bind(until)
        .bind(owner)
        .execute(&self.writer)
        .await?;
        Ok(done.rows_affected())
    }

    /// Take over active goals whose lease ran out (their instance died):
    /// each is claimed by an optimistic update, so one instance wins it.
    pub async fn claim_orphan_goals(
        &self,
        owner: &str,
        now: i64,
        until: i64,
        limit: i64,
    ) -> Result<Vec<GoalRecord>, StoreError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM goals WHERE status = 'active' AND lease_until < $1 ORDER BY lease_until LIMIT $2"
        );
        let rows = crate::engine::query(sql)
            .bind(now)
            .bind(limit)
            .fetch_all(&self.pool)
            .await?;
        let mut claimed = Vec::new();
        for row in &rows {
            let mut goal = record(row)?;
            let won = crate::engine::query(
                "UPDATE goals SET lease_owner = $1, lease_until = $2 \
                 WHERE id = $3 AND status = 'active' AND lease_until = $4",
            )
            .bind(owner)
            .bind(until)
            .bind(&goal.id)
            .bind(goal.lease_until)
            .execute(&self.writer)
            .await?
            .rows_affected()
                == 1;
            if won {
                goal.lease_owner = Some(owner.to_owned());
                goal.lease_until = Some(until);
                claimed.push(goal);
            }
        }
        Ok(claimed)
    }

    /// A session's goals, oldest first.
    pub async fn goals(&self, session: &str) -> Result<Vec<GoalRecord>, StoreError> {
        let sql =
            format!("SELECT {COLUMNS} FROM goals WHERE session_id = $1 ORDER BY created_at, id");
        let rows = crate::engine::query(sql)
            .bind(session)
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(record).collect()
    }
}
