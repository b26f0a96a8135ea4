//! Conversation tests and their runs (R-BX-10). A test belongs to one
//! assistant or workflow (its target) and goes with it; a run belongs to
//! its test, and only the newest runs of a test are kept.

use rtc_core::time::rfc3339_from_millis;
use rtc_protocol::{ConversationTest, TestRun};

use crate::{ResourceKind, Store, StoreError, new_id, now_millis};

/// The assistant or workflow a test belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TestTarget<'a> {
    /// `Assistant` or `Workflow`.
    pub kind: ResourceKind,
    pub id: &'a str,
}

fn decode_test(row: &crate::engine::Row) -> Result<ConversationTest, StoreError> {
    let body: String = row.try_get("body")?;
    let mut test: ConversationTest = serde_json::from_str(&body)
        .map_err(|e| StoreError::Corrupt(format!("conversation test: {e}")))?;
    test.id = Some(row.try_get("id")?);
    test.created_at = Some(rfc3339_from_millis(row.try_get("created_at")?));
    test.updated_at = Some(rfc3339_from_millis(row.try_get("updated_at")?));
    Ok(test)
}

fn body_of(test: &ConversationTest) -> Result<String, StoreError> {
    let mut stored = test.clone();
    stored.id = None;
    stored.created_at = None;
    stored.updated_at = None;
    serde_json::to_string(&stored).map_err(|e| StoreError::Corrupt(e.to_string()))
}

fn decode_run(row: &crate::engine::Row) -> Result<TestRun, StoreError> {
    let body: String = row.try_get("body")?;
    serde_json::from_str(&body).map_err(|e| StoreError::Corrupt(format!("test run: {e}")))
}

impl Store {
    /// Store a new test of `target`.
    pub async fn insert_test(
        &self,
        workspace: &str,
        target: TestTarget<'_>,
        test: ConversationTest,
    ) -> Result<ConversationTest, StoreError> {
        let id = new_id("test");
        let now = now_millis();
        crate::engine::query("INSERT INTO conversation_tests (workspace_id, id, target_kind, target_id, name, body, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $7)")
            .bind(workspace)
            .bind(&id)
            .bind(target.kind.as_str())
            .bind(target.id)
            .bind(&test.name)
            .bind(body_of(&test)?)
            .bind(now)
            .execute(&self.writer)
            .await?;
        let mut test = test;
        test.id = Some(id);
        test.created_at = Some(rfc3339_from_millis(now));
        test.updated_at = test.created_at.clone();
        Ok(test)
    }

    /// Replace a test; `None` when `target` has no test `id`.
    pub async fn update_test(
        &self,
        workspace: &str,
        target: TestTarget<'_>,
        id: &str,
        test: ConversationTest,
    ) -> Result<Option<ConversationTest>, StoreError> {
        let now = now_millis();
        let done = crate::engine::query("UPDATE conversation_tests SET name = $1, body = $2, updated_at = $3 WHERE workspace_id = $4 AND target_kind = $5 AND target_id = $6 AND id = $7")
            .bind(&test.name)
            .bind(body_of(&test)?)
            .bind(now)
            .bind(workspace)
            .bind(target.kind.as_str())
            .bind(target.id)
            .bind(id)
            .execute(&self.writer)
            .await?;
        if done.rows_affected() == 0 {
            return Ok(None);
        }
        self.test(workspace, target, id).await
    }

    pub async fn test(
        &self,
        workspace: &str,
        target: TestTarget<'_>,
        id: &str,
    ) -> Result<Option<ConversationTest>, StoreError> {
        let row = crate::engine::query("SELECT id, body, created_at, updated_at FROM conversation_tests WHERE workspace_id = $1 AND target_kind = $2 AND target_id = $3 AND id = $4")
            .bind(workspace)
            .bind(target.kind.as_str())
            .bind(target.id)
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(decode_test).transpose()
    }

    /// The tests of `target`, oldest first.
    pub async fn tests(
        &self,
        workspace: &str,
        target: TestTarget<'_>,
    ) -> Result<Vec<ConversationTest>, StoreError> {
        let rows = crate::engine::query("SELECT id, body, created_at, updated_at FROM conversation_tests WHERE workspace_id = $1 AND target_kind = $2 AND target_id = $3 ORDER BY created_at, id")
            .bind(workspace)
            .bind(target.kind.as_str())
            .bind(target.id)
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(decode_test).collect()
    }

