//! The storage port: one query API over the two engines, so every store
//! module is written once. [`query`] builds a statement (SQL with `$1`,
//! `$2`… placeholders, valid on both), `bind` adds its arguments, and
//! `execute` / `fetch_*` run it on a [`Pool`], a [`Conn`] or a [`Tx`]
//! (which derefs to its connection). Rows come back engine-neutral
//! ([`Row`], read with `try_get` by name or position).
//!
//! One module per engine:
//! - [`lite`]: SQLite through rusqlite (bundled), in this process's
//!   threads: a statement runs on the task that asks for it — reads on one
//!   of a few read connections, writes on the one write connection behind
//!   an async lock (writers queue there, never in SQLite's busy handler) —
//!   with its prepared statement cached per connection. No statement is
//!   handed to another thread and back.
//! - [`pg`]: PostgreSQL through sqlx's pool.
//!
//! What differs per engine beyond that is asked of [`Dialect`] (the
//! write transaction's opening statement, whether other instances share
//! the database, row locks).

pub(crate) mod lite;
pub(crate) mod pg;

use std::borrow::Cow;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use crate::StoreError;

pub(crate) use lite::Lite;

/// The database engine behind a store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Postgres,
}

impl Dialect {
    /// The statement that opens a write transaction. SQLite takes the write
    /// lock up front so a read-then-write transaction never fails with
    /// `SQLITE_BUSY` halfway.
    pub(crate) fn begin_write(self) -> &'static str {
        match self {
            Self::Sqlite => "BEGIN IMMEDIATE",
            Self::Postgres => "BEGIN",
        }
    }

    /// Whether other instances may share the database (PostgreSQL, with
    /// its notifications and row locks); an SQLite file has one writer
    /// process.
    pub fn is_shared(self) -> bool {
        self == Self::Postgres
    }

    /// The statement that makes a count-then-insert under a key one step
    /// inside a write transaction: none on SQLite (its write transaction
    /// is exclusive), an advisory lock on the key's hash on PostgreSQL.
    pub(crate) fn key_lock(self) -> Option<&'static str> {
        match self {
            Self::Sqlite => None,
            Self::Postgres => Some("SELECT pg_advisory_xact_lock(hashtext($1)::bigint)"),
        }
    }

    /// What a claiming `SELECT` adds so that rows another instance is
    /// claiming are skipped, not waited for (nothing on SQLite).
    pub(crate) fn skip_locked(self) -> &'static str {
        match self {
            Self::Sqlite => "",
            Self::Postgres => " FOR UPDATE SKIP LOCKED",
        }
    }

    /// What a `SELECT` adds to lock the rows it reads for the rest of the
    /// write transaction (nothing on SQLite).
    pub(crate) fn lock_rows(self) -> &'static str {
        match self {
            Self::Sqlite => "",
            Self::Postgres => " FOR UPDATE",
        }
    }

    /// The statement that opens a read transaction seeing one snapshot
    /// of the whole database.
    pub(crate) fn begin_snapshot(self) -> &'static str {
        match self {
            Self::Sqlite => "BEGIN",
            Self::Postgres => "BEGIN ISOLATION LEVEL REPEATABLE READ",
        }
    }
}

/// Where statements run: a set of connections of one engine, for reads
/// or for writes (on SQLite, the one write connection; on PostgreSQL both
/// are the same pool).
#[derive(Clone)]
pub(crate) enum Pool {
    Lite { db: Arc<Lite>, write: bool },
    Pg(sqlx::PgPool),
}

impl Pool {
    /// A connection held until dropped (across awaits).
    pub(crate) async fn acquire(&self) -> Result<Conn, StoreError> {
        Ok(match self {
            Self::Lite { db, write: true } => Conn::Lite(db.write().await),
            Self::Lite { db, write: false } => Conn::Lite(db.read()?),
            Self::Pg(pool) => Conn::Pg(pool.acquire().await?),
        })
    }

