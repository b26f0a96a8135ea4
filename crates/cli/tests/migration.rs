//! Scenario 10 of the workflow design: the Tool Resource v4 migration
//! through the real binary (`import-v3`, `backup`, `migrate`, `restore`,
//! `serve` refusing v3 data), on SQLite and PostgreSQL, and backups that
//! move between the engines.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rtc_testkit::{Engine, ServerProcess, TestDatabase};
use serde_json::{Value, json};

use crate::harness::{Api, binary};

const EXPORT: &str = include_str!("fixtures/workflows/v3_export.json");
const V4: &str = include_str!("fixtures/workflows/order_support_v4.json");
const WORKFLOW_ID: &str = "wf_order_support";

/// A database, its data folder (master key) and a folder for files.
struct Env {
    db: TestDatabase,
    data: tempfile::TempDir,
    files: tempfile::TempDir,
}

/// What one command run gave.
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Env {
    async fn new(engine: Engine) -> anyhow::Result<Option<Self>> {
        let Some(db) = TestDatabase::new(engine).await? else {
            return Ok(None);
        };
        Ok(Some(Self {
            db,
            data: tempfile::tempdir()?,
            files: tempfile::tempdir()?,
        }))
    }

    fn file(&self, name: &str) -> PathBuf {
        self.files.path().join(name)
    }

    /// `rtc-agent ARGS --database-url … --data-dir …`.
    async fn cli(&self, args: &[&str]) -> anyhow::Result<Run> {
        let out = tokio::process::Command::new(binary())
            .args(args)
            .arg("--database-url")
            .arg(&self.db.url)
            .arg("--data-dir")
            .arg(self.data.path())
            .env("RUST_LOG", "warn")
            .output()
            .await?;
        Ok(Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        })
    }

    async fn ok(&self, args: &[&str]) -> anyhow::Result<Run> {
        let run = self.cli(args).await?;
        assert_eq!(run.code, 0, "{args:?}: {}\n{}", run.stdout, run.stderr);
        Ok(run)
    }

    /// A backup's bytes, written to `name`.
    async fn backup(&self, name: &str) -> anyhow::Result<Vec<u8>> {
        let path = self.file(name);
        self.ok(&["backup", "--out", path.to_str().unwrap_or_default()])
            .await?;
        Ok(std::fs::read(path)?)
    }

    async fn serve(&self) -> anyhow::Result<ServerProcess> {
        ServerProcess::start(&binary(), &self.db.url, self.data.path(), &HashMap::new()).await
    }

    /// `serve` exits at once with the migration's message.
    async fn assert_serve_refuses(&self) -> anyhow::Result<()> {
        let port = rtc_testkit::free_port()?;
        let out = tokio::time::timeout(
            Duration::from_secs(60),
            tokio::process::Command::new(binary())
                .args([
                    "serve",
                    "--listen",
                    &format!("127.0.0.1:{port}"),
                    "--database-url",
                    &self.db.url,
                    "--data-dir",
                ])
                .arg(self.data.path())
                .env("RTC_ADMIN_TOKEN", "test-admin-token-0123456789")
                .kill_on_drop(true)
                .output(),
        )
        .await??;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "serve started on v3 data");
        assert!(
            stderr.contains("rtc-agent migrate --backup PATH"),
            "{stderr}"
        );
        Ok(())
    }
}

fn admin(server: &ServerProcess, workspace: Option<&str>) -> Api {
    Api {
        base: server.base_url.clone(),
        token: Some(server.admin_token.clone()),
        workspace_header: workspace.map(str::to_owned),
        client: rtc_testkit::api_client(),
    }
}

/// A workspace created through the API (the server is stopped after).
async fn workspace(env: &Env) -> anyhow::Result<String> {
    let server = env.serve().await?;
    let ws = admin(&server, None)
        .create("/v1/workspaces", json!({"name": "legacy"}))
        .await?;
    server.terminate(Duration::from_secs(20)).await?;
    Ok(ws["id"].as_str().unwrap_or_default().to_owned())
}

