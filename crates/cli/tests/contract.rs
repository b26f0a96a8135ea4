//! The API contract (issue 12, R-API-2, R-API-6): the served OpenAPI
//! document passes an OpenAPI validator, and schemathesis, run against the
//! real binary with a workspace key and with the admin token, finds no
//! server error and no response the document does not describe.
//!
//! Needs the pinned Python tools (`scripts/python-tools`, which
//! `scripts/test` runs): their folder in `RTC_TEST_PYTHON_TOOLS`. Without
//! it the test says so and passes, like the PostgreSQL tests without a
//! database. `RTC_FUZZ_EXAMPLES` sets the cases per operation (default 6;
//! `scripts/campaign-api-fuzz` runs 200).

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::harness::on_both;

fn python_tools() -> Option<PathBuf> {
    let dir = std::env::var_os("RTC_TEST_PYTHON_TOOLS").map(PathBuf::from);
    if dir.is_none() {
        // CI runs scripts/test, which sets it: a CI run without the tools is
        // a broken setup, not a skip.
        assert!(
            std::env::var_os("CI").is_none(),
            "RTC_TEST_PYTHON_TOOLS must be set on CI (scripts/test sets it)"
        );
        eprintln!("RTC_TEST_PYTHON_TOOLS is not set: skipping the API contract test");
    }
    dir
}

fn examples() -> String {
    std::env::var("RTC_FUZZ_EXAMPLES").unwrap_or_else(|_| "6".to_owned())
}

/// Run one tool in `cwd` (schemathesis keeps its example database there);
/// its output is printed on failure.
async fn run_tool(program: &Path, args: &[&str], cwd: &Path) -> anyhow::Result<(bool, String)> {
    let out = tokio::process::Command::new(program)
        .args(args)
        .current_dir(cwd)
        .env("NO_COLOR", "1")
        .output()
        .await?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok((out.status.success(), text))
}

/// The last lines of a tool's output (schemathesis prints its summary last).
fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

on_both!(the_document_is_valid_openapi, |srv| {
    let Some(tools) = python_tools() else {
        return Ok(());
    };
    let doc = srv.anonymous().get("/openapi.json").await?;
    let doc_file = srv.data_dir.path().join("openapi.json");
    std::fs::write(&doc_file, &doc.text)?;
    let (ok, text) = run_tool(
        &tools.join("openapi-spec-validator"),
        &[doc_file.to_str().unwrap_or_default()],
        srv.data_dir.path(),
    )
    .await?;
    assert!(ok, "the document is valid OpenAPI:\n{}", tail(&text, 40));
    Ok(())
});

on_both!(schemathesis_with_a_workspace_key, |srv| {
    let Some(tools) = python_tools() else {
        return Ok(());
    };
    let (_, key) = srv.workspace("fuzzed").await?;
    let auth = format!("Authorization: Bearer {}", key.token.unwrap_or_default());
    fuzz(&srv, &tools, "workspace key", &["-H", &auth]).await
});

on_both!(schemathesis_with_the_admin_token, |srv| {
    let Some(tools) = python_tools() else {
        return Ok(());
    };
    let (ws, _) = srv.workspace("fuzzed").await?;
    let auth = format!("Authorization: Bearer {}", srv.process.admin_token);
    let in_ws = format!("X-Rtc-Workspace: {ws}");
    fuzz(&srv, &tools, "admin token", &["-H", &auth, "-H", &in_ws]).await
});

/// Run schemathesis against the server with these headers; every check
/// must pass (no 5xx, no status, header or body the document does not
/// describe, schema-valid data accepted, invalid data refused, …).
async fn fuzz(
    srv: &crate::harness::Server,
    tools: &Path,
    who: &str,
    headers: &[&str],
) -> anyhow::Result<()> {
    let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/contract/schemathesis.toml");
    let report = srv.data_dir.path().join("schemathesis");
    let examples = examples();
    let url = format!("{}/openapi.json", srv.process.base_url);
    let mut args = vec![
        "--config-file",
        config.to_str().unwrap_or_default(),
        "run",
        &url,
        "--max-examples",
        &examples,
        // One worker: CPython 3.11's parser keeps its recursion depth per
        // interpreter, and hypothesis parsing in two threads trips "AST
        // constructor recursion depth mismatch".
        "--workers",
        "1",
        "--seed",
        "20261201",
        "--report-dir",
        report.to_str().unwrap_or_default(),
    ];
    args.extend_from_slice(headers);
    let started = Instant::now();
    let (ok, text) = run_tool(&tools.join("st"), &args, srv.data_dir.path()).await?;
    eprintln!(
        "schemathesis with the {who}: {:.1} s\n{}",
        started.elapsed().as_secs_f64(),
        tail(&text, 12)
    );
    assert!(
        ok,
        "schemathesis with the {who} found problems:\n{}",
        tail(&text, 400)
    );
    Ok(())
}
