//! Whole-database backups: one self-describing JSON file holding every
//! table's rows as engine-neutral values (integers, strings, null; tables,
//! columns and rows in a fixed order, so the same content always gives the
//! same bytes), the schema migration head, and a manifest with the
//! fingerprint of the Tool Resource v4 migration's backup check, the row
//! counts and a SHA-256 checksum of the content. A backup taken on one
//! engine restores on the other.
//!
//! Version 2 files are signed (R-SEC-7): the manifest (which holds the
//! content's checksum) carries an HMAC-SHA256 under a key derived from
//! the master key, so an edited backup (a workspace key's hash replaced,
//! the checksum recomputed) does not restore, and restoring needs the
//! master key the backup was made with, as its secrets do. A version 1
//! file (before signatures) restores only when the caller says it accepts
//! an unsigned backup ([`Unsigned::Allow`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::catalog::{self, ColumnKind, FingerprintInput, Table, quoted};
use crate::{Store, StoreError};

/// The `format` of a backup file.
pub const BACKUP_FORMAT: &str = "rtc-agent-backup";
/// The version of the file layout (2: signed).
pub const BACKUP_VERSION: u32 = 2;
/// The version before signatures; read only with [`Unsigned::Allow`].
pub const UNSIGNED_BACKUP_VERSION: u32 = 1;

/// Whether an unsigned (version 1) backup may be restored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unsigned {
    /// Refuse it: only a signed backup restores.
    Refuse,
    /// Accept it (`rtc-agent restore --allow-unsigned`): its content is
    /// only checked against its own checksum.
    Allow,
}

/// A backup file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Backup {
    pub format: String,
    pub version: u32,
    pub manifest: Manifest,
    pub content: BackupContent,
}

/// What the file says about its content; verified before a restore.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Manifest {
    pub migration_head: i64,
    /// Equal to the live database's fingerprint while nothing changed.
    pub fingerprint: String,
    pub row_counts: BTreeMap<String, u64>,
    pub latest_updated_at: Option<i64>,
    /// `sha256:<hex>` of the content as serialized in the file.
    pub checksum: String,
    /// `hmac-sha256:<hex>` of the format, version and the rest of the
    /// manifest, under the key derived from the master key (version 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BackupContent {
    /// The schema migrations applied (version and name), oldest first.
    pub migrations: Vec<AppliedMigration>,
    /// By table name.
    pub tables: BTreeMap<String, TableRows>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AppliedMigration {
    pub version: i64,
    pub description: String,
}

/// Column names (sorted) and rows (sorted) of one table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TableRows {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Value>>,
}

/// What a restore did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestoreSummary {
    pub tables: usize,
    pub rows: u64,
    pub migration_head: i64,
}

fn checksum(content: &BackupContent) -> Result<String, StoreError> {
    let bytes = serde_json::to_vec(content).map_err(|e| StoreError::Corrupt(e.to_string()))?;
    Ok(format!(
        "sha256:{}",
        crate::ids::hex(&Sha256::digest(&bytes))
    ))
}

/// Orders JSON cells: null, then integers, then strings.
fn cell_order(a: &Value, b: &Value) -> std::cmp::Ordering {
    fn rank(v: &Value) -> u8 {
        match v {
            Value::Null => 0,
            Value::Number(_) => 1,
            _ => 2,
        }
    }
    rank(a).cmp(&rank(b)).then_with(|| match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_i64().cmp(&y.as_i64()),
        (Value::String(x), Value::String(y)) => x.cmp(y),
        _ => std::cmp::Ordering::Equal,
    })
}

fn row_order(a: &[Value], b: &[Value]) -> std::cmp::Ordering {
    a.iter()
        .zip(b)
        .map(|(x, y)| cell_order(x, y))
        .find(|o| o.is_ne())
        .unwrap_or_else(|| a.len().cmp(&b.len()))
}

impl BackupContent {
    /// The fingerprint input this content stands for.
    pub fn fingerprint_input(&self) -> FingerprintInput {
        let mut latest: Option<i64> = None;
        for t in self.tables.values() {
            if let Some(i) = t.columns.iter().position(|c| c == "updated_at") {
                for at in t
                    .rows
                    .iter()
                    .filter_map(|r| r.get(i).and_then(Value::as_i64))
                {
                    latest = Some(latest.map_or(at, |l| l.max(at)));
                }
            }
        }
        FingerprintInput {
            migration_head: self.migrations.iter().map(|m| m.version).max().unwrap_or(0),
            row_counts: self
                .tables
                .iter()
                .map(|(n, t)| (n.clone(), t.rows.len() as u64))
                .collect(),
            latest_updated_at: latest,
        }
    }
}

