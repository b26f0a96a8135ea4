//! Throwaway databases: a SQLite file in a temporary folder, or a fresh
//! database on the test PostgreSQL cluster.

use anyhow::{Context, bail};
use sqlx::Connection;

/// Which engine a test runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    Sqlite,
    Postgres,
}

/// A database that lives as long as the test.
pub struct TestDatabase {
    pub url: String,
    pub engine: Engine,
    _dir: Option<tempfile::TempDir>,
}

impl TestDatabase {
    pub async fn new(engine: Engine) -> anyhow::Result<Option<Self>> {
        match engine {
            Engine::Sqlite => Self::sqlite().map(Some),
            Engine::Postgres => Self::postgres().await,
        }
    }

    pub fn sqlite() -> anyhow::Result<Self> {
        let dir = tempfile::tempdir()?;
        let url = format!("sqlite://{}", dir.path().join("rtc-agent.db").display());
        Ok(Self {
            url,
            engine: Engine::Sqlite,
            _dir: Some(dir),
        })
    }

    /// A fresh database, or `None` when PostgreSQL tests are explicitly skipped.
    pub async fn postgres() -> anyhow::Result<Option<Self>> {
        let Ok(admin_url) = std::env::var("RTC_TEST_POSTGRES_URL") else {
            if std::env::var("RTC_TEST_SKIP_POSTGRES").as_deref() == Ok("1") {
                return Ok(None);
            }
            bail!(
                "RTC_TEST_POSTGRES_URL is not set: run the suite with scripts/test (it starts a throwaway PostgreSQL), or set RTC_TEST_SKIP_POSTGRES=1 to skip PostgreSQL tests"
            );
        };
        let mut suffix = [0u8; 8];
        rand::fill(&mut suffix[..]);
        let name = format!(
            "rtc_test_{}",
            suffix
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        );
        let mut conn = sqlx::PgConnection::connect(&admin_url)
            .await
            .context("connecting to RTC_TEST_POSTGRES_URL")?;
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(&mut conn)
            .await?;
        conn.close().await?;
        let mut url = url::Url::parse(&admin_url)?;
        url.set_path(&format!("/{name}"));
        Ok(Some(Self {
            url: url.to_string(),
            engine: Engine::Postgres,
            _dir: None,
        }))
    }

    /// The bytes the database takes on disk: the SQLite file with its
    /// journal files, or PostgreSQL's `pg_database_size`.
    pub async fn size_bytes(&self) -> anyhow::Result<u64> {
        match self.engine {
            Engine::Sqlite => {
                let path = self.url.trim_start_matches("sqlite://");
                Ok(["", "-wal", "-shm"]
                    .iter()
                    .filter_map(|suffix| std::fs::metadata(format!("{path}{suffix}")).ok())
                    .map(|m| m.len())
                    .sum())
            }
            Engine::Postgres => {
                let mut conn = sqlx::PgConnection::connect(&self.url).await?;
                let size: i64 = sqlx::query_scalar("SELECT pg_database_size(current_database())")
                    .fetch_one(&mut conn)
                    .await?;
                conn.close().await?;
                Ok(u64::try_from(size).unwrap_or(0))
            }
        }
    }
}
