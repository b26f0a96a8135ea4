//! `rtc-agent migrate`: the schema migrations (always applied first), then
//! the Tool Resource v4 migration of design §7 when v3 data is pending:
//! the backup check, one transaction, every pending document rewritten by
//! `rtc_core::v3_mapping` and validated with the v4 rules, unmappable or
//! invalid items printed as `workspace/resource/path/code` (and nothing
//! changed), otherwise the v4 resources stored, the system tools gone and
//! the migration recorded.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use clap::Args;
use rtc_core::assistant_rules::{AssistantContext, validate_assistant};
use rtc_core::bounds::UpdateBounds;
use rtc_core::realtime::shipped_interfaces;
use rtc_core::tool_rules::{ToolContext, validate_tool};
use rtc_core::v3_mapping::{Migrated, V3Export, migrate_export};
use rtc_core::workflow_rules::{WorkflowContext, validate_workflow};
use rtc_protocol::{Assistant, McpToolInfo, RealtimeInterface, Tool, ToolKind, Workflow};
use rtc_store::{LegacyKind, ResourceMigration, Store, StoreError, TOOL_RESOURCE_V4};
use serde_json::{Value, json};

use crate::config::{Overrides, Settings};
use crate::data::{Exit, fail, read_backup, refuse, say, write_backup};

#[derive(Debug, Args)]
pub struct MigrateArgs {
    /// Do the work and report, then roll back.
    #[arg(long)]
    pub dry_run: bool,
    /// A backup of the database as it is now (its fingerprint must match).
    #[arg(long, conflicts_with = "create_backup")]
    pub backup: Option<PathBuf>,
    /// Write a backup here first (and verify it).
    #[arg(long)]
    pub create_backup: Option<PathBuf>,
    #[command(flatten)]
    pub db: Overrides,
}

/// One item that stops the migration: printed as `workspace/resource/path/code`.
struct Blocker {
    line: String,
    message: String,
}

impl Blocker {
    fn new(
        workspace: &str,
        resource: &str,
        path: &str,
        code: &str,
        message: impl Into<String>,
    ) -> Self {
        let mut line = format!("{workspace}/{resource}");
        if !path.is_empty() {
            line.push('/');
            line.push_str(path);
        }
        line.push('/');
        line.push_str(code);
        Self {
            line,
            message: message.into(),
        }
    }
}

/// What the migration wrote, per kind.
#[derive(Debug, Default)]
struct Counts {
    workspaces: usize,
    tools: usize,
    assistants: usize,
    workflows: usize,
    system_tools: usize,
}

impl Counts {
    fn json(&self) -> Value {
        json!({"workspaces": self.workspaces, "tools": self.tools, "assistants": self.assistants,
               "workflows": self.workflows, "systemToolsRemoved": self.system_tools})
    }

    fn summary(&self) -> String {
        format!(
            "{} tools, {} assistants, {} workflows in {} workspaces; {} system tools removed",
            self.tools, self.assistants, self.workflows, self.workspaces, self.system_tools
        )
    }
}

