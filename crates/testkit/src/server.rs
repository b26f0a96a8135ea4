//! The real `rtc-agent` binary as a child process, for end-to-end tests.

use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, bail};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// The admin token tests pass unless they test its creation.
pub const TEST_ADMIN_TOKEN: &str = "test-admin-token-0123456789";
const PRINTED_TOKEN_PREFIX: &str = "admin token (shown once, store it now): ";
const LISTENING_PREFIX: &str = "rtc-agent listening on ";

/// A free TCP port on loopback.
pub fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// A loopback port nothing accepts on (connections are refused) and no
/// one else can take while this lives: bound, never listening.
pub struct ClosedPort {
    _socket: tokio::net::TcpSocket,
    pub port: u16,
}

impl ClosedPort {
    pub fn new() -> anyhow::Result<Self> {
        Self::bind(0)
    }

    /// Keep `port` closed from now on (a server on it just stopped), so a
    /// test that expects it refused is not answered by another test's
    /// server started there meanwhile.
    pub fn at(port: u16) -> anyhow::Result<Self> {
        Self::bind(port)
    }

    fn bind(port: u16) -> anyhow::Result<Self> {
        let socket = tokio::net::TcpSocket::new_v4()?;
        socket.set_reuseaddr(true)?;
        socket.bind(std::net::SocketAddr::from(([127, 0, 0, 1], port)))?;
        let port = socket.local_addr()?.port();
        Ok(Self {
            _socket: socket,
            port,
        })
    }
}

/// A running `rtc-agent serve`, killed when dropped.
pub struct ServerProcess {
    pub base_url: String,
    pub admin_token: String,
    child: Child,
    stdout_lines: Arc<Mutex<Vec<String>>>,
    stderr_lines: Arc<Mutex<Vec<String>>>,
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
        let token = env
            .get("RTC_ADMIN_TOKEN")
            .cloned()
            .unwrap_or_else(|| TEST_ADMIN_TOKEN.to_owned());
        Self::spawn(bin, database_url, data_dir, env, Some(token)).await
    }

    /// Start without `RTC_ADMIN_TOKEN`, so the server creates (and on its
    /// first start prints) one; see [`Self::printed_admin_token`].
    pub async fn start_without_admin_token(
        bin: &Path,
        database_url: &str,
        data_dir: &Path,
        env: &HashMap<String, String>,
    ) -> anyhow::Result<Self> {
        Self::spawn(bin, database_url, data_dir, env, None).await
    }

    /// The admin token the server printed on its first start, if it did.
    pub fn printed_admin_token(&self) -> Option<String> {
        let lines = self.stdout_lines.lock().ok()?;
        lines.iter().find_map(|l| {
            l.split_once(PRINTED_TOKEN_PREFIX)
                .map(|(_, t)| t.trim().to_owned())
        })
    }

    /// The process id (for CPU and memory readings).
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// Everything the process logged so far (stderr).
    pub fn log(&self) -> String {
        self.stderr_lines
            .lock()
            .map(|l| l.join("\n"))
            .unwrap_or_default()
    }

    /// Everything the process printed so far on stdout.
    pub fn output(&self) -> String {
        self.stdout_lines
            .lock()
            .map(|l| l.join("\n"))
            .unwrap_or_default()
    }

    /// The base URL from the "listening on http://…" line, once printed.
    fn listening_url(&self) -> Option<String> {
        let lines = self.stdout_lines.lock().ok()?;
        lines.iter().find_map(|l| {
            l.split_once(LISTENING_PREFIX)
                .map(|(_, url)| url.trim().to_owned())
        })
    }

    async fn spawn(
        bin: &Path,
        database_url: &str,
        data_dir: &Path,
        env: &HashMap<String, String>,
        admin_token: Option<String>,
    ) -> anyhow::Result<Self> {
        crate::init_tls();
        // Port 0: the server binds a free port itself and prints it, so no
        // other process can take the port between choosing and binding it.
        let mut cmd = Command::new(bin);
        cmd.arg("serve")
            .arg("--listen")
            .arg("127.0.0.1:0")
            .arg("--database-url")
            .arg(database_url)
            .arg("--data-dir")
            .arg(data_dir)
            .env("RUST_LOG", "warn")
            .envs(env)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        match &admin_token {
            Some(t) => cmd.env("RTC_ADMIN_TOKEN", t),
            None => cmd.env_remove("RTC_ADMIN_TOKEN"),
        };
        let mut child = cmd
            .spawn()
            .with_context(|| format!("starting {}", bin.display()))?;
        let stdout_lines = Arc::new(Mutex::new(Vec::new()));
        if let Some(out) = child.stdout.take() {
            let lines = stdout_lines.clone();
            tokio::spawn(async move {
                let mut reader = BufReader::new(out).lines();
                while let Ok(Some(line)) = reader.next_line().await {
                    if let Ok(mut l) = lines.lock() {
                        l.push(line);
                    }
                }
            });
        }
        // The log is kept (for tests about what it holds) and echoed.
        let stderr_lines = Arc::new(Mutex::new(Vec::new()));
        if let Some(err) = child.stderr.take() {
            let lines = stderr_lines.clone();
            tokio::spawn(async move {
                let mut reader = BufReader::new(err).lines();
                while let Ok(Some(line)) = reader.next_line().await {
                    eprintln!("{line}");
                    if let Ok(mut l) = lines.lock() {
                        l.push(line);
                    }
                }
            });
        }
        let mut server = Self {
            base_url: String::new(),
            admin_token: String::new(),
            child,
            stdout_lines,
            stderr_lines,
        };
        let client = api_client();
        for _ in 0..600 {
            // The "listening" line comes after the printed admin token, if any.
            if let Some(url) = server.listening_url() {
                server.base_url = url;
            }
            let ready = !server.base_url.is_empty()
                && client
                    .get(format!("{}/readyz", server.base_url))
                    .send()
                    .await
                    .is_ok_and(|r| r.status().is_success());
            if ready {
                server.admin_token = admin_token
                    .or_else(|| server.printed_admin_token())
                    .unwrap_or_default();
                return Ok(server);
            }
            if let Some(status) = server.child.try_wait()? {
                bail!("rtc-agent exited early with {status}");
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        bail!("rtc-agent did not become ready within 15 s")
    }

    /// Ask the process to stop (SIGTERM) and wait up to `within` for it
    /// to exit; its exit status.
    pub async fn terminate(mut self, within: Duration) -> anyhow::Result<std::process::ExitStatus> {
        let pid = self
            .child
            .id()
            .ok_or_else(|| anyhow::anyhow!("the process has already exited"))?;
        let sent = std::process::Command::new("kill")
            .arg("-TERM")
            .arg(pid.to_string())
            .status()?;
        anyhow::ensure!(sent.success(), "kill -TERM {pid} failed");
        tokio::time::timeout(within, self.child.wait())
            .await
            .map_err(|_| anyhow::anyhow!("rtc-agent did not exit within {within:?} of SIGTERM"))?
            .map_err(Into::into)
    }

    /// Stop the process (SIGKILL) and wait for it.
    pub async fn kill(mut self) {
        let _ = self.child.kill().await;
    }
}

/// A client for a test server's API. It lets an idle connection go before
/// the server's header-read timeout closes it (the server advertises it in
/// `Keep-Alive: timeout=N`), as a well-behaved client does: a request sent
/// just as the server closes an idle connection fails with "connection
/// closed before message completed".
pub fn api_client() -> reqwest::Client {
    reqwest::Client::builder()
        .pool_idle_timeout(std::time::Duration::from_secs(4))
        .build()
        .unwrap_or_default()
}
