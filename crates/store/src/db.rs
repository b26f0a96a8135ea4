//! Connecting, migrating and the few statements that differ per engine.
//! Statements run through the storage port (`engine`): SQLite in this
//! process (rusqlite), PostgreSQL through sqlx.

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sqlx::migrate::{Migration, MigrationType, Migrator};
use sqlx::postgres::PgPoolOptions;
use sqlx::{Connection, SqlSafeStr};

pub use crate::engine::Dialect;
use crate::engine::{Lite, Pool, Tx, lite};
use crate::key_cache::KeyCache;
use crate::{SecretBox, StoreError};

const SQLITE_MIGRATIONS: &[(i64, &str, &str)] = &[
    (
        1,
        "init",
        include_str!("../migrations/sqlite/0001_init.sql"),
    ),
    (
        2,
        "sessions",
        include_str!("../migrations/sqlite/0002_sessions.sql"),
    ),
    (
        3,
        "interaction",
        include_str!("../migrations/sqlite/0003_interaction.sql"),
    ),
    (
        4,
        "memories",
        include_str!("../migrations/sqlite/0004_memories.sql"),
    ),
    (
        5,
        "goals",
        include_str!("../migrations/sqlite/0005_goals.sql"),
    ),
    (
        6,
        "loops",
        include_str!("../migrations/sqlite/0006_loops.sql"),
    ),
    (
        7,
        "subagents",
        include_str!("../migrations/sqlite/0007_subagents.sql"),
    ),
    (
        8,
        "goal_leases",
        include_str!("../migrations/sqlite/0008_goal_leases.sql"),
    ),
    (
        9,
        "workflow_sessions",
        include_str!("../migrations/sqlite/0009_workflow_sessions.sql"),
    ),
    (
        10,
        "legacy_v3",
        include_str!("../migrations/sqlite/0010_legacy_v3.sql"),
    ),
    (
        11,
        "tasks",
        include_str!("../migrations/sqlite/0011_tasks.sql"),
    ),
    (
        12,
        "instances",
        include_str!("../migrations/sqlite/0012_instances.sql"),
    ),
    (
        13,
        "active_sessions",
        include_str!("../migrations/sqlite/0013_active_sessions.sql"),
    ),
    (
        14,
        "conversation_tests",
        include_str!("../migrations/sqlite/0014_conversation_tests.sql"),
    ),
    (
        15,
        "context_summaries",
        include_str!("../migrations/sqlite/0015_context_summaries.sql"),
    ),
    (
        16,
        "model_usage",
        include_str!("../migrations/sqlite/0016_model_usage.sql"),
    ),
    (
        17,
        "workspace_quotas",
        include_str!("../migrations/sqlite/0017_workspace_quotas.sql"),
    ),
    (
        18,
        "goal_loops",
        include_str!("../migrations/sqlite/0018_goal_loops.sql"),
    ),
    (
        19,
        "test_suite_runs",
        include_str!("../migrations/sqlite/0019_test_suite_runs.sql"),
    ),
    (
        20,
        "turn_hosts",
        include_str!("../migrations/sqlite/0020_turn_hosts.sql"),
    ),
    (
        21,
        "task_messages",
        include_str!("../migrations/sqlite/0021_task_messages.sql"),
    ),
];
const POSTGRES_MIGRATIONS: &[(i64, &str, &str)] = &[
    (
        1,
        "init",
        include_str!("../migrations/postgres/0001_init.sql"),
    ),
    (
        2,
        "sessions",
        include_str!("../migrations/postgres/0002_sessions.sql"),
    ),
    (
        3,
        "interaction",
        include_str!("../migrations/postgres/0003_interaction.sql"),
    ),
    (
        4,
        "memories",
        include_str!("../migrations/postgres/0004_memories.sql"),
    ),
    (
        5,
        "goals",
        include_str!("../migrations/postgres/0005_goals.sql"),
    ),
    (
        6,
        "loops",
        include_str!("../migrations/postgres/0006_loops.sql"),
    ),
    (
        7,
        "subagents",
        include_str!("../migrations/postgres/0007_subagents.sql"),
    ),
    (
        8,
        "goal_leases",
        include_str!("../migrations/postgres/0008_goal_leases.sql"),
    ),
    (
        9,
        "workflow_sessions",
        include_str!("../migrations/postgres/0009_workflow_sessions.sql"),
    ),
    (
        10,
        "legacy_v3",
        include_str!("../migrations/postgres/0010_legacy_v3.sql"),
    ),
    (
        11,
        "tasks",
        include_str!("../migrations/postgres/0011_tasks.sql"),
    ),
    (
        12,
        "instances",
        include_str!("../migrations/postgres/0012_instances.sql"),
    ),
    (
        13,
        "active_sessions",
        include_str!("../migrations/postgres/0013_active_sessions.sql"),
    ),
    (
        14,
        "conversation_tests",
        include_str!("../migrations/postgres/0014_conversation_tests.sql"),
    ),
    (
        15,
        "context_summaries",
        include_str!("../migrations/postgres/0015_context_summaries.sql"),
    ),
    (
        16,
        "model_usage",
        include_str!("../migrations/postgres/0016_model_usage.sql"),
    ),
    (
        17,
        "workspace_quotas",
        include_str!("../migrations/postgres/0017_workspace_quotas.sql"),
    ),
    (
        18,
        "goal_loops",
        include_str!("../migrations/postgres/0018_goal_loops.sql"),
    ),
    (
        19,
        "test_suite_runs",
        include_str!("../migrations/postgres/0019_test_suite_runs.sql"),
    ),
    (
        20,
        "turn_hosts",
        include_str!("../migrations/postgres/0020_turn_hosts.sql"),
    ),
    (
        21,
        "task_messages",
        include_str!("../migrations/postgres/0021_task_messages.sql"),
    ),
];