pub async fn run(settings: &Settings, store: &Store, args: &MigrateArgs) -> anyhow::Result<Exit> {
    let url = rtc_store::redact_url(&settings.database_url);
    if store.pending_legacy().await? == 0 {
        let state = match store.data_migration(TOOL_RESOURCE_V4).await? {
            Some(r) => format!(
                "{TOOL_RESOURCE_V4} already applied (fingerprint {})",
                r.fingerprint
            ),
            None => format!("{TOOL_RESOURCE_V4}: no v3 data pending, already applied"),
        };
        say(&format!(
            "schema migrations applied to {url}; {state}; nothing to do"
        ))?;
        return Ok(Exit::Ok);
    }
    let backup = match (&args.backup, &args.create_backup) {
        (Some(path), _) => match read_backup(path) {
            Ok(b) => match store.verify_backup(&b, rtc_store::Unsigned::Refuse) {
                Ok(()) => b,
                Err(e) => return refuse(&format!("{}: {e}", path.display())),
            },
            Err(e) => return refuse(&e),
        },
        (None, Some(path)) => {
            let fresh = store.backup().await?;
            write_backup(&fresh, path)?;
            match read_backup(path) {
                Ok(b) if b == fresh => b,
                Ok(_) => {
                    return fail(&format!(
                        "the backup read back from {} differs from the one written",
                        path.display()
                    ));
                }
                Err(e) => return fail(&e),
            }
        }
        (None, None) => {
            return refuse(
                "the Tool Resource v4 migration needs a fresh backup: pass --backup PATH (written by `rtc-agent backup --out PATH`) or --create-backup PATH",
            );
        }
    };
    let mut tx = store.begin_resource_migration().await?;
    let live = tx.fingerprint().await?;
    if live != backup.manifest.fingerprint {
        tx.rollback().await?;
        return refuse(&format!(
            "the backup does not match the database now (backup {}, database {live}): take a fresh one",
            backup.manifest.fingerprint
        ));
    }
    let (blockers, counts) = rewrite(settings, &mut tx).await?;
    if !blockers.is_empty() {
        tx.rollback().await?;
        for b in &blockers {
            say(&b.line)?;
            eprintln!("{}: {}", b.line, b.message);
        }
        return fail(&format!("{} items cannot be migrated", blockers.len()));
    }
    if args.dry_run {
        tx.rollback().await?;
        say(&format!(
            "dry run: {TOOL_RESOURCE_V4} would migrate {}; rolled back",
            counts.summary()
        ))?;
        return Ok(Exit::Ok);
    }
    tx.commit(&live, &counts.json()).await?;
    say(&format!("{TOOL_RESOURCE_V4} applied: {}", counts.summary()))?;
    Ok(Exit::Ok)
}

/// Rewrite and store every pending document (inside the transaction).
async fn rewrite(
    settings: &Settings,
    tx: &mut ResourceMigration,
) -> anyhow::Result<(Vec<Blocker>, Counts)> {
    let mut by_workspace: BTreeMap<String, V3Export> = BTreeMap::new();
    for doc in tx.pending().await? {
        let export = by_workspace.entry(doc.workspace_id).or_default();
        match doc.kind {
            LegacyKind::Tool => export.tools.push(doc.body),
            LegacyKind::Assistant => export.assistants.push(doc.body),
            LegacyKind::Workflow => export.workflows.push(doc.body),
        }
    }
    let providers: BTreeSet<String> = settings.providers.keys().cloned().collect();
    let mut blockers = Vec::new();
    let mut counts = Counts::default();
    for (ws, export) in &by_workspace {
        counts.workspaces += 1;
        let existing: BTreeMap<String, Tool> = tx
            .list::<Tool>(ws)
            .await?
            .into_iter()
            .filter_map(|t| Some((t.id.clone()?, t)))
            .collect();
        let migrated = migrate_export(export, &existing);
        for p in &migrated.problems {
            blockers.push(Blocker::new(ws, &p.resource, &p.path, p.code, &p.message));
        }
        for w in &migrated.warnings {
            eprintln!("warning: {ws}/{}/{}: {}", w.resource, w.path, w.message);
        }
        if !migrated.problems.is_empty() {
            continue;
        }
        let before = blockers.len();
        let bounds = settings.limits.update_bounds();
        let checked = validate(
            tx,
            ws,
            (&providers, bounds),
            existing,
            migrated,
            &mut blockers,
        )
        .await?;
        if blockers.len() > before {
            continue;
        }
        counts.system_tools += checked.system_tools;
        for t in &checked.tools {
            store_doc(tx, ws, t, &mut blockers).await?;
        }
        for a in &checked.assistants {
            store_doc(tx, ws, a, &mut blockers).await?;
        }
        for w in &checked.workflows {
            store_doc(tx, ws, w, &mut blockers).await?;
        }
        counts.tools += checked.tools.len();
        counts.assistants += checked.assistants.len();
        counts.workflows += checked.workflows.len();
    }
    Ok((blockers, counts))
}

/// The migrated documents that passed the v4 rules.
struct Checked {
    tools: Vec<Tool>,
    assistants: Vec<Assistant>,
    workflows: Vec<Workflow>,
    system_tools: usize,
}

trait Identified {
    const LABEL: &'static str;
    fn id(&self) -> &str;
}

macro_rules! identified {
    ($t:ty, $kind:literal) => {
        impl Identified for $t {
            const LABEL: &'static str = $kind;
            fn id(&self) -> &str {
                self.id.as_deref().unwrap_or_default()
            }
        }
    };
}
identified!(Tool, "tool");
identified!(Assistant, "assistant");
identified!(Workflow, "workflow");

