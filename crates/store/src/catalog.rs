//! What tables the database holds, read from the engine's own catalog:
//! their columns (as the portable kinds integer or text), the order in
//! which foreign keys allow them to be filled, the migration head and the
//! fingerprint of the Tool Resource v4 migration's backup check.

use std::collections::{BTreeMap, BTreeSet};

use sha2::{Digest, Sha256};

use crate::{Dialect, StoreError};

/// The table sqlx records schema migrations in; the backup carries its
/// head, not its rows (their checksums are per engine).
pub(crate) const SCHEMA_TABLE: &str = "_sqlx_migrations";

/// The portable kind of a column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ColumnKind {
    Integer,
    Text,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Column {
    pub name: String,
    pub kind: ColumnKind,
}

#[derive(Debug, Clone)]
pub(crate) struct Table {
    pub name: String,
    /// Sorted by name; generated columns are left out.
    pub columns: Vec<Column>,
    /// Whether the table has an `updated_at` column (the fingerprint).
    pub has_updated_at: bool,
}

/// `"name"`, quoted for both engines.
pub(crate) fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

fn column_kind(table: &str, column: &str, declared: &str) -> Result<ColumnKind, StoreError> {
    let t = declared.to_ascii_lowercase();
    if t.contains("int") {
        Ok(ColumnKind::Integer)
    } else if t.contains("text") || t.contains("char") {
        Ok(ColumnKind::Text)
    } else {
        Err(StoreError::Corrupt(format!(
            "column {table}.{column} has type `{declared}`, which backups do not carry"
        )))
    }
}