    /// Delete a test with its runs; whether it existed.
    pub async fn delete_test(
        &self,
        workspace: &str,
        target: TestTarget<'_>,
        id: &str,
    ) -> Result<bool, StoreError> {
        let mut tx = self.begin_write().await?;
        let done = crate::engine::query("DELETE FROM conversation_tests WHERE workspace_id = $1 AND target_kind = $2 AND target_id = $3 AND id = $4")
            .bind(workspace)
            .bind(target.kind.as_str())
            .bind(target.id)
            .bind(id)
            .execute(&mut *tx)
            .await?;
        if done.rows_affected() > 0 {
            crate::engine::query("DELETE FROM test_runs WHERE workspace_id = $1 AND test_id = $2")
                .bind(workspace)
                .bind(id)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(done.rows_affected() > 0)
    }

    /// Store a run and keep only the newest `keep` runs of its test.
    pub async fn insert_test_run(
        &self,
        workspace: &str,
        run: &TestRun,
        keep: usize,
    ) -> Result<(), StoreError> {
        let body = serde_json::to_string(run).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let mut tx = self.begin_write().await?;
        crate::engine::query("INSERT INTO test_runs (workspace_id, id, test_id, status, body, created_at) VALUES ($1, $2, $3, $4, $5, $6)")
            .bind(workspace)
            .bind(&run.id)
            .bind(&run.test_id)
            .bind(run.status.as_str())
            .bind(&body)
            .bind(now_millis())
            .execute(&mut *tx)
            .await?;
        crate::engine::query("DELETE FROM test_runs WHERE workspace_id = $1 AND test_id = $2 AND id NOT IN (SELECT id FROM test_runs WHERE workspace_id = $1 AND test_id = $2 ORDER BY created_at DESC, id DESC LIMIT $3)")
            .bind(workspace)
            .bind(&run.test_id)
            .bind(i64::try_from(keep).unwrap_or(i64::MAX))
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    /// A test's runs, newest first, at most `limit`.
    pub async fn test_runs(
        &self,
        workspace: &str,
        test_id: &str,
        limit: i64,
    ) -> Result<Vec<TestRun>, StoreError> {
        let rows = crate::engine::query("SELECT body FROM test_runs WHERE workspace_id = $1 AND test_id = $2 ORDER BY created_at DESC, id DESC LIMIT $3")
            .bind(workspace)
            .bind(test_id)
            .bind(limit)
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(decode_run).collect()
    }

    pub async fn test_run(
        &self,
        workspace: &str,
        test_id: &str,
        run_id: &str,
    ) -> Result<Option<TestRun>, StoreError> {
        let row = crate::engine::query(
            "SELECT body FROM test_runs WHERE workspace_id = $1 AND test_id = $2 AND id = $3",
        )
        .bind(workspace)
        .bind(test_id)
        .bind(run_id)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(decode_run).transpose()
    }
}

/// Inside a target's delete: its tests, their runs and its runs of
/// tests go too.
pub(crate) async fn delete_tests_of(
    conn: &mut crate::engine::Conn,
    workspace: &str,
    kind: ResourceKind,
    target_id: &str,
) -> Result<(), StoreError> {
    crate::engine::query("DELETE FROM test_runs WHERE workspace_id = $1 AND test_id IN (SELECT id FROM conversation_tests WHERE workspace_id = $1 AND target_kind = $2 AND target_id = $3)")
        .bind(workspace)
        .bind(kind.as_str())
        .bind(target_id)
        .execute(&mut *conn)
        .await?;
    crate::engine::query("DELETE FROM conversation_tests WHERE workspace_id = $1 AND target_kind = $2 AND target_id = $3")
        .bind(workspace)
        .bind(kind.as_str())
        .bind(target_id)
        .execute(&mut *conn)
        .await?;
    crate::test_suite_runs::delete_suite_runs_of(conn, workspace, kind, target_id).await
}