    /// A transaction opened with `begin` (`BEGIN`, `BEGIN IMMEDIATE`, an
    /// isolation level); rolled back unless committed.
    pub(crate) async fn begin_with(&self, begin: &str) -> Result<Tx, StoreError> {
        let conn = match self {
            Self::Pg(pool) => {
                let tx = pool
                    .begin_with(sqlx::AssertSqlSafe(begin.to_owned()))
                    .await?;
                Conn::PgTx(tx)
            }
            Self::Lite { .. } => {
                let mut conn = self.acquire().await?;
                query(begin.to_owned()).execute(&mut conn).await?;
                conn
            }
        };
        Ok(Tx { conn, open: true })
    }

    /// Close the pool (PostgreSQL waits for its connections; SQLite's are
    /// closed as they are dropped).
    pub(crate) async fn close(&self) {
        if let Self::Pg(pool) = self {
            pool.close().await;
        }
    }
}

/// One connection, held.
pub(crate) enum Conn {
    Lite(lite::LiteConn),
    Pg(sqlx::pool::PoolConnection<sqlx::Postgres>),
    PgTx(sqlx::Transaction<'static, sqlx::Postgres>),
}

/// A transaction: its connection (deref), then [`Tx::commit`]; dropped
/// without it, it is rolled back.
pub(crate) struct Tx {
    conn: Conn,
    open: bool,
}

impl Tx {
    /// Undo what the transaction did.
    pub(crate) async fn rollback(self) -> Result<(), StoreError> {
        self.end(false).await
    }

    pub(crate) async fn commit(self) -> Result<(), StoreError> {
        self.end(true).await
    }

    /// Commit or roll back; an SQLite commit that fails is rolled back, so
    /// its connection never stays inside the transaction.
    async fn end(mut self, commit: bool) -> Result<(), StoreError> {
        self.open = false;
        match std::mem::replace(&mut self.conn, Conn::Lite(lite::LiteConn::Closed)) {
            Conn::PgTx(tx) if commit => Ok(tx.commit().await?),
            Conn::PgTx(tx) => Ok(tx.rollback().await?),
            Conn::Lite(conn) if commit => conn.run_batch("COMMIT").inspect_err(|_| {
                let _ = conn.run_batch("ROLLBACK");
            }),
            Conn::Lite(conn) => conn.run_batch("ROLLBACK"),
            Conn::Pg(_) => Ok(()),
        }
    }
}

impl Drop for Tx {
    fn drop(&mut self) {
        // PostgreSQL's transaction rolls itself back when dropped; an
        // SQLite one is rolled back here, on its connection, at once.
        if self.open
            && let Conn::Lite(conn) = &self.conn
            && let Err(e) = conn.run_batch("ROLLBACK")
        {
            tracing::warn!(error = %e, "rolling back an SQLite transaction failed");
        }
    }
}

impl Deref for Tx {
    type Target = Conn;

    fn deref(&self) -> &Conn {
        &self.conn
    }
}

impl DerefMut for Tx {
    fn deref_mut(&mut self) -> &mut Conn {
        &mut self.conn
    }
}

/// What a statement can run on.
pub(crate) enum Target<'c> {
    Pool(&'c Pool),
    Conn(&'c mut Conn),
}

/// A pool or a held connection.
pub(crate) trait Exec<'c>: Send {
    fn target(self) -> Target<'c>;
}

impl<'c> Exec<'c> for &'c Pool {
    fn target(self) -> Target<'c> {
        Target::Pool(self)
    }
}

impl<'c> Exec<'c> for &'c mut Conn {
    fn target(self) -> Target<'c> {
        Target::Conn(self)
    }
}

/// A value bound to a placeholder. A null carries the type it stands
/// for (PostgreSQL types its parameters).
#[derive(Debug, Clone)]
pub(crate) enum Arg<'q> {
    Int(i64),
    Real(f64),
    Text(Cow<'q, str>),
    Blob(Cow<'q, [u8]>),
    Null(Kind),
}

/// The type of a bound null.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Kind {
    Int,
    Real,
    Text,
    Blob,
}

/// Values that can be bound.
pub(crate) trait Bind<'q> {
    fn arg(self) -> Arg<'q>;
    /// The type of a null of this kind.
    fn kind() -> Kind;
}

macro_rules! bind_int {
    ($($t:ty),*) => {$(
        impl<'q> Bind<'q> for $t {
            fn arg(self) -> Arg<'q> {
                Arg::Int(i64::from(self))
            }
            fn kind() -> Kind {
                Kind::Int
            }
        }
    )*};
}
bind_int!(i64, i32, u32, i16, u8);