/// The application's tables, sorted by name (not the migration table, not
/// SQLite's full-text index, which its triggers rebuild).
pub(crate) async fn tables(
    conn: &mut crate::engine::Conn,
    dialect: Dialect,
) -> Result<Vec<Table>, StoreError> {
    let names: Vec<String> = match dialect {
        Dialect::Sqlite => {
            let rows = crate::engine::query("SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
                .fetch_all(&mut *conn)
                .await?;
            let mut all = Vec::new();
            let mut virtual_tables = Vec::new();
            for r in &rows {
                let name: String = r.try_get("name")?;
                let sql: Option<String> = r.try_get("sql")?;
                if sql.is_some_and(|s| s.to_ascii_uppercase().starts_with("CREATE VIRTUAL TABLE")) {
                    virtual_tables.push(name);
                } else {
                    all.push(name);
                }
            }
            all.into_iter()
                .filter(|n| {
                    !virtual_tables
                        .iter()
                        .any(|v| n.starts_with(&format!("{v}_")))
                })
                .collect()
        }
        Dialect::Postgres => {
            let rows = crate::engine::query("SELECT CAST(table_name AS TEXT) AS name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY 1")
                .fetch_all(&mut *conn)
                .await?;
            rows.iter()
                .map(|r| r.try_get::<String, _>("name"))
                .collect::<Result<_, _>>()?
        }
    };
    let mut out = Vec::new();
    for name in names.into_iter().filter(|n| n != SCHEMA_TABLE) {
        let rows = match dialect {
            Dialect::Sqlite => {
                crate::engine::query("SELECT name, type FROM pragma_table_info($1)")
                    .bind(&name)
                    .fetch_all(&mut *conn)
                    .await?
            }
            Dialect::Postgres => {
                crate::engine::query("SELECT CAST(column_name AS TEXT) AS name, CAST(data_type AS TEXT) AS type FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1 AND is_generated = 'NEVER'")
                    .bind(&name)
                    .fetch_all(&mut *conn)
                    .await?
            }
        };
        let mut columns = Vec::new();
        for r in &rows {
            let column: String = r.try_get("name")?;
            let declared: String = r.try_get("type")?;
            let kind = column_kind(&name, &column, &declared)?;
            columns.push(Column { name: column, kind });
        }
        columns.sort_by(|a, b| a.name.cmp(&b.name));
        let has_updated_at = columns
            .iter()
            .any(|c| c.name == "updated_at" && c.kind == ColumnKind::Integer);
        out.push(Table {
            name,
            columns,
            has_updated_at,
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// The tables in an order foreign keys allow filling them (referenced
/// tables first; ties by name).
pub(crate) async fn fill_order(
    conn: &mut crate::engine::Conn,
    dialect: Dialect,
    tables: &[Table],
) -> Result<Vec<String>, StoreError> {
    let names: BTreeSet<String> = tables.iter().map(|t| t.name.clone()).collect();
    let mut parents: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    match dialect {
        Dialect::Sqlite => {
            for t in &names {
                let rows = crate::engine::query(
                    "SELECT \"table\" AS parent FROM pragma_foreign_key_list($1)",
                )
                .bind(t)
                .fetch_all(&mut *conn)
                .await?;
                for r in &rows {
                    let parent: String = r.try_get("parent")?;
                    parents.entry(t.clone()).or_default().insert(parent);
                }
            }
        }
        Dialect::Postgres => {
            let rows = crate::engine::query("SELECT CAST(cl.relname AS TEXT) AS child, CAST(pcl.relname AS TEXT) AS parent FROM pg_constraint c JOIN pg_class cl ON cl.oid = c.conrelid JOIN pg_class pcl ON pcl.oid = c.confrelid JOIN pg_namespace n ON n.oid = cl.relnamespace WHERE c.contype = 'f' AND n.nspname = current_schema()")
                .fetch_all(&mut *conn)
                .await?;
            for r in &rows {
                let child: String = r.try_get("child")?;
                let parent: String = r.try_get("parent")?;
                parents.entry(child).or_default().insert(parent);
            }
        }
    }
    let mut order = Vec::new();
    let mut left = names;
    while !left.is_empty() {
        let ready: Vec<String> = left
            .iter()
            .filter(|t| {
                parents
                    .get(*t)
                    .is_none_or(|ps| ps.iter().all(|p| p == *t || !left.contains(p)))
            })
            .cloned()
            .collect();
        if ready.is_empty() {
            return Err(StoreError::Corrupt(
                "foreign keys form a cycle between tables".into(),
            ));
        }
        for t in ready {
            left.remove(&t);
            order.push(t);
        }
    }
    Ok(order)
}

/// The schema migration head (highest applied version).
pub(crate) async fn migration_head(conn: &mut crate::engine::Conn) -> Result<i64, StoreError> {
    let row = crate::engine::query("SELECT MAX(version) AS head FROM _sqlx_migrations")
        .fetch_one(&mut *conn)
        .await?;
    Ok(row.try_get::<Option<i64>, _>("head")?.unwrap_or(0))
}

/// What the fingerprint is computed from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FingerprintInput {
    pub migration_head: i64,
    pub row_counts: BTreeMap<String, u64>,
    pub latest_updated_at: Option<i64>,
}

impl FingerprintInput {
    /// `sha256:<hex>` of the head, the per-table row counts and the latest
    /// `updated_at`: equal fingerprints mean a backup matches the database
    /// now, whatever its age.
    pub fn fingerprint(&self) -> String {
        let mut text = format!("head={}\n", self.migration_head);
        for (table, n) in &self.row_counts {
            text.push_str(&format!("{table}={n}\n"));
        }
        match self.latest_updated_at {
            Some(at) => text.push_str(&format!("latest_updated_at={at}\n")),
            None => text.push_str("latest_updated_at=none\n"),
        }
        format!(
            "sha256:{}",
            crate::ids::hex(&Sha256::digest(text.as_bytes()))
        )
    }
}

/// The fingerprint input of the live database, read on `conn` (inside a
/// transaction when the caller needs it to hold).
pub(crate) async fn live_fingerprint(
    conn: &mut crate::engine::Conn,
    dialect: Dialect,
) -> Result<FingerprintInput, StoreError> {
    let migration_head = migration_head(conn).await?;
    let mut row_counts = BTreeMap::new();
    let mut latest_updated_at: Option<i64> = None;
    for t in tables(conn, dialect).await? {
        let q = quoted(&t.name);
        let row = crate::engine::query(format!("SELECT COUNT(*) AS n FROM {q}"))
            .fetch_one(&mut *conn)
            .await?;
        let n: i64 = row.try_get("n")?;
        row_counts.insert(t.name.clone(), u64::try_from(n).unwrap_or_default());
        if t.has_updated_at {
            let row = crate::engine::query(format!("SELECT MAX(updated_at) AS at FROM {q}"))
                .fetch_one(&mut *conn)
                .await?;
            if let Some(at) = row.try_get::<Option<i64>, _>("at")? {
                latest_updated_at = Some(latest_updated_at.map_or(at, |l| l.max(at)));
            }
        }
    }
    Ok(FingerprintInput {
        migration_head,
        row_counts,
        latest_updated_at,
    })
}
