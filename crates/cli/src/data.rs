//! `rtc-agent backup`, `restore` and `import-v3`: arguments, the store
//! call, a one-line summary, and the exit code (0 ok, 1 failed with
//! nothing changed, 2 refused).

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;
use rtc_store::{Backup, LegacyKind, Store, StoreError, Unsigned};
use serde_json::Value;

use crate::config::{Overrides, Settings};

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Ok = 0,
    /// Failed; nothing was changed.
    Failed = 1,
    /// Refused (bad input, a backup that does not verify or match).
    Refused = 2,
}

pub(crate) fn say(line: &str) -> anyhow::Result<()> {
    writeln!(std::io::stdout(), "{line}")?;
    Ok(())
}

/// Print why the command did not run and return [`Exit::Refused`].
pub(crate) fn refuse(line: &str) -> anyhow::Result<Exit> {
    eprintln!("refused: {line}");
    Ok(Exit::Refused)
}

pub(crate) fn fail(line: &str) -> anyhow::Result<Exit> {
    eprintln!("failed: {line}; nothing was changed");
    Ok(Exit::Failed)
}

#[derive(Debug, Args)]
pub struct BackupArgs {
    /// The file to write (replaced if it exists).
    #[arg(long)]
    pub out: PathBuf,
    #[command(flatten)]
    pub db: Overrides,
}

#[derive(Debug, Args)]
pub struct RestoreArgs {
    /// A file written by `rtc-agent backup`.
    pub path: PathBuf,
    /// Accept a backup made before backups were signed (format version
    /// 1): nothing proves it was not edited, so use it only for a file
    /// you trust.
    #[arg(long)]
    pub allow_unsigned: bool,
    #[command(flatten)]
    pub db: Overrides,
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// A v3 export: `{"formatVersion":3,"tools":[…],"assistants":[…],"workflows":[…]}`.
    pub file: PathBuf,
    /// The workspace the documents belong to.
    #[arg(long)]
    pub workspace: String,
    #[command(flatten)]
    pub db: Overrides,
}

/// Write `backup` to `path`, readable by its owner only (0600), through a
/// new temporary file of a random name in the same folder (created
/// exclusively, so no link planted there is followed), renamed into place
/// once complete: a failure leaves no half-written backup.
pub(crate) fn write_backup(backup: &Backup, path: &Path) -> anyhow::Result<()> {
    let bytes = backup.to_bytes()?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".rtc-backup-")
        .tempfile_in(dir)?;
    tmp.write_all(&bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path)?;
    Ok(())
}

/// Read and verify a backup file: `Err` is the reason to refuse it.
pub(crate) fn read_backup(path: &Path) -> Result<Backup, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    Backup::parse(&bytes).map_err(|e| format!("{}: {e}", path.display()))
}

fn rows(backup: &Backup) -> u64 {
    backup.manifest.row_counts.values().sum()
}

pub async fn backup(settings: &Settings, store: &Store, args: &BackupArgs) -> anyhow::Result<Exit> {
    let backup = match store.backup().await {
        Ok(b) => b,
        Err(e) => {
            return fail(&format!(
                "backup of {}: {e}",
                rtc_store::redact_url(&settings.database_url)
            ));
        }
    };
    if let Err(e) = write_backup(&backup, &args.out) {
        return fail(&format!("writing {}: {e}", args.out.display()));
    }
    say(&format!(
        "backup written to {}: {} tables, {} rows, schema migration {}, fingerprint {}",
        args.out.display(),
        backup.content.tables.len(),
        rows(&backup),
        backup.manifest.migration_head,
        backup.manifest.fingerprint
    ))?;
    Ok(Exit::Ok)
}

pub async fn restore(store: &Store, args: &RestoreArgs) -> anyhow::Result<Exit> {
    let backup = match read_backup(&args.path) {
        Ok(b) => b,
        Err(e) => return refuse(&e),
    };
    let unsigned = if args.allow_unsigned {
        Unsigned::Allow
    } else {
        Unsigned::Refuse
    };
    if backup.manifest.signature.is_none() && args.allow_unsigned {
        eprintln!(
            "warning: {} is an unsigned backup (format version 1); nothing proves it was not edited",
            args.path.display()
        );
    }
    match store.restore(&backup, unsigned).await {
        Ok(s) => {
            say(&format!(
                "restored {}: {} tables, {} rows, schema migration {}",
                args.path.display(),
                s.tables,
                s.rows,
                s.migration_head
            ))?;
            Ok(Exit::Ok)
        }
        Err(e @ (StoreError::BackupIncompatible(_) | StoreError::BackupInvalid(_))) => {
            refuse(&e.to_string())
        }
        Err(e) => fail(&format!("restore: {e}")),
    }
}

/// The documents of a v3 export, or why it is refused.
fn export_documents(text: &str) -> Result<Vec<(LegacyKind, Value)>, String> {
    let doc: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    if doc.get("formatVersion").and_then(Value::as_u64) != Some(3) {
        return Err("`formatVersion` must be 3".into());
    }
    if let Some(key) = doc.as_object().and_then(|m| {
        m.keys()
            .find(|k| !["formatVersion", "tools", "assistants", "workflows"].contains(&k.as_str()))
    }) {
        return Err(format!("unknown key `{key}`"));
    }
    let mut out = Vec::new();
    for (key, kind) in [
        ("tools", LegacyKind::Tool),
        ("assistants", LegacyKind::Assistant),
        ("workflows", LegacyKind::Workflow),
    ] {
        match doc.get(key) {
            None => {}
            Some(Value::Array(items)) => {
                for (i, item) in items.iter().enumerate() {
                    if !item.get("id").is_some_and(Value::is_string) {
                        return Err(format!("{key}[{i}] needs a string `id`"));
                    }
                    out.push((kind, item.clone()));
                }
            }
            Some(_) => return Err(format!("`{key}` must be an array")),
        }
    }
    Ok(out)
}

pub async fn import_v3(store: &Store, args: &ImportArgs) -> anyhow::Result<Exit> {
    let text = match std::fs::read_to_string(&args.file) {
        Ok(t) => t,
        Err(e) => return refuse(&format!("cannot read {}: {e}", args.file.display())),
    };
    let docs = match export_documents(&text) {
        Ok(d) => d,
        Err(e) => return refuse(&format!("{} is not a v3 export: {e}", args.file.display())),
    };
    let count = |k: LegacyKind| docs.iter().filter(|(kind, _)| *kind == k).count();
    let (tools, assistants, workflows) = (
        count(LegacyKind::Tool),
        count(LegacyKind::Assistant),
        count(LegacyKind::Workflow),
    );
    match store.import_v3(&args.workspace, &docs).await {
        Ok(n) => {
            say(&format!(
                "imported {n} v3 documents ({tools} tools, {assistants} assistants, {workflows} workflows) into workspace {}; they are pending: run `rtc-agent migrate --backup PATH` before `serve`",
                args.workspace
            ))?;
            Ok(Exit::Ok)
        }
        Err(e @ StoreError::LegacyInvalid(_)) => refuse(&e.to_string()),
        Err(e) => fail(&format!("import: {e}")),
    }
}
