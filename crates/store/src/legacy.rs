//! Earlier-format (v3) data and the Tool Resource v4 migration's storage
//! side: `import-v3` stores a v3 export's documents as pending legacy
//! documents of a workspace; [`ResourceMigration`] is the one transaction
//! in which `migrate` reads them, writes the v4 resources, deletes them
//! and records the migration (SQLite `BEGIN IMMEDIATE`; PostgreSQL an
//! advisory lock and SERIALIZABLE). What the documents become is decided
//! by `rtc_core::v3_mapping`.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::catalog;
use crate::documents::{encode_sealed, write_references};
use crate::{Dialect, Document, Store, StoreError, now_millis};

/// The name under which the migration is recorded in `schema_migrations`.
pub const TOOL_RESOURCE_V4: &str = "tool_resource_v4";
/// The PostgreSQL advisory lock key of the migration.
const MIGRATION_LOCK_KEY: i64 = 0x7274_635f_7634;

/// What a v3 document is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LegacyKind {
    Tool,
    Assistant,
    Workflow,
}

impl LegacyKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Tool => "tool",
            Self::Assistant => "assistant",
            Self::Workflow => "workflow",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        [Self::Tool, Self::Assistant, Self::Workflow]
            .into_iter()
            .find(|k| k.as_str() == s)
    }
}

/// One pending v3 document, as imported.
#[derive(Debug, Clone, PartialEq)]
pub struct LegacyDocument {
    pub workspace_id: String,
    pub kind: LegacyKind,
    pub id: String,
    pub body: Value,
}

/// A recorded data migration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigrationRecord {
    pub name: String,
    pub fingerprint: String,
    /// JSON: what the migration changed.
    pub counts: String,
    pub applied_at: i64,
}

impl Store {
    /// Store a v3 export's documents (each with a string `id`) as pending
    /// legacy documents of `workspace`, in one transaction. An unknown
    /// workspace or an id given twice is [`StoreError::LegacyInvalid`].
    pub async fn import_v3(
        &self,
        workspace: &str,
        docs: &[(LegacyKind, Value)],
    ) -> Result<usize, StoreError> {
        let mut tx = self.begin_write().await?;
        let exists = crate::engine::query("SELECT 1 FROM workspaces WHERE id = $1")
            .bind(workspace)
            .fetch_optional(&mut *tx)
            .await?;
        if exists.is_none() {
            return Err(StoreError::LegacyInvalid(format!(
                "workspace `{workspace}` does not exist"
            )));
        }
        let start: i64 = crate::engine::query("SELECT COUNT(*) AS n FROM legacy_documents")
            .fetch_one(&mut *tx)
            .await?
            .try_get("n")?;
        let now = now_millis();
        for (i, (kind, body)) in docs.iter().enumerate() {
            let Some(id) = body.get("id").and_then(Value::as_str) else {
                return Err(StoreError::LegacyInvalid(format!(
                    "{}s[{i}] has no string `id`",
                    kind.as_str()
                )));
            };
            let taken = crate::engine::query(
                "SELECT 1 FROM legacy_documents WHERE workspace_id = $1 AND kind = $2 AND id = $3",
            )
            .bind(workspace)
            .bind(kind.as_str())
            .bind(id)
            .fetch_optional(&mut *tx)
            .await?;
            if taken.is_some() {
                return Err(StoreError::LegacyInvalid(format!(
                    "{} `{id}` is already pending in workspace `{workspace}`",
                    kind.as_str()
                )));
            }
            crate::engine::query("INSERT INTO legacy_documents (workspace_id, kind, id, position, body, updated_at) VALUES ($1, $2, $3, $4, $5, $6)")
                .bind(workspace)
                .bind(kind.as_str())
                .bind(id)
                .bind(start + i64::try_from(i).unwrap_or(i64::MAX))
                .bind(body.to_string())
                .bind(now)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(docs.len())
    }

    /// How many v3 documents wait for the migration.
    pub async fn pending_legacy(&self) -> Result<u64, StoreError> {
        let n: i64 = crate::engine::query("SELECT COUNT(*) AS n FROM legacy_documents")
            .fetch_one(&self.pool)
            .await?
            .try_get("n")?;
        Ok(u64::try_from(n).unwrap_or_default())
    }

    /// The record of a data migration, if it ran.
    pub async fn data_migration(&self, name: &str) -> Result<Option<MigrationRecord>, StoreError> {
        let row = crate::engine::query(
            "SELECT name, fingerprint, counts, applied_at FROM schema_migrations WHERE name = $1",
        )
        .bind(name)
        .fetch_optional(&self.pool)
        .await?;
        row.map(|r| {
            Ok(MigrationRecord {
                name: r.try_get("name")?,
                fingerprint: r.try_get("fingerprint")?,
                counts: r.try_get("counts")?,
                applied_at: r.try_get("applied_at")?,
            })
        })
        .transpose()
    }

    /// Open the migration's transaction (it holds the write lock).
    pub async fn begin_resource_migration(&self) -> Result<ResourceMigration, StoreError> {
        let tx = match self.dialect {
            Dialect::Sqlite => self.begin_write().await?,
            Dialect::Postgres => {
                let mut tx = self
                    .writer
                    .begin_with("BEGIN ISOLATION LEVEL SERIALIZABLE")
                    .await?;
                crate::engine::query("SELECT pg_advisory_xact_lock($1)")
                    .bind(MIGRATION_LOCK_KEY)
                    .execute(&mut *tx)
                    .await?;
                tx
            }
        };
        Ok(ResourceMigration {
            tx,
            store: self.clone(),
        })
    }
}

/// The Tool Resource v4 migration's transaction: nothing it writes is
/// visible until [`ResourceMigration::commit`]; dropping it rolls back.
pub struct ResourceMigration {
    tx: crate::engine::Tx,
    store: Store,
}

impl ResourceMigration {
    /// The fingerprint of the database as this transaction sees it.
    pub async fn fingerprint(&mut self) -> Result<String, StoreError> {
        Ok(catalog::live_fingerprint(&mut self.tx, self.store.dialect)
            .await?
            .fingerprint())
    }