/// The storage handle: its engine's connections, its dialect and the
/// secret box.
#[derive(Clone)]
pub struct Store {
    /// Where reads go: SQLite's read connections, or the PostgreSQL pool.
    pub(crate) pool: Pool,
    /// Where writes go: SQLite's one write connection, or the same pool.
    pub(crate) writer: Pool,
    pub(crate) dialect: Dialect,
    pub(crate) secrets: SecretBox,
    /// The PostgreSQL URL, for the notification listener.
    pub(crate) listen_url: Option<ListenUrl>,
    /// Workspace keys looked up a moment ago.
    pub(crate) keys: std::sync::Arc<KeyCache>,
}

/// How long a looked-up workspace key is trusted without reading it
/// again: on SQLite only this process changes keys (and clears the cache
/// when it does); on PostgreSQL another instance may rotate one.
const KEY_TTL_SQLITE: Duration = Duration::from_secs(30);
const KEY_TTL_POSTGRES: Duration = Duration::from_secs(1);

/// A database URL kept for a second connection; `Debug` hides it (it may
/// hold a password).
#[derive(Clone)]
pub(crate) struct ListenUrl(pub(crate) std::sync::Arc<str>);

impl std::fmt::Debug for ListenUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ListenUrl([redacted])")
    }
}

/// How long a PostgreSQL connection may sit idle before an acquire checks
/// that the server still holds it.
const PING_AFTER_IDLE: Duration = Duration::from_secs(10);

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("dialect", &self.dialect)
            .finish_non_exhaustive()
    }
}

impl Store {
    /// Connect to `sqlite://PATH` (created if missing, WAL) or `postgres://…`.
    pub async fn connect(url: &str, secrets: SecretBox) -> Result<Self, StoreError> {
        let (dialect, url) = normalize_url(url)?;
        let (pool, writer) = match dialect {
            Dialect::Sqlite => {
                let (path, create) = sqlite_path(&url);
                if create {
                    create_private(path);
                }
                let db = Lite::open(path, create)?;
                (
                    Pool::Lite {
                        db: db.clone(),
                        write: false,
                    },
                    Pool::Lite { db, write: true },
                )
            }
            Dialect::Postgres => {
                // A connection used a moment ago is live: only one idle a
                // while pays a ping (a network round trip) before use.
                let pool = PgPoolOptions::new()
                    .max_connections(16)
                    .acquire_timeout(Duration::from_secs(30))
                    .test_before_acquire(false)
                    .before_acquire(|conn, meta| {
                        Box::pin(async move {
                            if meta.idle_for >= PING_AFTER_IDLE {
                                conn.ping().await?;
                            }
                            Ok(true)
                        })
                    })
                    .connect(&url)
                    .await?;
                (Pool::Pg(pool.clone()), Pool::Pg(pool))
            }
        };
        Ok(Self {
            pool,
            writer,
            listen_url: (dialect == Dialect::Postgres).then(|| ListenUrl(url.as_str().into())),
            keys: Arc::new(KeyCache::new(match dialect {
                Dialect::Sqlite => KEY_TTL_SQLITE,
                Dialect::Postgres => KEY_TTL_POSTGRES,
            })),
            dialect,
            secrets,
        })
    }

    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// Apply the pending migrations of this engine.
    pub async fn migrate(&self) -> Result<(), StoreError> {
        match &self.writer {
            Pool::Lite { db, .. } => lite::migrate(db, SQLITE_MIGRATIONS).await,
            Pool::Pg(pool) => {
                let migrations = POSTGRES_MIGRATIONS
                    .iter()
                    .map(|(v, name, sql)| {
                        Migration::new(
                            *v,
                            (*name).into(),
                            MigrationType::Simple,
                            sql.into_sql_str(),
                            false,
                        )
                    })
                    .collect();
                Migrator::with_migrations(migrations).run(pool).await?;
                Ok(())
            }
        }
    }