impl<'q> Bind<'q> for f64 {
    fn arg(self) -> Arg<'q> {
        Arg::Real(self)
    }
    fn kind() -> Kind {
        Kind::Real
    }
}

impl<'q> Bind<'q> for &'q str {
    fn arg(self) -> Arg<'q> {
        Arg::Text(Cow::Borrowed(self))
    }
    fn kind() -> Kind {
        Kind::Text
    }
}

impl<'q> Bind<'q> for &'q String {
    fn arg(self) -> Arg<'q> {
        Arg::Text(Cow::Borrowed(self.as_str()))
    }
    fn kind() -> Kind {
        Kind::Text
    }
}

impl<'q> Bind<'q> for String {
    fn arg(self) -> Arg<'q> {
        Arg::Text(Cow::Owned(self))
    }
    fn kind() -> Kind {
        Kind::Text
    }
}

impl<'q> Bind<'q> for &'q [u8] {
    fn arg(self) -> Arg<'q> {
        Arg::Blob(Cow::Borrowed(self))
    }
    fn kind() -> Kind {
        Kind::Blob
    }
}

impl<'q> Bind<'q> for Vec<u8> {
    fn arg(self) -> Arg<'q> {
        Arg::Blob(Cow::Owned(self))
    }
    fn kind() -> Kind {
        Kind::Blob
    }
}

impl<'q, T: Bind<'q>> Bind<'q> for Option<T> {
    fn arg(self) -> Arg<'q> {
        match self {
            Some(v) => v.arg(),
            None => Arg::Null(T::kind()),
        }
    }
    fn kind() -> Kind {
        T::kind()
    }
}

impl<'q> Bind<'q> for &'q Option<String> {
    fn arg(self) -> Arg<'q> {
        self.as_deref().arg()
    }
    fn kind() -> Kind {
        Kind::Text
    }
}

/// A statement and its arguments.
pub(crate) struct Query<'q> {
    sql: Cow<'q, str>,
    args: Vec<Arg<'q>>,
}

/// A statement with `$1`, `$2`… placeholders.
pub(crate) fn query<'q>(sql: impl Into<Cow<'q, str>>) -> Query<'q> {
    Query {
        sql: sql.into(),
        args: Vec::new(),
    }
}

/// What a statement that returns no rows did.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Done {
    rows: u64,
}

impl Done {
    pub(crate) fn rows_affected(&self) -> u64 {
        self.rows
    }
}

impl<'q> Query<'q> {
    /// Bind the next placeholder.
    pub(crate) fn bind<T: Bind<'q>>(mut self, value: T) -> Self {
        self.args.push(value.arg());
        self
    }

    pub(crate) async fn execute<'c>(self, on: impl Exec<'c>) -> Result<Done, StoreError> {
        match on.target() {
            Target::Pool(Pool::Lite { db, write }) => {
                db.with(*write, |db, c| lite::execute(db, c, &self.sql, &self.args))
                    .await
            }
            Target::Pool(Pool::Pg(pool)) => pg::execute(pool, self.sql, self.args).await,
            Target::Conn(conn) => match conn {
                Conn::Lite(c) => c.with(|db, c| lite::execute(db, c, &self.sql, &self.args)),
                Conn::Pg(c) => pg::execute(&mut **c, self.sql, self.args).await,
                Conn::PgTx(t) => pg::execute(&mut **t, self.sql, self.args).await,
            },
        }
    }

    pub(crate) async fn fetch_all<'c>(self, on: impl Exec<'c>) -> Result<Vec<Row>, StoreError> {
        self.fetch(on, None).await
    }

    pub(crate) async fn fetch_optional<'c>(
        self,
        on: impl Exec<'c>,
    ) -> Result<Option<Row>, StoreError> {
        Ok(self.fetch(on, Some(1)).await?.pop())
    }

    pub(crate) async fn fetch_one<'c>(self, on: impl Exec<'c>) -> Result<Row, StoreError> {
        self.fetch_optional(on).await?.ok_or(StoreError::NoRow)
    }

    async fn fetch<'c>(
        self,
        on: impl Exec<'c>,
        limit: Option<usize>,
    ) -> Result<Vec<Row>, StoreError> {
        match on.target() {
            Target::Pool(Pool::Lite { db, write }) => {
                db.with(*write, |db, c| {
                    lite::fetch(db, c, &self.sql, &self.args, limit)
                })
                .await
            }
            Target::Pool(Pool::Pg(pool)) => pg::fetch(pool, self.sql, self.args, limit).await,
            Target::Conn(conn) => match conn {
                Conn::Lite(c) => c.with(|db, c| lite::fetch(db, c, &self.sql, &self.args, limit)),
                Conn::Pg(c) => pg::fetch(&mut **c, self.sql, self.args, limit).await,
                Conn::PgTx(t) => pg::fetch(&mut **t, self.sql, self.args, limit).await,
            },
        }
    }
}

