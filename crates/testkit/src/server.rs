//! The real `rtc-agent` binary as a child process, for end-to-end tests.

use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context, bail};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// A free TCP port on loopback.
pub fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// A running `rtc-agent serve`, killed when dropped.
pub struct ServerProcess {
    pub base_url: String,
    pub admin_token: String,
    child: Child,
    pub stdout_lines: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl ServerProcess {
    /// Start `bin serve` on a free port against `database_url`, with extra
    /// environment variables, and wait until `/readyz` answers.
    pub async fn start(
        bin: &Path,
        database_url: &str,
        data_dir: &Path,
        env: &HashMap<String, String>,
    ) -> anyhow::Result<Self> {
        let port = free_port()?;
        let admin_token = env
            .get("RTC_ADMIN_TOKEN")
            .cloned()
            .unwrap_or_else(|| "test-admin-token-0123456789".to_owned());
        let mut cmd = Command::new(bin);
        cmd.arg("serve")
            .arg("--listen")
            .arg(format!("127.0.0.1:{port}"))
            .arg("--database-url")
            .arg(database_url)
            .arg("--data-dir")
            .arg(data_dir)
            .env("RTC_ADMIN_TOKEN", &admin_token)
            .env("RUST_LOG", "info")
            .envs(env)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        let mut child = cmd
            .spawn()
            .with_context(|| format!("starting {}", bin.display()))?;
        let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        if let Some(out) = child.stdout.take() {
            let lines = lines.clone();
            tokio::spawn(async move {
                let mut reader = BufReader::new(out).lines();
                while let Ok(Some(line)) = reader.next_line().await {
                    if let Ok(mut l) = lines.lock() {
                        l.push(line);
                    }
                }
            });
        }
        let base_url = format!("http://127.0.0.1:{port}");
        let client = reqwest::Client::new();
        for _ in 0..300 {
            if let Ok(r) = client.get(format!("{base_url}/readyz")).send().await {
                if r.status().is_success() {
                    return Ok(Self {
                        base_url,
                        admin_token,
                        child,
                        stdout_lines: lines,
                    });
                }
            }
            if let Some(status) = child.try_wait()? {
                bail!("rtc-agent exited early with {status}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        bail!("rtc-agent did not become ready within 15 s")
    }

    /// Stop the process (SIGKILL) and wait for it.
    pub async fn kill(mut self) {
        let _ = self.child.kill().await;
    }
}
