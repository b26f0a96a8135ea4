//! Tasks delegated to task backends (R-TK): one durable row per task with
//! what it runs with, its status, its OpenCode session id, and a lease; a
//! reasoner's transcript is one row per message (`task_messages`), a step
//! appending the messages it added and rewriting those it changed. The
//! instance holding the lease drives the task and renews it; a task whose
//! lease ran out (its instance died) is claimed by one other instance. A
//! task ends once: the final status is written only over `running`, and
//! its report goes to the session's inbox in the same transaction, so the
//! conversation hears of it exactly once.

use crate::subagents::insert_inbox;
use crate::{InboxItem, Store, StoreError, now_millis};

/// A task row; times are epoch milliseconds.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskRecord {
    pub id: String,
    pub workspace_id: String,
    pub session_id: String,
    pub backend_id: String,
    /// `reasoner` or `opencode`.
    pub backend_type: String,
    /// What the task runs with (JSON), taken at delegation.
    pub config: String,
    pub title: String,
    pub instruction: String,
    /// `running`, `completed`, `failed` or `cancelled`.
    pub status: String,
    pub result: Option<String>,
    pub error: Option<String>,
    pub detail: Option<String>,
    pub external_id: Option<String>,
    /// A reasoner's messages (JSON array) as saved before they were
    /// stored a row each ([`Store::task_transcript`]); `[]` for a task
    /// delegated since.
    pub transcript: String,
    pub steps: i64,
    pub lease_owner: Option<String>,
    pub lease_until: Option<i64>,
    pub deadline_at: i64,
    pub created_at: i64,
    pub updated_at: i64,
    pub finished_at: Option<i64>,
}

/// How a task ended.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskEnding<'a> {
    /// `completed`, `failed` or `cancelled`.
    pub status: &'a str,
    pub result: Option<&'a str>,
    pub error: Option<&'a str>,
    /// The report for the session's inbox, if the conversation is told.
    pub report: Option<&'a InboxItem>,
    /// The instance whose driver ends the task: written only while it
    /// still holds the lease. `None` for a cancellation, which any
    /// instance may write.
    pub holder: Option<&'a str>,
}

const COLUMNS: &str = "id, workspace_id, session_id, backend_id, backend_type, config, title, \
    instruction, status, result, error, detail, external_id, transcript, steps, lease_owner, \
    lease_until, deadline_at, created_at, updated_at, finished_at";

fn record(row: &crate::engine::Row) -> Result<TaskRecord, StoreError> {
    Ok(TaskRecord {
        id: row.try_get("id")?,
        workspace_id: row.try_get("workspace_id")?,
        session_id: row.try_get("session_id")?,
        backend_id: row.try_get("backend_id")?,
        backend_type: row.try_get("backend_type")?,
        config: row.try_get("config")?,
        title: row.try_get("title")?,
        instruction: row.try_get("instruction")?,
        status: row.try_get("status")?,
        result: row.try_get("result")?,
        error: row.try_get("error")?,
        detail: row.try_get("detail")?,
        external_id: row.try_get("external_id")?,
        transcript: row.try_get("transcript")?,
        steps: row.try_get("steps")?,
        lease_owner: row.try_get("lease_owner")?,
        lease_until: row.try_get("lease_until")?,
        deadline_at: row.try_get("deadline_at")?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
        finished_at: row.try_get("finished_at")?,
    })
}

async fn insert<'e>(
    executor: impl crate::engine::Exec<'e>,
    t: &TaskRecord,
) -> Result<(), StoreError> {
    let sql = format!(
        "INSERT INTO tasks ({COLUMNS}) VALUES \
         ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21)"
    );
    crate::engine::query(sql)
        .bind(&t.id)
        .bind(&t.workspace_id)
        .bind(&t.session_id)
        .bind(&t.backend_id)
        .bind(&t.backend_type)
        .bind(&t.config)
        .bind(&t.title)
        .bind(&t.instruction)
        .bind(&t.status)
        .bind(&t.result)
        .bind(&t.error)
        .bind(&t.detail)
        .bind(&t.external_id)
        .bind(&t.transcript)
        .bind(t.steps)
        .bind(&t.lease_owner)
        .bind(t.lease_until)
        .bind(t.deadline_at)
        .bind(t.created_at)
        .bind(t.updated_at)
        .bind(t.finished_at)
        .execute(executor)
        .await?;
    Ok(())
}

