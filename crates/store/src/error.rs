//! Errors of the storage layer.

use crate::Reference;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// A value read back is not what the statement expected.
    #[error("database error: {0}")]
    Decode(String),
    /// A statement that must return a row returned none.
    #[error("database error: no row was returned")]
    NoRow,
    /// A migration that failed earlier left the database half-migrated.
    #[error("migration {0} failed earlier; the database needs repair before it can be migrated")]
    MigrationDirty(i64),
    #[error("migration {0} failed: {1}")]
    MigrationFailed(i64, String),
    #[error("migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("unsupported database URL `{0}`: use sqlite://PATH or postgres://…")]
    UnsupportedUrl(String),
    #[error("the resource is still referenced")]
    InUse { referrers: Vec<Reference> },
    #[error("a resource with id `{0}` already exists")]
    AlreadyExists(String),
    #[error("stored document is corrupt: {0}")]
    Corrupt(String),
    #[error("secret encryption failed: {0}")]
    Crypto(&'static str),
    #[error("master key: {0}")]
    MasterKey(String),
    /// A backup file whose manifest or checksum does not verify.
    #[error("backup refused: {0}")]
    BackupInvalid(String),
    /// A backup that does not fit this database (schema head, tables).
    #[error("backup refused: {0}")]
    BackupIncompatible(String),
    /// Earlier-format data that cannot be imported as given.
    #[error("invalid v3 export: {0}")]
    LegacyInvalid(String),
}
