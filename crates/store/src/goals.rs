//! Goals of a session (R-GL, R-BX-2): one row each, rewritten whole when
//! the runtime changes it.

use rtc_protocol::GoalStatus;
use sqlx::Row;

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
}

const COLUMNS: &str = "id, session_id, condition, status, max_turns, completed_turns, token_budget, tokens_used, deadline, reason, created_at, updated_at";

fn record(row: &sqlx::any::AnyRow) -> Result<GoalRecord, StoreError> {
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
    })
}

impl Store {
    /// Insert or rewrite a goal.
    pub async fn save_goal(&self, g: &GoalRecord) -> Result<(), StoreError> {
        let sql = format!(
            "INSERT INTO goals ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) \
             ON CONFLICT (id) DO UPDATE SET status = $4, max_turns = $5, completed_turns = $6, token_budget = $7, \
             tokens_used = $8, deadline = $9, reason = $10, updated_at = $12"
        );
        sqlx::query(sqlx::AssertSqlSafe(sql))
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
            .execute(&self.writer)
            .await?;
        Ok(())
    }

    /// A session's goals, oldest first.
    pub async fn goals(&self, session: &str) -> Result<Vec<GoalRecord>, StoreError> {
        let sql =
            format!("SELECT {COLUMNS} FROM goals WHERE session_id = $1 ORDER BY created_at, id");
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(session)
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(record).collect()
    }
}
