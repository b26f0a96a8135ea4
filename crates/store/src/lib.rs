//! Storage of rtc-agent: one [`Store`] over SQLite (default, one file) or
//! PostgreSQL, through sqlx's `Any` driver with one set of portable queries
//! (`$N` placeholders, TEXT ids and JSON, BIGINT epoch-millisecond times).
//! Each engine has its own migration folder; both are applied at start and
//! by `rtc-agent migrate`.
//!
//! Configuration resources are stored as JSON documents keyed by
//! (workspace, kind, id), with a reference table so that a resource still
//! in use cannot be deleted. Secrets, and the values a document marks
//! sealed (a stdio MCP server's `env`), are encrypted with AES-256-GCM
//! before they reach the database.

mod backup;
mod catalog;
mod clients;
mod conversation_tests;
mod db;
mod documents;
mod engine;
mod error;
mod goals;
mod ids;
mod instances;
mod key_cache;
mod legacy;
mod loops;
mod memories;
mod notify;
mod quotas;
mod records;
mod secret_box;
mod secrets;
mod sessions;
mod subagents;
mod summaries;
mod tasks;
mod test_suite_runs;
mod usage;
mod workspaces;

pub use backup::{
    AppliedMigration, BACKUP_FORMAT, BACKUP_VERSION, Backup, BackupContent, Manifest,
    RestoreSummary, TableRows, UNSIGNED_BACKUP_VERSION, Unsigned,
};
pub use catalog::FingerprintInput;
pub use clients::{ClientConnectionRow, DeclaredFunctions};
pub use conversation_tests::TestTarget;
pub use db::{Dialect, Store, redact_url};
pub use documents::{Document, Reference, ResourceKind};
pub use error::StoreError;
pub use goals::GoalRecord;
pub use ids::{hash_token, new_id, new_token};
pub use instances::{OrphanedSession, TurnClaim};
pub use legacy::{
    LegacyDocument, LegacyKind, MigrationRecord, ResourceMigration, TOOL_RESOURCE_V4,
};
pub use loops::{ClaimedTick, LoopRecord, TickOutcome, TickRow};
pub use memories::MemoryRecord;
pub use notify::{Control, ControlOp, SessionWrite};
pub use records::{SessionRecords, SessionUpdate};
pub use secret_box::{MasterKey, SecretBox};
pub use secrets::SecretValue;
pub use sessions::{NewSession, SessionRecord};
pub use subagents::{InboxItem, InboxKind, SubAgentRecord};
pub use summaries::ContextSummary;
pub use tasks::{TaskEnding, TaskRecord};
pub use test_suite_runs::ABANDONED_AFTER_MS;
pub use usage::{UsageByDay, UsageCounts, UsageKey};
pub use workspaces::WorkspaceRecord;

/// Milliseconds since the Unix epoch, now.
pub fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or_default()
}