    /// The highest schema migration applied (0 on an empty database) and
    /// the highest this binary knows; neither changes anything.
    pub async fn schema_versions(&self) -> Result<(i64, i64), StoreError> {
        let known = match self.dialect {
            Dialect::Sqlite => SQLITE_MIGRATIONS,
            Dialect::Postgres => POSTGRES_MIGRATIONS,
        };
        let latest = known.iter().map(|(v, _, _)| *v).max().unwrap_or(0);
        let mut conn = self.pool.acquire().await?;
        // No migrations table yet: nothing was applied.
        let applied = crate::catalog::migration_head(&mut conn).await.unwrap_or(0);
        Ok((applied, latest))
    }

    /// Whether the database answers.
    pub async fn ping(&self) -> Result<(), StoreError> {
        crate::engine::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }

    /// Close the pool (waits for connections to be returned).
    pub async fn close(&self) {
        self.pool.close().await;
        self.writer.close().await;
    }

    pub(crate) async fn begin_write(&self) -> Result<Tx, StoreError> {
        self.writer.begin_with(self.dialect.begin_write()).await
    }
}

/// The file of a normalized `sqlite://PATH?…` URL, and whether it may be
/// created (`mode=rwc`).
fn sqlite_path(url: &str) -> (&str, bool) {
    let rest = url.strip_prefix("sqlite://").unwrap_or(url);
    let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
    (path, query.split('&').any(|p| p == "mode=rwc"))
}

/// Create the database file readable by its owner only (0600) when it
/// does not exist yet: it holds workspace key hashes, secrets (sealed) and
/// conversations. SQLite gives its `-wal` and `-shm` files the same mode.
/// An existing file that others may read is made private, with a warning.
/// Anything that fails here is left for the connection to report.
fn create_private(path: &str) {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        if let Ok(meta) = std::fs::metadata(path)
            && meta.permissions().mode() & 0o077 != 0
        {
            tracing::warn!(
                path,
                "the database file was readable by others; it is now readable by its owner only"
            );
            for file in [
                path.to_owned(),
                format!("{path}-wal"),
                format!("{path}-shm"),
            ] {
                let _ = std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600));
            }
        }
    }
    let _ = options.open(path);
}

/// The engine of a URL, and the URL as sqlx wants it (`mode=rwc` for SQLite
/// so the file is created).
fn normalize_url(url: &str) -> Result<(Dialect, String), StoreError> {
    if let Some(rest) = url.strip_prefix("sqlite:") {
        let rest = rest.trim_start_matches("//");
        if rest.is_empty() || rest.starts_with(":memory:") {
            return Err(StoreError::UnsupportedUrl(format!(
                "{url} (in-memory databases are per-connection; use a file)"
            )));
        }
        let sep = if rest.contains('?') { '&' } else { '?' };
        let mode = if rest.contains("mode=") {
            String::new()
        } else {
            format!("{sep}mode=rwc")
        };
        Ok((Dialect::Sqlite, format!("sqlite://{rest}{mode}")))
    } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        Ok((Dialect::Postgres, url.to_owned()))
    } else {
        Err(StoreError::UnsupportedUrl(redact_url(url)))
    }
}

/// A URL without its password, for messages.
pub fn redact_url(url: &str) -> String {
    match url::Url::from_str(url) {
        Ok(mut u) if u.password().is_some() => {
            let _ = u.set_password(Some("***"));
            u.to_string()
        }
        _ => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        assert_eq!(
            normalize_url("sqlite://rtc-agent.db").unwrap(),
            (Dialect::Sqlite, "sqlite://rtc-agent.db?mode=rwc".into())
        );
        assert_eq!(
            normalize_url("sqlite:///tmp/x.db?mode=ro").unwrap().1,
            "sqlite:///tmp/x.db?mode=ro"
        );
        assert_eq!(
            normalize_url("postgres://u@h/db").unwrap().0,
            Dialect::Postgres
        );
        assert!(normalize_url("sqlite::memory:").is_err());
        let err = normalize_url("mysql://u:pw@h/db").unwrap_err().to_string();
        assert!(!err.contains("pw"), "{err}");
    }

    /// Open the SQLite database at `path`, migrate it and close it.
    async fn open_and_close(path: &std::path::Path) {
        let url = format!("sqlite://{}", path.display());
        let store = Store::connect(&url, SecretBox::new(&crate::MasterKey::generate()))
            .await
            .unwrap();
        store.migrate().await.unwrap();
        store.close().await;
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn a_new_sqlite_database_is_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rtc.db");
        open_and_close(&path).await;
        for file in ["rtc.db", "rtc.db-wal"] {
            let path = dir.path().join(file);
            if let Ok(meta) = std::fs::metadata(&path) {
                assert_eq!(meta.permissions().mode() & 0o777, 0o600, "{file}");
            }
        }
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    /// A database file others could read (made by an older version, or
    /// by hand) is made private when the server opens it.
    #[cfg(unix)]
    #[tokio::test]
    async fn an_existing_readable_sqlite_database_is_made_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rtc.db");
        std::fs::write(&path, b"").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        open_and_close(&path).await;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