impl Backup {
    /// An unsigned backup of `content`, with its manifest (sign it with
    /// [`Store::sign_backup`]).
    pub fn new(content: BackupContent) -> Result<Self, StoreError> {
        let input = content.fingerprint_input();
        Ok(Self {
            format: BACKUP_FORMAT.to_owned(),
            version: BACKUP_VERSION,
            manifest: Manifest {
                migration_head: input.migration_head,
                fingerprint: input.fingerprint(),
                row_counts: input.row_counts,
                latest_updated_at: input.latest_updated_at,
                checksum: checksum(&content)?,
                signature: None,
            },
            content,
        })
    }

    /// The bytes the signature covers: format, version and the manifest
    /// without its signature.
    fn signed_bytes(&self) -> Result<Vec<u8>, StoreError> {
        let manifest = Manifest {
            signature: None,
            ..self.manifest.clone()
        };
        serde_json::to_vec(&(&self.format, self.version, &manifest))
            .map_err(|e| StoreError::Corrupt(e.to_string()))
    }

    /// The file's bytes (compact JSON and a newline).
    pub fn to_bytes(&self) -> Result<Vec<u8>, StoreError> {
        let mut out = serde_json::to_vec(self).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        out.push(b'\n');
        Ok(out)
    }

    /// Read a backup file and verify its manifest and checksum; any
    /// mismatch is [`StoreError::BackupInvalid`].
    pub fn parse(bytes: &[u8]) -> Result<Self, StoreError> {
        let invalid = |m: String| StoreError::BackupInvalid(m);
        let backup: Self = serde_json::from_slice(bytes)
            .map_err(|e| invalid(format!("not a backup file: {e}")))?;
        let known = [BACKUP_VERSION, UNSIGNED_BACKUP_VERSION];
        if backup.format != BACKUP_FORMAT || !known.contains(&backup.version) {
            return Err(invalid(format!(
                "format `{}` version {} (expected `{BACKUP_FORMAT}` version {BACKUP_VERSION}, or the unsigned version {UNSIGNED_BACKUP_VERSION})",
                backup.format, backup.version
            )));
        }
        if (backup.version == BACKUP_VERSION) != backup.manifest.signature.is_some() {
            return Err(invalid(format!(
                "a version {BACKUP_VERSION} backup is signed and a version {UNSIGNED_BACKUP_VERSION} one is not; this one is version {} {} a signature",
                backup.version,
                if backup.manifest.signature.is_some() {
                    "with"
                } else {
                    "without"
                }
            )));
        }
        if checksum(&backup.content)? != backup.manifest.checksum {
            return Err(invalid("the checksum does not match the content".into()));
        }
        let input = backup.content.fingerprint_input();
        let m = &backup.manifest;
        if input.migration_head != m.migration_head
            || input.row_counts != m.row_counts
            || input.latest_updated_at != m.latest_updated_at
            || input.fingerprint() != m.fingerprint
        {
            return Err(invalid("the manifest does not match the content".into()));
        }
        for (name, t) in &backup.content.tables {
            if let Some(row) = t.rows.iter().find(|r| r.len() != t.columns.len()) {
                return Err(invalid(format!(
                    "table {name}: a row has {} values for {} columns",
                    row.len(),
                    t.columns.len()
                )));
            }
        }
        Ok(backup)
    }
}

async fn dump_table(
    conn: &mut crate::engine::Conn,
    table: &Table,
) -> Result<TableRows, StoreError> {
    let select: Vec<String> = table
        .columns
        .iter()
        .map(|c| match c.kind {
            ColumnKind::Integer => format!("CAST({0} AS BIGINT) AS {0}", quoted(&c.name)),
            ColumnKind::Text => quoted(&c.name),
        })
        .collect();
    let sql = format!("SELECT {} FROM {}", select.join(", "), quoted(&table.name));
    let rows = crate::engine::query(sql).fetch_all(&mut *conn).await?;
    let mut out = Vec::with_capacity(rows.len());
    for r in &rows {
        let mut cells = Vec::with_capacity(table.columns.len());
        for (i, c) in table.columns.iter().enumerate() {
            cells.push(match c.kind {
                ColumnKind::Integer => r
                    .try_get::<Option<i64>, _>(i)?
                    .map_or(Value::Null, Value::from),
                ColumnKind::Text => r
                    .try_get::<Option<String>, _>(i)?
                    .map_or(Value::Null, Value::from),
            });
        }
        out.push(cells);
    }
    out.sort_by(|a, b| row_order(a, b));
    Ok(TableRows {
        columns: table.columns.iter().map(|c| c.name.clone()).collect(),
        rows: out,
    })
}

impl Store {
    /// `backup` signed with this store's master key (version 2).
    pub fn sign_backup(&self, mut backup: Backup) -> Result<Backup, StoreError> {
        backup.version = BACKUP_VERSION;
        backup.manifest.signature = None;
        let signature = self.secrets.sign_backup(&backup.signed_bytes()?);
        backup.manifest.signature = Some(signature);
        Ok(backup)
    }

