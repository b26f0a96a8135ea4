//! `rtc-agent test`: run conversation tests (R-BX-10) through a running
//! server's public API, for CI. Each test's run is started (the server
//! answers at once) and read until it ends; one line per test as it
//! finishes, a summary, and exit code 1 when any test failed or could not
//! run; `--json` prints every run as JSON instead.

use std::io::Write;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;
use futures::StreamExt;
use serde_json::{Value, json};

use crate::data::Exit;

#[derive(Debug, Args)]
pub struct TestArgs {
    /// Only this assistant's tests (default: every assistant and workflow).
    #[arg(long)]
    pub assistant: Option<String>,
    /// Only this workflow's tests.
    #[arg(long, conflicts_with = "assistant")]
    pub workflow: Option<String>,
    /// Print the runs as one JSON document (`{passed, failed, errors, runs}`).
    #[arg(long)]
    pub json: bool,
    /// Tests sent at once (the server bounds its runs too).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub concurrency: u16,
    /// Base URL of the server.
    #[arg(long, env = "RTC_URL", default_value = "http://127.0.0.1:8080")]
    pub url: String,
    /// A workspace API key; prefer the variable (`--key` shows in `ps`).
    #[arg(long, env = "RTC_API_KEY", hide_env_values = true)]
    pub key: String,
}

/// A test to run: the path of its target (`assistants/ID`) and the test.
struct Planned {
    target: String,
    id: String,
    name: String,
}

/// How often a running test run is read.
const POLL: Duration = Duration::from_millis(250);

struct Client {
    http: reqwest::Client,
    base: String,
    key: String,
}

impl Client {
    /// Start the test's run and read it until it ends: the test's run.
    async fn run_test(&self, p: &Planned) -> anyhow::Result<Value> {
        let started = self
            .call(
                reqwest::Method::POST,
                &format!("/v1/{}/tests/{}/run", p.target, p.id),
            )
            .await?;
        let run_id = started["id"]
            .as_str()
            .context("the server answered no run id")?;
        let path = format!("/v1/{}/tests/runs/{run_id}", p.target);
        let mut suite = started.clone();
        while suite["status"] == "running" {
            tokio::time::sleep(POLL).await;
            suite = self.call(reqwest::Method::GET, &path).await?;
        }
        match suite["runs"].get(0) {
            Some(run) => Ok(run.clone()),
            None => bail!(
                "the run ended `{}` without a result (its server stopped?)",
                suite["status"].as_str().unwrap_or("?")
            ),
        }
    }

    async fn call(&self, method: reqwest::Method, path: &str) -> anyhow::Result<Value> {
        let url = format!("{}{path}", self.base);
        let resp = self
            .http
            .request(method, &url)
            .bearer_auth(&self.key)
            .send()
            .await
            .with_context(|| format!("cannot reach {url}"))?;
        let status = resp.status();
        let body: Value = resp.json().await.unwrap_or(Value::Null);
        if !status.is_success() {
            let message = body["error"]["message"].as_str().unwrap_or("no message");
            bail!("{path}: {status}: {message}");
        }
        Ok(body)
    }

    async fn list(&self, path: &str) -> anyhow::Result<Vec<Value>> {
        let body = self.call(reqwest::Method::GET, path).await?;
        Ok(body["data"].as_array().cloned().unwrap_or_default())
    }
}

fn out(line: &str) -> anyhow::Result<()> {
    let mut o = std::io::stdout().lock();
    writeln!(o, "{line}")?;
    o.flush()?;
    Ok(())
}

/// The tests of the chosen targets, in order.
async fn plan(client: &Client, args: &TestArgs) -> anyhow::Result<Vec<Planned>> {
    let mut targets = Vec::new();
    match (&args.assistant, &args.workflow) {
        (Some(a), _) => targets.push(format!("assistants/{a}")),
        (_, Some(w)) => targets.push(format!("workflows/{w}")),
        (None, None) => {
            for family in ["assistants", "workflows"] {
                for r in client.list(&format!("/v1/{family}")).await? {
                    if let Some(id) = r["id"].as_str() {
                        targets.push(format!("{family}/{id}"));
                    }
                }
            }
        }
    }
    let mut planned = Vec::new();
    for target in targets {
        for t in client.list(&format!("/v1/{target}/tests")).await? {
            planned.push(Planned {
                target: target.clone(),
                id: t["id"].as_str().unwrap_or_default().to_owned(),
                name: t["name"].as_str().unwrap_or_default().to_owned(),
            });
        }
    }
    Ok(planned)
}

/// One line for a finished run.
fn line(p: &Planned, run: &Value) -> String {
    let status = run["status"].as_str().unwrap_or("error");
    let secs = run["durationMs"].as_f64().unwrap_or(0.0) / 1000.0;
    let head = format!(
        "{:<5} {}  {} ({secs:.1} s)",
        status.to_uppercase(),
        p.target,
        p.name
    );
    match status {
        "passed" => head,
        "error" => format!(
            "{head}: {}",
            run["error"].as_str().unwrap_or("unknown error")
        ),
        _ => {
            let failed: Vec<String> = run["expectations"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|e| e["passed"] == false)
                .map(|e| {
                    format!(
                        "{} {}: {}",
                        e["kind"].as_str().unwrap_or(""),
                        e["subject"].as_str().unwrap_or(""),
                        e["detail"].as_str().unwrap_or("")
                    )
                })
                .collect();
            format!("{head}\n      {}", failed.join("\n      "))
        }
    }
}

/// Run the tests; exit 1 when any did not pass.
pub async fn run(args: TestArgs) -> anyhow::Result<Exit> {
    let client = Client {
        http: crate::http::api_client(),
        base: args.url.trim_end_matches('/').to_owned(),
        key: args.key.clone(),
    };
    let planned = plan(&client, &args).await?;
    if planned.is_empty() {
        eprintln!("no conversation tests found");
    }
    let client = &client;
    let mut results = futures::stream::iter(planned.iter().map(|p| async move {
        let run = client
            .run_test(p)
            .await
            .unwrap_or_else(|e| json!({"status": "error", "error": e.to_string(), "testId": p.id, "testName": p.name}));
        (p, run)
    }))
    .buffered(usize::from(args.concurrency));
    let (mut passed, mut failed, mut errors) = (0, 0, 0);
    let mut runs = Vec::new();
    while let Some((p, run)) = results.next().await {
        match run["status"].as_str() {
            Some("passed") => passed += 1,
            Some("failed") => failed += 1,
            _ => errors += 1,
        }
        if !args.json {
            out(&line(p, &run))?;
        }
        runs.push(run);
    }
    if args.json {
        let doc = json!({"passed": passed, "failed": failed, "errors": errors, "runs": runs});
        out(&serde_json::to_string_pretty(&doc)?)?;
    } else {
        out(&format!(
            "{passed} passed, {failed} failed, {errors} errors"
        ))?;
    }
    Ok(if failed + errors > 0 {
        Exit::Failed
    } else {
        Exit::Ok
    })
}