/// The fixture (with a local base URL), changed by `edit`, imported.
async fn import(env: &Env, ws: &str, edit: impl FnOnce(&mut Value)) -> anyhow::Result<()> {
    let mut export: Value =
        serde_json::from_str(&EXPORT.replace("{{base_url}}", "http://127.0.0.1:9"))?;
    edit(&mut export);
    let path = env.file("export.json");
    std::fs::write(&path, export.to_string())?;
    let run = env
        .ok(&[
            "import-v3",
            path.to_str().unwrap_or_default(),
            "--workspace",
            ws,
        ])
        .await?;
    assert!(
        run.stdout.contains("imported 7 v3 documents"),
        "{}",
        run.stdout
    );
    Ok(())
}

fn path_arg(p: &Path) -> &str {
    p.to_str().unwrap_or_default()
}

/// Nodes and edges sorted by id; the read-only fields gone.
fn comparable(mut v: Value) -> Value {
    if let Some(m) = v.as_object_mut() {
        for k in ["id", "createdAt", "updatedAt"] {
            m.remove(k);
        }
    }
    for key in ["nodes", "edges"] {
        if let Some(items) = v[key].as_array_mut() {
            items.sort_by(|a, b| a["id"].as_str().cmp(&b["id"].as_str()));
        }
    }
    v
}

/// What the API shows of the migrated workspace.
async fn migrated_view(server: &ServerProcess, ws: &str) -> anyhow::Result<(Value, Value, Value)> {
    let api = admin(server, Some(ws));
    let workflow = api
        .get(&format!("/v1/workflows/{WORKFLOW_ID}"))
        .await?
        .assert_status(200)
        .clone();
    let assistant = api
        .get("/v1/assistants/asst_orders")
        .await?
        .assert_status(200)
        .clone();
    let tools = api.get("/v1/tools").await?.assert_status(200).clone();
    Ok((workflow, assistant, tools))
}

/// The body a backup holds for one resource.
fn stored(backup: &[u8], kind: &str, id: &str) -> anyhow::Result<Value> {
    let b: Value = serde_json::from_slice(backup)?;
    let t = &b["content"]["tables"]["resources"];
    let col = |name: &str| {
        t["columns"]
            .as_array()
            .and_then(|c| c.iter().position(|x| x == name))
    };
    let (Some(k), Some(i), Some(body)) = (col("kind"), col("id"), col("body")) else {
        anyhow::bail!("no resources table in the backup");
    };
    let row = t["rows"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r[k] == kind && r[i] == id))
        .ok_or_else(|| anyhow::anyhow!("no {kind} {id} in the backup"))?;
    Ok(serde_json::from_str(
        row[body].as_str().unwrap_or_default(),
    )?)
}

