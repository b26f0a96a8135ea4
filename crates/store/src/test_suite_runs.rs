//! Runs of a target's conversation tests (R-BX-10), stored while they run:
//! the body is the run so far, `updated_at` the runner's heartbeat. A run
//! still `running` whose heartbeat is older than [`ABANDONED_AFTER_MS`]
//! had its server stop under it and is read as `abandoned`. The newest
//! runs of a target are kept; they go with the target.

use rtc_protocol::{TestSuiteRun, TestSuiteStatus};

use crate::{ResourceKind, Store, StoreError, TestTarget, now_millis};

/// How long a running run may go without a heartbeat before it is
/// abandoned (its runner beats every few seconds).
pub const ABANDONED_AFTER_MS: i64 = 30_000;

fn body_of(run: &TestSuiteRun) -> Result<String, StoreError> {
    serde_json::to_string(run).map_err(|e| StoreError::Corrupt(e.to_string()))
}

fn decode(row: &crate::engine::Row) -> Result<TestSuiteRun, StoreError> {
    let body: String = row.try_get("body")?;
    let mut run: TestSuiteRun = serde_json::from_str(&body)
        .map_err(|e| StoreError::Corrupt(format!("test suite run: {e}")))?;
    let updated_at: i64 = row.try_get("updated_at")?;
    if run.status == TestSuiteStatus::Running && now_millis() - updated_at > ABANDONED_AFTER_MS {
        run.status = TestSuiteStatus::Abandoned;
    }
    Ok(run)
}

impl Store {
    /// Store a new run of `target`'s tests, keeping its newest `keep`.
    pub async fn insert_suite_run(
        &self,
        workspace: &str,
        target: TestTarget<'_>,
        run: &TestSuiteRun,
        keep: usize,
    ) -> Result<(), StoreError> {
        let now = now_millis();
        let mut tx = self.begin_write().await?;
        crate::engine::query("INSERT INTO test_suite_runs (workspace_id, id, target_kind, target_id, status, body, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $7)")
            .bind(workspace)
            .bind(&run.id)
            .bind(target.kind.as_str())
            .bind(target.id)
            .bind(run.status.as_str())
            .bind(body_of(run)?)
            .bind(now)
            .execute(&mut *tx)
            .await?;
        crate::engine::query("DELETE FROM test_suite_runs WHERE workspace_id = $1 AND target_kind = $2 AND target_id = $3 AND id NOT IN (SELECT id FROM test_suite_runs WHERE workspace_id = $1 AND target_kind = $2 AND target_id = $3 ORDER BY created_at DESC, id DESC LIMIT $4)")
            .bind(workspace)
            .bind(target.kind.as_str())
            .bind(target.id)
            .bind(i64::try_from(keep).unwrap_or(i64::MAX))
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Write a run's progress (and beat its heart).
    pub async fn update_suite_run(
        &self,
        workspace: &str,
        run: &TestSuiteRun,
    ) -> Result<(), StoreError> {
        crate::engine::query("UPDATE test_suite_runs SET status = $3, body = $4, updated_at = $5 WHERE workspace_id = $1 AND id = $2")
            .bind(workspace)
            .bind(&run.id)
            .bind(run.status.as_str())
            .bind(body_of(run)?)
            .bind(now_millis())
            .execute(&self.writer)
            .await?;
        Ok(())
    }

    /// The runner is alive: a running run is not abandoned.
    pub async fn beat_suite_run(&self, workspace: &str, run_id: &str) -> Result<(), StoreError> {
        crate::engine::query("UPDATE test_suite_runs SET updated_at = $3 WHERE workspace_id = $1 AND id = $2 AND status = 'running'")
            .bind(workspace)
            .bind(run_id)
            .bind(now_millis())
            .execute(&self.writer)
            .await?;
        Ok(())
    }

    /// One run of `target`'s tests.
    pub async fn suite_run(
        &self,
        workspace: &str,
        target: TestTarget<'_>,
        run_id: &str,
    ) -> Result<Option<TestSuiteRun>, StoreError> {
        let row = crate::engine::query("SELECT body, updated_at FROM test_suite_runs WHERE workspace_id = $1 AND target_kind = $2 AND target_id = $3 AND id = $4")
            .bind(workspace)
            .bind(target.kind.as_str())
            .bind(target.id)
            .bind(run_id)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(decode).transpose()
    }

    /// `target`'s runs, newest first, at most `limit`.
    pub async fn suite_runs(
        &self,
        workspace: &str,
        target: TestTarget<'_>,
        limit: i64,
    ) -> Result<Vec<TestSuiteRun>, StoreError> {
        let rows = crate::engine::query("SELECT body, updated_at FROM test_suite_runs WHERE workspace_id = $1 AND target_kind = $2 AND target_id = $3 ORDER BY created_at DESC, id DESC LIMIT $4")
            .bind(workspace)
            .bind(target.kind.as_str())
            .bind(target.id)
            .bind(limit)
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(decode).collect()
    }
}

/// Inside a target's delete: its runs of tests go too.
pub(crate) async fn delete_suite_runs_of(
    conn: &mut crate::engine::Conn,
    workspace: &str,
    kind: ResourceKind,
    target_id: &str,
) -> Result<(), StoreError> {
    crate::engine::query(
        "DELETE FROM test_suite_runs WHERE workspace_id = $1 AND target_kind = $2 AND target_id = $3",
    )
    .bind(workspace)
    .bind(kind.as_str())
    .bind(target_id)
    .execute(&mut *conn)
    .await?;
    Ok(())
}
