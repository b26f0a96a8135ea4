//! The SQLite engine: rusqlite (bundled SQLite) in this process's own
//! threads. One write connection behind an async lock runs every write on
//! the task that holds the lock (the journal's group commit is one
//! transaction under one lock); a few read connections, taken from a
//! small free list, run reads on the asking task. A statement is never
//! handed to a worker thread and back; each connection caches its
//! prepared statements. WAL, `synchronous = NORMAL` (a commit survives
//! the process being killed), foreign keys on, a 10 s busy timeout for
//! other processes.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};
use tokio::sync::{Mutex as AsyncMutex, OwnedMutexGuard};

use super::{Arg, Done, Row, Val};
use crate::StoreError;

/// Read connections kept open when idle.
const IDLE_READERS: usize = 8;
/// Prepared statements cached per connection.
const STATEMENT_CACHE: usize = 256;

/// An SQLite database file.
pub(crate) struct Lite {
    path: String,
    flags: OpenFlags,
    write: Arc<AsyncMutex<Connection>>,
    readers: Mutex<Vec<Connection>>,
    /// `$n` placeholders rewritten as SQLite's `?n`, per statement text.
    translated: Mutex<HashMap<String, Arc<str>>>,
}

impl Lite {
    /// Open `path` (created when `create`), in WAL mode.
    pub(crate) fn open(path: &str, create: bool) -> Result<Arc<Self>, StoreError> {
        let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI;
        if create {
            flags |= OpenFlags::SQLITE_OPEN_CREATE;
        }
        let write = connect(path, flags)?;
        write.pragma_update(None, "journal_mode", "WAL")?;
        Ok(Arc::new(Self {
            path: path.to_owned(),
            flags: flags & !OpenFlags::SQLITE_OPEN_CREATE,
            write: Arc::new(AsyncMutex::new(write)),
            readers: Mutex::new(Vec::new()),
            translated: Mutex::default(),
        }))
    }

    /// The write connection, once no other task holds it.
    pub(crate) async fn write(self: &Arc<Self>) -> LiteConn {
        LiteConn::Write(self.clone(), self.write.clone().lock_owned().await)
    }

    /// A read connection (opened when none is free).
    pub(crate) fn read(self: &Arc<Self>) -> Result<LiteConn, StoreError> {
        let conn = match self.readers.lock().pop() {
            Some(c) => c,
            None => connect(&self.path, self.flags)?,
        };
        Ok(LiteConn::Read(self.clone(), Some(conn)))
    }

