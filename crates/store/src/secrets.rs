//! Secrets: sealed on write, listed by name only, opened only for the
//! executor that injects them into a request.

use std::collections::BTreeSet;

use rtc_core::time::rfc3339_from_millis;
use rtc_protocol::SecretInfo;

use crate::documents::{ResourceKind, referrers_in};
use crate::{Store, StoreError, now_millis};

/// A decrypted secret value. Its `Debug` never shows the value, and it is
/// not `Serialize`, so it cannot end up in a response, event or log.
#[derive(Clone)]
pub struct SecretValue(String);

impl SecretValue {
    /// The plaintext, for the one place that injects it into a request.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for SecretValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretValue(<redacted>)")
    }
}

fn aad(workspace: &str, name: &str) -> String {
    format!("{workspace}/{name}")
}

fn info(row: &crate::engine::Row) -> Result<SecretInfo, StoreError> {
    Ok(SecretInfo {
        name: row.try_get("name")?,
        created_at: rfc3339_from_millis(row.try_get("created_at")?),
        updated_at: rfc3339_from_millis(row.try_get("updated_at")?),
    })
}

impl Store {
    /// Create or replace a secret; returns whether it was created.
    pub async fn put_secret(
        &self,
        workspace: &str,
        name: &str,
        value: &str,
    ) -> Result<(SecretInfo, bool), StoreError> {
        let sealed = self.secrets.seal(&aad(workspace, name), value)?;
        let now = now_millis();
        let mut tx = self.begin_write().await?;
        let existing = crate::engine::query(
            "SELECT created_at FROM secrets WHERE workspace_id = $1 AND name = $2",
        )
        .bind(workspace)
        .bind(name)
        .fetch_optional(&mut *tx)
        .await?;
        let created = existing.is_none();
        if created {
            crate::engine::query("INSERT INTO secrets (workspace_id, name, ciphertext, created_at, updated_at) VALUES ($1, $2, $3, $4, $4)")
                .bind(workspace)
                .bind(name)
                .bind(&sealed)
                .bind(now)
                .execute(&mut *tx)
                .await?;
        } else {
            crate::engine::query("UPDATE secrets SET ciphertext = $1, updated_at = $2 WHERE workspace_id = $3 AND name = $4")
                .bind(&sealed)
                .bind(now)
                .bind(workspace)
                .bind(name)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        let info = self
            .secret_info(workspace, name)
            .await?
            .ok_or_else(|| StoreError::Corrupt("secret vanished".into()))?;
        Ok((info, created))
    }

    pub async fn secret_info(
        &self,
        workspace: &str,
        name: &str,
    ) -> Result<Option<SecretInfo>, StoreError> {
        let row = crate::engine::query("SELECT name, created_at, updated_at FROM secrets WHERE workspace_id = $1 AND name = $2")
            .bind(workspace)
            .bind(name)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(info).transpose()
    }

    pub async fn list_secrets(&self, workspace: &str) -> Result<Vec<SecretInfo>, StoreError> {
        let rows = crate::engine::query("SELECT name, created_at, updated_at FROM secrets WHERE workspace_id = $1 ORDER BY name")
            .bind(workspace)
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(info).collect()
    }

    /// The names of a workspace's secrets.
    pub async fn secret_names(&self, workspace: &str) -> Result<BTreeSet<String>, StoreError> {
        Ok(self
            .list_secrets(workspace)
            .await?
            .into_iter()
            .map(|s| s.name)
            .collect())
    }

    /// Delete a secret unless a tool or MCP server uses it.
    pub async fn delete_secret(&self, workspace: &str, name: &str) -> Result<bool, StoreError> {
        let mut tx = self.begin_write().await?;
        let referrers = referrers_in(&mut tx, workspace, ResourceKind::Secret, name).await?;
        if !referrers.is_empty() {
            return Err(StoreError::InUse { referrers });
        }
        let done =
            crate::engine::query("DELETE FROM secrets WHERE workspace_id = $1 AND name = $2")
                .bind(workspace)
                .bind(name)
                .execute(&mut *tx)
                .await?;
        tx.commit().await?;
        Ok(done.rows_affected() > 0)
    }

    /// Decrypt a secret for injection into an outbound request.
    pub async fn reveal_secret(
        &self,
        workspace: &str,
        name: &str,
    ) -> Result<Option<SecretValue>, StoreError> {
        let row = crate::engine::query(
            "SELECT ciphertext FROM secrets WHERE workspace_id = $1 AND name = $2",
        )
        .bind(workspace)
        .bind(name)
        .fetch_optional(&self.pool)
        .await?;
        let Some(row) = row else { return Ok(None) };
        let sealed: String = row.try_get("ciphertext")?;
        Ok(Some(SecretValue(
            self.secrets.open(&aad(workspace, name), &sealed)?,
        )))
    }
}