/// How many tasks of `backend` are running in `workspace`.
async fn count_running<'e>(
    executor: impl crate::engine::Exec<'e>,
    workspace: &str,
    backend: &str,
) -> Result<i64, StoreError> {
    let row = crate::engine::query(
        "SELECT COUNT(*) AS n FROM tasks WHERE workspace_id = $1 AND backend_id = $2 AND status = 'running'",
    )
    .bind(workspace)
    .bind(backend)
    .fetch_one(executor)
    .await?;
    row.try_get("n")
}

impl Store {
    /// Record a new task.
    pub async fn insert_task(&self, t: &TaskRecord) -> Result<(), StoreError> {
        insert(&self.writer, t).await
    }

    /// Record a new task unless its backend already runs `limit` tasks in
    /// the workspace; `false` when it does. Counting and inserting are one
    /// step (SQLite's write lock; a PostgreSQL advisory lock per backend),
    /// so tasks delegated at once cannot pass the limit together.
    pub async fn insert_task_within(&self, t: &TaskRecord, limit: i64) -> Result<bool, StoreError> {
        let mut tx = self.begin_write().await?;
        if let Some(lock) = self.dialect.key_lock() {
            crate::engine::query(lock)
                .bind(format!(
                    "rtc-task-backend/{}/{}",
                    t.workspace_id, t.backend_id
                ))
                .execute(&mut *tx)
                .await?;
        }
        if count_running(&mut *tx, &t.workspace_id, &t.backend_id).await? >= limit {
            return Ok(false);
        }
        insert(&mut *tx, t).await?;
        tx.commit().await?;
        Ok(true)
    }