/// A value read from a row.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Val {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
    Blob(Vec<u8>),
}

/// A row read from either engine.
#[derive(Debug, Clone)]
pub(crate) struct Row {
    columns: Arc<[Box<str>]>,
    values: Vec<Val>,
}

impl Row {
    pub(crate) fn new(columns: Arc<[Box<str>]>, values: Vec<Val>) -> Self {
        Self { columns, values }
    }

    /// The value at `index` (a column name, or a position) as `T`.
    pub(crate) fn try_get<T: FromVal, I: ColumnIndex>(&self, index: I) -> Result<T, StoreError> {
        let at = index.position(&self.columns)?;
        T::from_val(&self.values[at]).ok_or_else(|| {
            StoreError::Decode(format!(
                "column `{}` holds {:?}, not a {}",
                self.columns[at],
                self.values[at].kind(),
                std::any::type_name::<T>()
            ))
        })
    }
}

impl Val {
    fn kind(&self) -> &'static str {
        match self {
            Self::Null => "null",
            Self::Int(_) => "an integer",
            Self::Real(_) => "a real",
            Self::Text(_) => "text",
            Self::Blob(_) => "bytes",
        }
    }
}

/// A column by name or by position.
pub(crate) trait ColumnIndex {
    fn position(&self, columns: &[Box<str>]) -> Result<usize, StoreError>;
}

impl ColumnIndex for &str {
    fn position(&self, columns: &[Box<str>]) -> Result<usize, StoreError> {
        columns
            .iter()
            .position(|c| c.eq_ignore_ascii_case(self))
            .ok_or_else(|| StoreError::Decode(format!("no column `{self}`")))
    }
}

impl ColumnIndex for usize {
    fn position(&self, columns: &[Box<str>]) -> Result<usize, StoreError> {
        (*self < columns.len())
            .then_some(*self)
            .ok_or_else(|| StoreError::Decode(format!("no column {self}")))
    }
}

/// Types a column can be read as.
pub(crate) trait FromVal: Sized {
    fn from_val(v: &Val) -> Option<Self>;
}

impl FromVal for i64 {
    fn from_val(v: &Val) -> Option<Self> {
        match v {
            Val::Int(i) => Some(*i),
            _ => None,
        }
    }
}

impl FromVal for i32 {
    fn from_val(v: &Val) -> Option<Self> {
        i64::from_val(v).and_then(|i| i32::try_from(i).ok())
    }
}

impl FromVal for f64 {
    fn from_val(v: &Val) -> Option<Self> {
        match v {
            Val::Real(r) => Some(*r),
            #[allow(clippy::cast_precision_loss)]
            Val::Int(i) => Some(*i as f64),
            _ => None,
        }
    }
}

impl FromVal for bool {
    fn from_val(v: &Val) -> Option<Self> {
        i64::from_val(v).map(|i| i != 0)
    }
}

impl FromVal for String {
    fn from_val(v: &Val) -> Option<Self> {
        match v {
            Val::Text(s) => Some(s.clone()),
            _ => None,
        }
    }
}

impl FromVal for Vec<u8> {
    fn from_val(v: &Val) -> Option<Self> {
        match v {
            Val::Blob(b) => Some(b.clone()),
            Val::Text(s) => Some(s.as_bytes().to_vec()),
            _ => None,
        }
    }
}

impl<T: FromVal> FromVal for Option<T> {
    fn from_val(v: &Val) -> Option<Self> {
        match v {
            Val::Null => Some(None),
            v => T::from_val(v).map(Some),
        }
    }
}