    /// Run `f` on a connection for one statement: the write connection
    /// (waiting for it), or a read connection.
    pub(crate) async fn with<T>(
        self: &Arc<Self>,
        write: bool,
        f: impl FnOnce(&Lite, &Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        if write {
            let conn = self.write.lock().await;
            f(self, &conn)
        } else {
            let conn = self.read()?;
            conn.with(f)
        }
    }

    /// `sql` with its `$n` placeholders as `?n` (remembered per text).
    fn translate(&self, sql: &str) -> Arc<str> {
        if let Some(t) = self.translated.lock().get(sql) {
            return t.clone();
        }
        let t: Arc<str> = numbered(sql).into();
        let mut map = self.translated.lock();
        // Statement texts are the store's own, a bounded set; texts built
        // per call (backups, bulk inserts) are many: keep the map small.
        if map.len() > 4_096 {
            map.clear();
        }
        map.insert(sql.to_owned(), t.clone());
        t
    }
}

fn connect(path: &str, flags: OpenFlags) -> Result<Connection, StoreError> {
    let conn = Connection::open_with_flags(path, flags)?;
    conn.busy_timeout(Duration::from_secs(10))?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    Ok(conn)
}

/// A held SQLite connection.
pub(crate) enum LiteConn {
    Write(Arc<Lite>, OwnedMutexGuard<Connection>),
    /// Given back to the free list when dropped.
    Read(Arc<Lite>, Option<Connection>),
    /// A committed transaction's connection, already given back.
    Closed,
}

impl LiteConn {
    pub(crate) fn with<T>(
        &self,
        f: impl FnOnce(&Lite, &Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        match self {
            Self::Write(db, conn) => f(db, conn),
            Self::Read(db, Some(conn)) => f(db, conn),
            Self::Read(_, None) | Self::Closed => Err(StoreError::Decode(
                "a statement on a closed connection".into(),
            )),
        }
    }

    /// Run statements without arguments (`COMMIT`, `ROLLBACK`).
    pub(crate) fn run_batch(&self, sql: &str) -> Result<(), StoreError> {
        self.with(|_, c| Ok(c.execute_batch(sql)?))
    }
}

impl Drop for LiteConn {
    fn drop(&mut self) {
        if let Self::Read(db, conn) = self
            && let Some(conn) = conn.take()
        {
            let mut free = db.readers.lock();
            if free.len() < IDLE_READERS && conn.is_autocommit() {
                free.push(conn);
            }
        }
    }
}

/// Run one statement to its end: how many rows it changed.
pub(crate) fn execute(
    db: &Lite,
    conn: &Connection,
    sql: &str,
    args: &[Arg<'_>],
) -> Result<Done, StoreError> {
    let sql = db.translate(sql);
    let mut stmt = conn.prepare_cached(&sql)?;
    bind(&mut stmt, args)?;
    let mut rows = stmt.raw_query();
    while rows.next()?.is_some() {}
    drop(rows);
    Ok(Done {
        rows: conn.changes(),
    })
}

/// Run one statement and read its rows (at most `limit`).
pub(crate) fn fetch(
    db: &Lite,
    conn: &Connection,
    sql: &str,
    args: &[Arg<'_>],
    limit: Option<usize>,
) -> Result<Vec<Row>, StoreError> {
    let sql = db.translate(sql);
    let mut stmt = conn.prepare_cached(&sql)?;
    bind(&mut stmt, args)?;
    let columns: Arc<[Box<str>]> = stmt.column_names().into_iter().map(Box::from).collect();
    let width = columns.len();
    let mut out = Vec::new();
    let mut rows = stmt.raw_query();
    while let Some(row) = rows.next()? {
        let mut values = Vec::with_capacity(width);
        for i in 0..width {
            values.push(match row.get_ref(i)? {
                ValueRef::Null => Val::Null,
                ValueRef::Integer(v) => Val::Int(v),
                ValueRef::Real(v) => Val::Real(v),
                ValueRef::Text(t) => Val::Text(String::from_utf8_lossy(t).into_owned()),
                ValueRef::Blob(b) => Val::Blob(b.to_vec()),
            });
        }
        out.push(Row::new(columns.clone(), values));
        if limit.is_some_and(|l| out.len() >= l) {
            break;
        }
    }
    Ok(out)
}

fn bind(stmt: &mut rusqlite::CachedStatement<'_>, args: &[Arg<'_>]) -> Result<(), StoreError> {
    use rusqlite::types::Null;
    let expected = stmt.parameter_count();
    if expected != args.len() {
        return Err(StoreError::Decode(format!(
            "the statement has {expected} parameters and {} were bound",
            args.len()
        )));
    }
    for (i, arg) in args.iter().enumerate() {
        let at = i + 1;
        match arg {
            Arg::Int(v) => stmt.raw_bind_parameter(at, v)?,
            Arg::Real(v) => stmt.raw_bind_parameter(at, v)?,
            Arg::Text(v) => stmt.raw_bind_parameter(at, v.as_ref())?,
            Arg::Blob(v) => stmt.raw_bind_parameter(at, v.as_ref())?,
            Arg::Null(_) => stmt.raw_bind_parameter(at, Null)?,
        }
    }
    Ok(())
}

/// `$n` placeholders as `?n` (SQLite reads `$name` as a named parameter
/// numbered by first appearance, which `$2 … $1` would misnumber); text
/// in quotes is left as it is.
fn numbered(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut quote: Option<char> = None;
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        match quote {
            Some(q) => {
                if c == q {
                    quote = None;
                }
                out.push(c);
            }
            None if c == '\'' || c == '"' => {
                quote = Some(c);
                out.push(c);
            }
            None if c == '$' && chars.peek().is_some_and(char::is_ascii_digit) => out.push('?'),
            None => out.push(c),
        }
    }
    out
}

/// Apply `migrations` not yet recorded in `_sqlx_migrations` (the table
/// sqlx's migrator kept, so databases it migrated go on from where they
/// are), each in its own transaction.
pub(crate) async fn migrate(
    db: &Arc<Lite>,
    migrations: &[(i64, &str, &str)],
) -> Result<(), StoreError> {
    use sha2::{Digest, Sha384};
    let conn = db.write.lock().await;
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS _sqlx_migrations (
            version BIGINT PRIMARY KEY,
            description TEXT NOT NULL,
            installed_on TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
            success BOOLEAN NOT NULL,
            checksum BLOB NOT NULL,
            execution_time BIGINT NOT NULL
        );",
    )?;
    let applied: Vec<(i64, bool)> = {
        let mut stmt = conn.prepare("SELECT version, success FROM _sqlx_migrations")?;
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<_, _>>()?
    };
    if let Some((v, _)) = applied.iter().find(|(_, ok)| !ok) {
        return Err(StoreError::MigrationDirty(*v));
    }
    for (version, name, sql) in migrations {
        if applied.iter().any(|(v, _)| v == version) {
            continue;
        }
        let started = std::time::Instant::now();
        conn.execute_batch("BEGIN IMMEDIATE")?;
        let applied = conn.execute_batch(sql).and_then(|()| {
            conn.execute(
                "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) VALUES (?1, ?2, 1, ?3, ?4)",
                rusqlite::params![
                    version,
                    name,
                    Sha384::digest(sql.as_bytes()).to_vec(),
                    i64::try_from(started.elapsed().as_nanos()).unwrap_or(i64::MAX)
                ],
            )
        });
        match applied {
            Ok(_) => conn.execute_batch("COMMIT")?,
            Err(e) => {
                let _ = conn.execute_batch("ROLLBACK");
                return Err(StoreError::MigrationFailed(*version, e.to_string()));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_numbered_outside_quotes() {
        assert_eq!(
            numbered("UPDATE t SET a = $2, b = '$1' WHERE id = $1 AND x = \"$3\""),
            "UPDATE t SET a = ?2, b = '$1' WHERE id = ?1 AND x = \"$3\""
        );
    }
}