async fn validate(
    tx: &mut ResourceMigration,
    ws: &str,
    (providers, update_bounds): (&BTreeSet<String>, UpdateBounds),
    existing: BTreeMap<String, Tool>,
    migrated: Migrated,
    blockers: &mut Vec<Blocker>,
) -> anyhow::Result<Checked> {
    let secrets = tx.secret_names(ws).await?;
    let mut tools = existing;
    let mut new_tools = Vec::new();
    for tool in migrated.tools {
        let id = tool.id.clone().unwrap_or_default();
        // An MCP tool keeps the schema it had (its server is not asked here).
        let pinned = (tool.kind == ToolKind::Mcp).then(|| McpToolInfo {
            name: tool
                .mcp
                .as_ref()
                .map(|m| m.remote_tool_name.clone())
                .unwrap_or_default(),
            description: None,
            input_schema: tool
                .parameters
                .clone()
                .unwrap_or_else(rtc_core::tool_rules::empty_parameters),
            output_schema: None,
        });
        let ctx = ToolContext {
            secret_exists: &|n| secrets.contains(n),
            discovered: pinned.as_ref(),
            is_reserved: &rtc_runtime::is_reserved_tool_name,
        };
        match validate_tool(tool, &ctx) {
            Ok(t) => {
                tools.insert(id, t.clone());
                new_tools.push(t);
            }
            Err(e) => blockers.push(Blocker::new(
                ws,
                &format!("tool/{id}"),
                &e.field,
                e.code,
                e.message,
            )),
        }
    }
    let mut interfaces: Vec<RealtimeInterface> = shipped_interfaces();
    interfaces.extend(tx.list::<RealtimeInterface>(ws).await?);
    let interface = |id: Option<&String>| {
        id.and_then(|id| interfaces.iter().find(|i| i.id.as_ref() == Some(id)))
    };
    let mut assistant_ids: BTreeSet<String> = tx
        .list::<Assistant>(ws)
        .await?
        .into_iter()
        .filter_map(|a| a.id)
        .collect();
    for a in &migrated.assistants {
        let ctx = AssistantContext {
            tools: &tools,
            realtime_interface: interface(a.realtime_interface_id.as_ref()),
            providers,
            // v3 had no task backends: the mapping names none.
            task_backend: None,
            // Nor speech interfaces.
            speech_interfaces: &BTreeMap::new(),
            update_bounds,
        };
        match validate_assistant(a, &ctx) {
            Ok(()) => {
                assistant_ids.insert(a.id().to_owned());
            }
            Err(e) => blockers.push(Blocker::new(
                ws,
                &format!("assistant/{}", a.id()),
                &e.field,
                e.code,
                e.message,
            )),
        }
    }
    for w in &migrated.workflows {
        let ctx = WorkflowContext {
            tools: &tools,
            assistants: &assistant_ids,
            realtime_interface: interface(w.realtime_interface_id.as_ref()),
            providers,
            update_bounds,
        };
        if let Err(e) = validate_workflow(w, &ctx) {
            blockers.push(Blocker::new(
                ws,
                &format!("workflow/{}", w.id()),
                &e.field,
                e.code,
                e.message,
            ));
        }
    }
    Ok(Checked {
        tools: new_tools,
        system_tools: migrated.system_tools.len(),
        assistants: migrated.assistants,
        workflows: migrated.workflows,
    })
}

async fn store_doc<D: rtc_store::Document + Identified>(
    tx: &mut ResourceMigration,
    ws: &str,
    doc: &D,
    blockers: &mut Vec<Blocker>,
) -> anyhow::Result<()> {
    let id = doc.id().to_owned();
    let mut stored = doc.clone();
    stored.set_meta(None, None, None);
    match tx.insert(ws, &id, &stored).await {
        Ok(()) => Ok(()),
        Err(StoreError::AlreadyExists(_)) => {
            blockers.push(Blocker::new(
                ws,
                &format!("{}/{id}", D::LABEL),
                "id",
                "already_exists",
                format!(
                    "a {} with id `{id}` already exists in this workspace",
                    D::LABEL
                ),
            ));
            Ok(())
        }
        Err(e) => Err(e.into()),
    }
}