    /// Every pending v3 document, by workspace, in import order.
    pub async fn pending(&mut self) -> Result<Vec<LegacyDocument>, StoreError> {
        let rows = crate::engine::query("SELECT workspace_id, kind, id, body FROM legacy_documents ORDER BY workspace_id, position, kind, id")
            .fetch_all(&mut *self.tx)
            .await?;
        rows.iter()
            .map(|r| {
                let kind: String = r.try_get("kind")?;
                let id: String = r.try_get("id")?;
                let body: String = r.try_get("body")?;
                Ok(LegacyDocument {
                    workspace_id: r.try_get("workspace_id")?,
                    kind: LegacyKind::parse(&kind)
                        .ok_or_else(|| StoreError::Corrupt(format!("legacy kind `{kind}`")))?,
                    body: serde_json::from_str(&body)
                        .map_err(|e| StoreError::Corrupt(format!("legacy {kind} {id}: {e}")))?,
                    id,
                })
            })
            .collect()
    }

    /// The workspace's stored documents of one kind (seen in the transaction).
    pub async fn list<D: Document>(&mut self, workspace: &str) -> Result<Vec<D>, StoreError> {
        let rows = crate::engine::query("SELECT id, body, created_at, updated_at FROM resources WHERE workspace_id = $1 AND kind = $2 ORDER BY created_at, id")
            .bind(workspace)
            .bind(D::KIND.as_str())
            .fetch_all(&mut *self.tx)
            .await?;
        rows.iter()
            .map(|r| self.store.decode(workspace, r))
            .collect()
    }

    /// The names of the workspace's secrets.
    pub async fn secret_names(&mut self, workspace: &str) -> Result<BTreeSet<String>, StoreError> {
        let rows = crate::engine::query("SELECT name FROM secrets WHERE workspace_id = $1")
            .bind(workspace)
            .fetch_all(&mut *self.tx)
            .await?;
        rows.iter()
            .map(|r| r.try_get::<String, _>("name"))
            .collect()
    }

    /// Store a v4 resource with its references; an id already taken is
    /// [`StoreError::AlreadyExists`].
    pub async fn insert<D: Document>(
        &mut self,
        workspace: &str,
        id: &str,
        doc: &D,
    ) -> Result<(), StoreError> {
        let exists = crate::engine::query(
            "SELECT 1 FROM resources WHERE workspace_id = $1 AND kind = $2 AND id = $3",
        )
        .bind(workspace)
        .bind(D::KIND.as_str())
        .bind(id)
        .fetch_optional(&mut *self.tx)
        .await?;
        if exists.is_some() {
            return Err(StoreError::AlreadyExists(id.to_owned()));
        }
        let body = encode_sealed(&self.store, workspace, id, doc)?;
        let now = now_millis();
        crate::engine::query("INSERT INTO resources (workspace_id, kind, id, name, body, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $6)")
            .bind(workspace)
            .bind(D::KIND.as_str())
            .bind(id)
            .bind(doc.name())
            .bind(&body)
            .bind(now)
            .execute(&mut *self.tx)
            .await?;
        write_references(&mut self.tx, workspace, D::KIND, id, &doc.references()).await?;
        Ok(())
    }

    /// Delete the pending documents, record the migration and commit.
    pub async fn commit(mut self, fingerprint: &str, counts: &Value) -> Result<(), StoreError> {
        crate::engine::query("DELETE FROM legacy_documents")
            .execute(&mut *self.tx)
            .await?;
        crate::engine::query("DELETE FROM schema_migrations WHERE name = $1")
            .bind(TOOL_RESOURCE_V4)
            .execute(&mut *self.tx)
            .await?;
        crate::engine::query("INSERT INTO schema_migrations (name, fingerprint, counts, applied_at) VALUES ($1, $2, $3, $4)")
            .bind(TOOL_RESOURCE_V4)
            .bind(fingerprint)
            .bind(counts.to_string())
            .bind(now_millis())
            .execute(&mut *self.tx)
            .await?;
        self.tx.commit().await?;
        Ok(())
    }

    /// Undo everything written in the transaction.
    pub async fn rollback(self) -> Result<(), StoreError> {
        self.tx.rollback().await?;
        Ok(())
    }
}
