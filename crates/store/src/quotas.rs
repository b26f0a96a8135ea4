//! Workspace quotas (R-RN-10): the quota document on the workspace's row,
//! and requests counted per workspace and minute in one shared table, so
//! that every instance counts against the same limit.

use crate::{Store, StoreError};

impl Store {
    /// A workspace's quota (JSON), if it has one.
    pub async fn workspace_quota(&self, id: &str) -> Result<Option<String>, StoreError> {
        let row = crate::engine::query("SELECT quota FROM workspaces WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        Ok(match row {
            Some(r) => r.try_get("quota")?,
            None => None,
        })
    }

    /// Set (or with `None` remove) a workspace's quota; `false` when the
    /// workspace does not exist.
    pub async fn set_workspace_quota(
        &self,
        id: &str,
        quota: Option<&str>,
    ) -> Result<bool, StoreError> {
        let done = crate::engine::query("UPDATE workspaces SET quota = $1 WHERE id = $2")
            .bind(quota)
            .bind(id)
            .execute(&self.writer)
            .await?;
        Ok(done.rows_affected() > 0)
    }

    /// Count one request of `workspace` in the minute starting at
    /// `window_start`; the minute's count with it.
    pub async fn count_request(
        &self,
        workspace: &str,
        window_start: i64,
    ) -> Result<i64, StoreError> {
        let row = crate::engine::query(
            "INSERT INTO request_windows (workspace_id, window_start, requests) VALUES ($1, $2, 1) \
             ON CONFLICT (workspace_id, window_start) DO UPDATE SET requests = request_windows.requests + 1 \
             RETURNING requests",
        )
        .bind(workspace)
        .bind(window_start)
        .fetch_one(&self.writer)
        .await?;
        row.try_get("requests")
    }

    /// Forget the minutes before `before`.
    pub async fn prune_request_windows(&self, before: i64) -> Result<u64, StoreError> {
        let done = crate::engine::query("DELETE FROM request_windows WHERE window_start < $1")
            .bind(before)
            .execute(&self.writer)
            .await?;
        Ok(done.rows_affected())
    }
}
