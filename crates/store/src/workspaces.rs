//! Workspaces, their hashed API keys, and instance settings.

use rtc_core::time::rfc3339_from_millis;

use crate::{Store, StoreError, hash_token, now_millis};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkspaceRecord {
    pub id: String,
    pub name: String,
    pub created_at: String,
}

fn record(row: &crate::engine::Row) -> Result<WorkspaceRecord, StoreError> {
    Ok(WorkspaceRecord {
        id: row.try_get("id")?,
        name: row.try_get("name")?,
        created_at: rfc3339_from_millis(row.try_get("created_at")?),
    })
}

impl Store {
    /// Create a workspace whose key is `api_key` (only its hash is stored).
    pub async fn create_workspace(
        &self,
        id: &str,
        name: &str,
        api_key: &str,
    ) -> Result<WorkspaceRecord, StoreError> {
        let now = now_millis();
        crate::engine::query(
            "INSERT INTO workspaces (id, name, api_key_hash, created_at) VALUES ($1, $2, $3, $4)",
        )
        .bind(id)
        .bind(name)
        .bind(hash_token(api_key))
        .bind(now)
        .execute(&self.writer)
        .await?;
        Ok(WorkspaceRecord {
            id: id.to_owned(),
            name: name.to_owned(),
            created_at: rfc3339_from_millis(now),
        })
    }

    /// The workspace a key belongs to.
    pub async fn workspace_by_key(
        &self,
        api_key: &str,
    ) -> Result<Option<WorkspaceRecord>, StoreError> {
        let hash = hash_token(api_key);
        if let Some(known) = self.keys.get(&hash) {
            return Ok(Some(known));
        }
        let row = crate::engine::query(
            "SELECT id, name, created_at FROM workspaces WHERE api_key_hash = $1",
        )
        .bind(&hash)
        .fetch_optional(&self.pool)
        .await?;
        let found = row.as_ref().map(record).transpose()?;
        if let Some(ws) = &found {
            self.keys.put(hash, ws.clone());
        }
        Ok(found)
    }

    pub async fn workspace(&self, id: &str) -> Result<Option<WorkspaceRecord>, StoreError> {
        let row = crate::engine::query("SELECT id, name, created_at FROM workspaces WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(record).transpose()
    }

    pub async fn list_workspaces(&self) -> Result<Vec<WorkspaceRecord>, StoreError> {
        let rows = crate::engine::query(
            "SELECT id, name, created_at FROM workspaces ORDER BY created_at, id",
        )
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(record).collect()
    }

    /// Replace a workspace's key; `false` if it does not exist.
    pub async fn rotate_workspace_key(&self, id: &str, api_key: &str) -> Result<bool, StoreError> {
        let done = crate::engine::query("UPDATE workspaces SET api_key_hash = $1 WHERE id = $2")
            .bind(hash_token(api_key))
            .bind(id)
            .execute(&self.writer)
            .await?;
        self.keys.clear();
        Ok(done.rows_affected() > 0)
    }

    pub async fn setting(&self, key: &str) -> Result<Option<String>, StoreError> {
        let row = crate::engine::query("SELECT value FROM settings WHERE key = $1")
            .bind(key)
            .fetch_optional(&self.pool)
            .await?;
        row.map(|r| r.try_get("value")).transpose()
    }

    /// Store `value` under `key` unless a value is already there; returns
    /// the value in force afterwards (safe when instances race).
    pub async fn setting_or_insert(&self, key: &str, value: &str) -> Result<String, StoreError> {
        crate::engine::query(
            "INSERT INTO settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING",
        )
        .bind(key)
        .bind(value)
        .execute(&self.writer)
        .await?;
        self.setting(key)
            .await?
            .ok_or_else(|| StoreError::Corrupt(format!("setting `{key}` vanished")))
    }

    /// Overwrite a setting. For tests: the server only ever inserts
    /// settings once (`setting_or_insert`).
    pub async fn set_setting(&self, key: &str, value: &str) -> Result<(), StoreError> {
        crate::engine::query("INSERT INTO settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value")
            .bind(key)
            .bind(value)
            .execute(&self.writer)
            .await?;
        Ok(())
    }
}