    /// Check that `backup` was signed with this store's master key; an
    /// unsigned (version 1) one passes only with [`Unsigned::Allow`].
    pub fn verify_backup(&self, backup: &Backup, unsigned: Unsigned) -> Result<(), StoreError> {
        match (&backup.manifest.signature, unsigned) {
            (Some(signature), _) => {
                if self.secrets.verify_backup(&backup.signed_bytes()?, signature) {
                    Ok(())
                } else {
                    Err(StoreError::BackupInvalid(
                        "the signature does not match: the file was changed, or it was made with another master key".into(),
                    ))
                }
            }
            (None, Unsigned::Allow) => Ok(()),
            (None, Unsigned::Refuse) => Err(StoreError::BackupInvalid(
                "the backup is unsigned (made before backups were signed); restore it only if you trust the file, with --allow-unsigned".into(),
            )),
        }
    }

    /// A consistent copy of the whole database.
    pub async fn backup(&self) -> Result<Backup, StoreError> {
        let mut tx = self.pool.begin_with(self.dialect.begin_snapshot()).await?;
        let migrations = crate::engine::query(
            "SELECT version, description FROM _sqlx_migrations ORDER BY version",
        )
        .fetch_all(&mut *tx)
        .await?
        .iter()
        .map(|r| {
            Ok(AppliedMigration {
                version: r.try_get("version")?,
                description: r.try_get("description")?,
            })
        })
        .collect::<Result<Vec<_>, StoreError>>()?;
        let mut tables = BTreeMap::new();
        for t in catalog::tables(&mut tx, self.dialect).await? {
            tables.insert(t.name.clone(), dump_table(&mut tx, &t).await?);
        }
        tx.rollback().await?;
        self.sign_backup(Backup::new(BackupContent { migrations, tables })?)
    }

    /// The fingerprint of the database now.
    pub async fn fingerprint(&self) -> Result<String, StoreError> {
        let mut conn = self.pool.acquire().await?;
        Ok(catalog::live_fingerprint(&mut conn, self.dialect)
            .await?
            .fingerprint())
    }

    /// Replace the whole database with a verified backup, in one
    /// transaction. The schema must be at the backup's migration head and
    /// hold the same tables and columns (else
    /// [`StoreError::BackupIncompatible`], nothing changed).
    pub async fn restore(
        &self,
        backup: &Backup,
        unsigned: Unsigned,
    ) -> Result<RestoreSummary, StoreError> {
        self.verify_backup(backup, unsigned)?;
        let mut tx = self.begin_write().await?;
        let head = catalog::migration_head(&mut tx).await?;
        if head != backup.manifest.migration_head {
            return Err(StoreError::BackupIncompatible(format!(
                "the backup is at schema migration {}, this database at {head}",
                backup.manifest.migration_head
            )));
        }
        let tables = catalog::tables(&mut tx, self.dialect).await?;
        let live: BTreeMap<&str, Vec<&str>> = tables
            .iter()
            .map(|t| {
                (
                    t.name.as_str(),
                    t.columns.iter().map(|c| c.name.as_str()).collect(),
                )
            })
            .collect();
        let saved: BTreeMap<&str, Vec<&str>> = backup
            .content
            .tables
            .iter()
            .map(|(n, t)| (n.as_str(), t.columns.iter().map(String::as_str).collect()))
            .collect();
        if live != saved {
            return Err(StoreError::BackupIncompatible(
                "the backup's tables or columns differ from this database's".into(),
            ));
        }
        let order = catalog::fill_order(&mut tx, self.dialect, &tables).await?;
        for name in order.iter().rev() {
            crate::engine::query(format!("DELETE FROM {}", quoted(name)))
                .execute(&mut *tx)
                .await?;
        }
        let mut rows = 0u64;
        for name in &order {
            let (Some(table), Some(saved)) = (
                tables.iter().find(|t| &t.name == name),
                backup.content.tables.get(name),
            ) else {
                continue;
            };
            let columns: Vec<String> = table.columns.iter().map(|c| quoted(&c.name)).collect();
            let params: Vec<String> = (1..=columns.len()).map(|i| format!("${i}")).collect();
            let sql = format!(
                "INSERT INTO {} ({}) VALUES ({})",
                quoted(name),
                columns.join(", "),
                params.join(", ")
            );
            for row in &saved.rows {
                let mut q = crate::engine::query(sql.clone());
                for (c, v) in table.columns.iter().zip(row) {
                    let bad = || {
                        StoreError::BackupInvalid(format!(
                            "table {name}, column {}: unexpected value {v}",
                            c.name
                        ))
                    };
                    q = match c.kind {
                        ColumnKind::Integer => q.bind(if v.is_null() {
                            None
                        } else {
                            Some(v.as_i64().ok_or_else(bad)?)
                        }),
                        ColumnKind::Text => q.bind(if v.is_null() {
                            None
                        } else {
                            Some(v.as_str().ok_or_else(bad)?.to_owned())
                        }),
                    };
                }
                q.execute(&mut *tx).await?;
                rows += 1;
            }
        }
        tx.commit().await?;
        self.keys.clear();
        Ok(RestoreSummary {
            tables: order.len(),
            rows,
            migration_head: head,
        })
    }
}