fn assert_migrated(workflow: &Value, assistant: &Value, tools: &Value) -> anyhow::Result<()> {
    assert_eq!(
        comparable(workflow.clone()),
        comparable(serde_json::from_str(V4)?)
    );
    let built_ins = &assistant["builtInTools"];
    for name in ["endConversation", "updateState", "requestHumanHandoff"] {
        assert!(built_ins[name].is_object(), "{name}: {assistant}");
    }
    assert_eq!(
        assistant["toolBindings"],
        json!([{"toolId": "tool_query_order", "argumentBindings": {"order_id": {"source": "model"}, "tenant": {"source": "model"}}}])
    );
    let ids: Vec<&str> = tools["data"]
        .as_array()
        .map(|d| d.iter().filter_map(|t| t["id"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(ids, ["tool_query_order"], "{tools}");
    assert!(!tools.to_string().contains("\"system\""), "{tools}");
    Ok(())
}

async fn scenario(engine: Engine) -> anyhow::Result<()> {
    let Some(env) = Env::new(engine).await? else {
        return Ok(());
    };
    let ws = workspace(&env).await?;
    env.backup("before_import.backup").await?;
    import(&env, &ws, |_| {}).await?;
    env.assert_serve_refuses().await?;
    // The "fixtures/v3.backup" state: the export imported, not migrated.
    let v3 = env.backup("v3.backup").await?;

    let refused = env.cli(&["migrate"]).await?;
    assert_eq!(refused.code, 2, "{}\n{}", refused.stdout, refused.stderr);
    assert!(
        refused.stderr.contains("--backup PATH"),
        "{}",
        refused.stderr
    );
    assert_eq!(
        env.backup("after_refusal.backup").await?,
        v3,
        "a refused migrate wrote"
    );

    let b1 = env.backup("b1").await?;
    let b1_path = env.file("b1");
    let dry = env
        .ok(&["migrate", "--dry-run", "--backup", path_arg(&b1_path)])
        .await?;
    assert!(dry.stdout.contains("dry run"), "{}", dry.stdout);
    assert_eq!(
        env.backup("after_dry_run.backup").await?,
        b1,
        "a dry run wrote"
    );

    // A backup that no longer matches the database is refused.
    let old = env
        .cli(&[
            "migrate",
            "--backup",
            path_arg(&env.file("before_import.backup")),
        ])
        .await?;
    assert_eq!(old.code, 2, "{}\n{}", old.stdout, old.stderr);
    assert!(old.stderr.contains("does not match"), "{}", old.stderr);
    let stale = env.file("stale.backup");
    std::fs::write(&stale, &v3)?;
    let run = env.ok(&["migrate", "--backup", path_arg(&b1_path)]).await?;
    assert!(
        run.stdout.contains("tool_resource_v4 applied"),
        "{}",
        run.stdout
    );

    let server = env.serve().await?;
    let (workflow, assistant, tools) = migrated_view(&server, &ws).await?;
    assert_migrated(&workflow, &assistant, &tools)?;
    let system = admin(&server, Some(&ws))
        .post(
            "/v1/tools",
            json!({"name": "x", "type": "system", "description": "d"}),
        )
        .await?;
    system.assert_error(400, "system_tools_are_builtin", None);
    server.terminate(Duration::from_secs(20)).await?;

    let before = env.backup("before_rerun.backup").await?;
    assert_eq!(
        comparable(stored(&before, "workflow", WORKFLOW_ID)?),
        comparable(serde_json::from_str(V4)?),
        "the stored workflow is §5"
    );
    let again = env.ok(&["migrate", "--backup", path_arg(&b1_path)]).await?;
    assert!(again.stdout.contains("already applied"), "{}", again.stdout);
    assert_eq!(
        env.backup("after_rerun.backup").await?,
        before,
        "the re-run wrote"
    );

    // Rollback: the v3 state comes back, and serve refuses it again.
    assert_eq!(b1, v3);
    let restored = env.ok(&["restore", path_arg(&b1_path)]).await?;
    assert!(restored.stdout.contains("restored"), "{}", restored.stdout);
    assert_eq!(env.backup("after_restore.backup").await?, v3);
    env.assert_serve_refuses().await?;

    // A file that does not verify is refused, and nothing changes.
    let mut tampered = String::from_utf8(v3.clone())?;
    tampered = tampered.replacen("Order support", "Order suppor7", 1);
    let bad = env.file("tampered.backup");
    std::fs::write(&bad, tampered)?;
    let run = env.cli(&["restore", path_arg(&bad)]).await?;
    assert_eq!(run.code, 2, "{}\n{}", run.stdout, run.stderr);
    let run = env.cli(&["migrate", "--backup", path_arg(&stale)]).await?;
    assert_eq!(
        run.code, 0,
        "the v3 backup matches the restored state: {}",
        run.stderr
    );
    Ok(())
}

#[tokio::test]
async fn scenario_10_sqlite() -> anyhow::Result<()> {
    scenario(Engine::Sqlite).await
}

#[tokio::test]
async fn scenario_10_postgres() -> anyhow::Result<()> {
    scenario(Engine::Postgres).await
}

/// A required param without an inline value: exit 1, the item reported
/// as `workspace/resource/path/code`, the database unchanged.
async fn unmappable(engine: Engine) -> anyhow::Result<()> {
    let Some(env) = Env::new(engine).await? else {
        return Ok(());
    };
    let ws = workspace(&env).await?;
    // Refused imports: an unknown workspace, a file that is not a v3 export.
    let file = env.file("export.json");
    std::fs::write(&file, EXPORT)?;
    let run = env
        .cli(&["import-v3", path_arg(&file), "--workspace", "ws_missing"])
        .await?;
    assert_eq!(run.code, 2, "{}", run.stderr);
    std::fs::write(&file, r#"{"formatVersion":4,"tools":[]}"#)?;
    let run = env
        .cli(&["import-v3", path_arg(&file), "--workspace", &ws])
        .await?;
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_eq!(env.cli(&["migrate"]).await?.code, 0, "nothing was imported");
    import(&env, &ws, |e| {
        if let Some(params) =
            e["workflows"][0]["nodes"]["lookup_order"]["tools"][0]["params"].as_object_mut()
        {
            params.remove("order_id");
        }
    })
    .await?;
    let created = env.file("created.backup");
    let run = env
        .cli(&["migrate", "--create-backup", path_arg(&created)])
        .await?;
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    let line = format!(
        "{ws}/workflow/{WORKFLOW_ID}/nodes/lookup_order/tools/0/params/order_id/missing_required_param"
    );
    assert_eq!(
        run.stdout.lines().collect::<Vec<_>>(),
        [line.as_str()],
        "{}",
        run.stderr
    );
    assert!(run.stdout.contains("/params/order_id"));
    let written = std::fs::read(&created)?;
    assert_eq!(
        env.backup("after.backup").await?,
        written,
        "the failed migration wrote"
    );
    env.assert_serve_refuses().await?;
    Ok(())
}

#[tokio::test]
async fn unmappable_items_are_reported_and_nothing_changes_sqlite() -> anyhow::Result<()> {
    unmappable(Engine::Sqlite).await
}

#[tokio::test]
async fn unmappable_items_are_reported_and_nothing_changes_postgres() -> anyhow::Result<()> {
    unmappable(Engine::Postgres).await
}

/// A migrated database with a secret, backed up
/// on `from` and restored on `to`: the same backup bytes and API reads.
async fn cross_engine(from: Engine, to: Engine) -> anyhow::Result<()> {
    let (Some(src), Some(dst)) = (Env::new(from).await?, Env::new(to).await?) else {
        return Ok(());
    };
    let ws = workspace(&src).await?;
    import(&src, &ws, |_| {}).await?;
    let b = src.file("b");
    src.ok(&["migrate", "--create-backup", path_arg(&b)])
        .await?;
    let server = src.serve().await?;
    let api = admin(&server, Some(&ws));
    let put = api
        .put(
            "/v1/secrets/secret__token",
            json!({"value": "s3cret-value"}),
        )
        .await?;
    assert_eq!(put.status.as_u16(), 201, "{}", put.text);
    let view = migrated_view(&server, &ws).await?;
    server.terminate(Duration::from_secs(20)).await?;
    let bytes = src.backup("src.backup").await?;

    // The destination shares the master key (secrets are sealed with it).
    std::fs::copy(
        src.data.path().join("master.key"),
        dst.data.path().join("master.key"),
    )?;
    let restored = dst
        .ok(&["restore", path_arg(&src.file("src.backup"))])
        .await?;
    assert!(restored.stdout.contains("restored"), "{}", restored.stdout);
    assert_eq!(
        dst.backup("dst.backup").await?,
        bytes,
        "a restored backup reads back the same"
    );
    let server = dst.serve().await?;
    assert_eq!(migrated_view(&server, &ws).await?, view);
    let api = admin(&server, Some(&ws));
    let secrets = api.get("/v1/secrets").await?.assert_status(200).clone();
    assert!(secrets.to_string().contains("secret__token"), "{secrets}");
    server.terminate(Duration::from_secs(20)).await?;
    Ok(())
}

#[tokio::test]
async fn a_sqlite_backup_restores_on_postgres() -> anyhow::Result<()> {
    cross_engine(Engine::Sqlite, Engine::Postgres).await
}

#[tokio::test]
async fn a_postgres_backup_restores_on_sqlite() -> anyhow::Result<()> {
    cross_engine(Engine::Postgres, Engine::Sqlite).await
}