    /// One task of a session (`None` for another session's or workspace's).
    pub async fn task(
        &self,
        workspace: &str,
        session: &str,
        id: &str,
    ) -> Result<Option<TaskRecord>, StoreError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM tasks WHERE id = $1 AND session_id = $2 AND workspace_id = $3"
        );
        let row = crate::engine::query(sql)
            .bind(id)
            .bind(session)
            .bind(workspace)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(record).transpose()
    }

    /// A task by id alone (its driver reloading it).
    pub async fn task_by_id(&self, id: &str) -> Result<Option<TaskRecord>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM tasks WHERE id = $1");
        let row = crate::engine::query(sql)
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(record).transpose()
    }

    /// A session's tasks, oldest first.
    pub async fn session_tasks(
        &self,
        workspace: &str,
        session: &str,
    ) -> Result<Vec<TaskRecord>, StoreError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM tasks WHERE session_id = $1 AND workspace_id = $2 ORDER BY created_at, id"
        );
        let rows = crate::engine::query(sql)
            .bind(session)
            .bind(workspace)
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(record).collect()
    }

    /// How many tasks of a backend are running in a workspace.
    pub async fn running_backend_tasks(
        &self,
        workspace: &str,
        backend: &str,
    ) -> Result<i64, StoreError> {
        count_running(&self.pool, workspace, backend).await
    }

    /// The running tasks of a session (to cancel when it ends).
    pub async fn running_session_tasks(
        &self,
        session: &str,
    ) -> Result<Vec<TaskRecord>, StoreError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM tasks WHERE session_id = $1 AND status = 'running' ORDER BY created_at"
        );
        let rows = crate::engine::query(sql)
            .bind(session)
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(record).collect()
    }

    /// Record the backend's id of a running task held by `owner`.
    pub async fn set_task_external_id(
        &self,
        id: &str,
        owner: &str,
        external_id: &str,
    ) -> Result<bool, StoreError> {
        let done = crate::engine::query(
            "UPDATE tasks SET external_id = $1, updated_at = $2 \
             WHERE id = $3 AND lease_owner = $4 AND status = 'running'",
        )
        .bind(external_id)
        .bind(now_millis())
        .bind(id)
        .bind(owner)
        .execute(&self.writer)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Save a running task's progress (transcript, steps, detail) while
    /// `owner` holds it; `false` when it no longer runs or is not `owner`'s.
    pub async fn save_task_progress(
        &self,
        id: &str,
        owner: &str,
        transcript: &str,
        steps: i64,
        detail: Option<&str>,
    ) -> Result<bool, StoreError> {
        let done = crate::engine::query(
            "UPDATE tasks SET transcript = $1, steps = $2, detail = $3, updated_at = $4 \
             WHERE id = $5 AND lease_owner = $6 AND status = 'running'",
        )
        .bind(transcript)
        .bind(steps)
        .bind(detail)
        .bind(now_millis())
        .bind(id)
        .bind(owner)
        .execute(&self.writer)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Save a reasoner step while `owner` holds the running task, in one
    /// transaction: its steps and detail, the transcript messages it
    /// appended and those it changed (`(seq, body)`, one message's JSON
    /// each), so a step writes what it changed, never the whole transcript.
    /// `false` (and nothing written) when the task no longer runs or is not
    /// `owner`'s.
    pub async fn save_task_step(
        &self,
        id: &str,
        owner: &str,
        appended: &[(i64, String)],
        rewritten: &[(i64, String)],
        steps: i64,
        detail: Option<&str>,
    ) -> Result<bool, StoreError> {
        let mut tx = self.begin_write().await?;
        let done = crate::engine::query(
            "UPDATE tasks SET steps = $1, detail = $2, updated_at = $3 \
             WHERE id = $4 AND lease_owner = $5 AND status = 'running'",
        )
        .bind(steps)
        .bind(detail)
        .bind(now_millis())
        .bind(id)
        .bind(owner)
        .execute(&mut *tx)
        .await?;
        if done.rows_affected() != 1 {
            tx.rollback().await?;
            return Ok(false);
        }
        for (seq, body) in appended {
            crate::engine::query(
                "INSERT INTO task_messages (task_id, seq, body) VALUES ($1, $2, $3)",
            )
            .bind(id)
            .bind(*seq)
            .bind(body)
            .execute(&mut *tx)
            .await?;
        }
        for (seq, body) in rewritten {
            crate::engine::query(
                "UPDATE task_messages SET body = $1 WHERE task_id = $2 AND seq = $3",
            )
            .bind(body)
            .bind(id)
            .bind(*seq)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(true)
    }

    /// A task's stored transcript messages (one JSON each), in order; empty
    /// for a task saved before they were stored a row each (its transcript
    /// is then in [`TaskRecord::transcript`]).
    pub async fn task_transcript(&self, id: &str) -> Result<Vec<String>, StoreError> {
        let rows =
            crate::engine::query("SELECT body FROM task_messages WHERE task_id = $1 ORDER BY seq")
                .bind(id)
                .fetch_all(&self.pool)
                .await?;
        rows.iter()
            .map(|r| r.try_get::<String, _>("body"))
            .collect()
    }

    /// End a running task, with its report in the session's inbox, in one
    /// transaction; `false` (and nothing written) when it had already
    /// ended, so a task ends, and is reported, once.
    pub async fn finish_task(&self, id: &str, ending: &TaskEnding<'_>) -> Result<bool, StoreError> {
        let now = now_millis();
        let mut tx = self.begin_write().await?;
        let done = crate::engine::query(
            "UPDATE tasks SET status = $1, result = $2, error = $3, updated_at = $4, finished_at = $4, \
             lease_owner = NULL, lease_until = NULL WHERE id = $5 AND status = 'running' \
             AND ($6 = '' OR lease_owner = $6)",
        )
        .bind(ending.status)
        .bind(ending.result)
        .bind(ending.error)
        .bind(now)
        .bind(id)
        .bind(ending.holder.unwrap_or(""))
        .execute(&mut *tx)
        .await?;
        if done.rows_affected() != 1 {
            return Ok(false);
        }
        if let Some(report) = ending.report {
            insert_inbox(&mut *tx, report).await?;
        }
        tx.commit().await?;
        Ok(true)
    }

    /// Extend the leases of the running tasks `ids` that `owner` holds
    /// (those its drivers run: a task whose driver is gone is not renewed,
    /// so its lease runs out and it is taken over).
    pub async fn renew_task_leases(
        &self,
        owner: &str,
        ids: &[String],
        until: i64,
    ) -> Result<u64, StoreError> {
        let mut renewed = 0;
        for id in ids {
            renewed += crate::engine::query(
                "UPDATE tasks SET lease_until = $1 WHERE id = $2 AND lease_owner = $3 AND status = 'running'",
            )
            .bind(until)
            .bind(id)
            .bind(owner)
            .execute(&self.writer)
            .await?
            .rows_affected();
        }
        Ok(renewed)
    }

    /// Which of `ids` no longer run (ended elsewhere, e.g. cancelled
    /// through another instance) or were taken by another instance, each
    /// with its status now (`None`: the task is gone).
    pub async fn tasks_lost_by(
        &self,
        owner: &str,
        ids: &[String],
    ) -> Result<Vec<(String, Option<String>)>, StoreError> {
        let mut lost = Vec::new();
        for id in ids {
            let row = crate::engine::query("SELECT status, lease_owner FROM tasks WHERE id = $1")
                .bind(id)
                .fetch_optional(&self.pool)
                .await?;
            let status = match &row {
                Some(r) => {
                    let status: String = r.try_get("status")?;
                    let holder: Option<String> = r.try_get("lease_owner")?;
                    if status == "running" && holder.as_deref() == Some(owner) {
                        continue;
                    }
                    Some(status)
                }
                None => None,
            };
            lost.push((id.clone(), status));
        }
        Ok(lost)
    }

    /// Take over running tasks nobody drives: those whose lease ran out
    /// (their instance died, or their driver here ended without ending
    /// them), and those `owner` held in an earlier life (a restart under
    /// the same instance name: created before `own_before`). Each is
    /// claimed by an optimistic update, so one instance wins it.
    pub async fn claim_orphan_tasks(
        &self,
        owner: &str,
        now: i64,
        until: i64,
        limit: i64,
        own_before: Option<i64>,
    ) -> Result<Vec<TaskRecord>, StoreError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM tasks WHERE status = 'running' \
             AND (lease_until IS NULL OR lease_until < $1 OR (lease_owner = $3 AND created_at < $2)) \
             ORDER BY created_at LIMIT $4"
        );
        let rows = crate::engine::query(sql)
            .bind(now)
            .bind(own_before.unwrap_or(i64::MIN))
            .bind(owner)
            .bind(limit)
            .fetch_all(&self.pool)
            .await?;
        let mut claimed = Vec::new();
        for row in &rows {
            let mut task = record(row)?;
            let won = crate::engine::query(
                "UPDATE tasks SET lease_owner = $1, lease_until = $2 \
                 WHERE id = $3 AND status = 'running' \
                 AND lease_owner IS NOT DISTINCT FROM $4 AND lease_until IS NOT DISTINCT FROM $5",
            )
            .bind(owner)
            .bind(until)
            .bind(&task.id)
            .bind(&task.lease_owner)
            .bind(task.lease_until)
            .execute(&self.writer)
            .await?
            .rows_affected()
                == 1;
            if won {
                task.lease_owner = Some(owner.to_owned());
                task.lease_until = Some(until);
                claimed.push(task);
            }
        }
        Ok(claimed)
    }
}
