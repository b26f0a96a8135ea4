//! An OpenCode server the platform starts itself (`opencode.command`,
//! design §0.2, §3.3): `opencode serve` on a free loopback port with a
//! cleared environment (its own HOME, the operator's configuration merged
//! with the hermetic settings, a random password, the flags that keep it
//! offline), polled healthy, restarted when it died, stopped with SIGTERM
//! then SIGKILL, and killed when dropped.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::process::{Child, Command};
use tokio::sync::Mutex;

use super::{OpencodeClient, OpencodeError, PINNED_VERSION, Password};
use crate::net_guard::AddressPolicy;

/// Health polling: each request's timeout, the pause between them and the
/// overall budget (a first request sent at startup was once seen to hang).
const HEALTH_REQUEST_TIMEOUT: Duration = Duration::from_secs(1);
const HEALTH_INTERVAL: Duration = Duration::from_millis(100);
const HEALTH_BUDGET: Duration = Duration::from_secs(30);

/// How long a stopping server may take after SIGTERM before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// Flags that keep a started server from reaching the internet.
const OFFLINE_FLAGS: [&str; 8] = [
    "OPENCODE_DISABLE_MODELS_FETCH",
    "OPENCODE_DISABLE_AUTOUPDATE",
    "OPENCODE_DISABLE_SHARE",
    "OPENCODE_DISABLE_LSP_DOWNLOAD",
    "OPENCODE_DISABLE_DEFAULT_PLUGINS",
    "OPENCODE_DISABLE_CLAUDE_CODE",
    "OPENCODE_DISABLE_EXTERNAL_SKILLS",
    "OPENCODE_DISABLE_PROJECT_CONFIG",
];

/// What a started server is made of. Its `Debug` shows neither the
/// configuration nor the secrets (they hold secret values).
#[derive(Clone)]
pub struct SupervisorSettings {
    /// The `opencode` executable.
    pub command: String,
    /// The operator's OpenCode configuration (secrets already rendered),
    /// merged with [`hermetic_config`].
    pub config: Value,
    /// The server's own HOME (created if missing): its configuration,
    /// its SQLite database of sessions and its caches live there.
    pub home: PathBuf,
    /// The secret values rendered into `config`: scrubbed, with the
    /// server's password, from whatever of its log an error quotes.
    pub secrets: Vec<String>,
}

impl std::fmt::Debug for SupervisorSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SupervisorSettings")
            .field("command", &self.command)
            .field("home", &self.home)
            .finish_non_exhaustive()
    }
}

/// The operator's configuration with the settings a started server always
/// has: no self-update, no sharing.
pub fn hermetic_config(operator: &Value) -> Value {
    let mut config = match operator {
        Value::Object(map) => Value::Object(map.clone()),
        _ => json!({}),
    };
    config["autoupdate"] = json!(false);
    config["share"] = json!("disabled");
    config
}

struct Running {
    child: Child,
    port: u16,
}

/// A running server of the platform's; killed when dropped.
pub struct SupervisedServer {
    settings: SupervisorSettings,
    password: Password,
    running: Mutex<Option<Running>>,
    port: u16,
}

impl std::fmt::Debug for SupervisedServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SupervisedServer")
            .field("command", &self.settings.command)
            .field("port", &self.port)
            .finish_non_exhaustive()
    }
}

impl SupervisedServer {
    /// Start the server and wait until it is healthy.
    pub async fn start(settings: SupervisorSettings) -> Result<Self, OpencodeError> {
        let port = free_port()?;
        let server = Self {
            settings,
            password: Password::new(random_password()),
            running: Mutex::new(None),
            port,
        };
        server.ensure_running().await?;
        Ok(server)
    }

    /// `http://127.0.0.1:<port>`.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// A client of the server (for `directory`'s project), restarting the
    /// server first if it died.
    pub async fn client(&self, directory: Option<String>) -> Result<OpencodeClient, OpencodeError> {
        self.ensure_running().await?;
        self.client_unchecked(directory)
    }

    /// A client of the server without checking that it runs (for the
    /// event stream, which reconnects by itself).
    pub fn client_unchecked(
        &self,
        directory: Option<String>,
    ) -> Result<OpencodeClient, OpencodeError> {
        // The platform started it on loopback: the guard's public-only rule
        // is for addresses an operator typed, not for our own child.
        OpencodeClient::new(
            &self.base_url(),
            Some(&self.password),
            directory,
            AddressPolicy::AllowPrivate,
        )
    }

    /// The process id, while it runs.
    pub async fn pid(&self) -> Option<u32> {
        self.running
            .lock()
            .await
            .as_ref()
            .and_then(|r| r.child.id())
    }

    /// Start the server unless it runs; restart it (same port, same HOME,
    /// so its sessions survive) when it exited.
    pub async fn ensure_running(&self) -> Result<(), OpencodeError> {
        let mut running = self.running.lock().await;
        if let Some(r) = running.as_mut() {
            match r.child.try_wait() {
                Ok(None) => return Ok(()),
                Ok(Some(status)) => {
                    tracing::warn!(port = r.port, %status, "the OpenCode server exited; restarting it");
                }
                Err(e) => {
                    tracing::warn!(error = %e, "the OpenCode server's state is unknown; restarting it")
                }
            }
        }
        *running = None;
        let child = self.spawn()?;
        let mut started = Running {
            child,
            port: self.port,
        };
        self.wait_healthy(&mut started).await?;
        *running = Some(started);
        Ok(())
    }

    /// SIGTERM, then SIGKILL after 5 s.
    pub async fn stop(&self) {
        let Some(mut r) = self.running.lock().await.take() else {
            return;
        };
        terminate(&mut r.child, STOP_GRACE).await;
    }

    fn spawn(&self) -> Result<Child, OpencodeError> {
        let home = &self.settings.home;
        let workdir = home.join("work");
        std::fs::create_dir_all(&workdir)
            .map_err(|e| OpencodeError::Start(format!("creating {}: {e}", workdir.display())))?;
        let log = std::fs::File::create(home.join("server.log"))
            .map_err(|e| OpencodeError::Start(format!("creating its log: {e}")))?;
        let log_err = log
            .try_clone()
            .map_err(|e| OpencodeError::Start(format!("opening its log: {e}")))?;
        let config = hermetic_config(&self.settings.config).to_string();
        let mut command = Command::new(&self.settings.command);
        command
            .args([
                "serve",
                "--port",
                &self.port.to_string(),
                "--hostname",
                "127.0.0.1",
            ])
            .current_dir(&workdir)
            .env_clear()
            .env("HOME", home)
            .env("OPENCODE_CONFIG_CONTENT", config)
            .env("OPENCODE_SERVER_PASSWORD", self.password.expose())
            // A plugin install OpenCode always attempts fails at once, locally.
            .env("npm_config_registry", "http://127.0.0.1:9/")
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err)
            .kill_on_drop(true);
        if let Some(path) = std::env::var_os("PATH") {
            command.env("PATH", path);
        }
        for flag in OFFLINE_FLAGS {
            command.env(flag, "1");
        }
        // A server left by an earlier platform process that was killed
        // (it could not stop it) would share this HOME: end it first.
        end_leftover(home);
        let child = command.spawn().map_err(|e| {
            OpencodeError::Start(format!("running {:?}: {e}", self.settings.command))
        })?;
        if let Some(pid) = child.id() {
            let _ = std::fs::write(home.join(PID_FILE), pid.to_string());
        }
        Ok(child)
    }

    async fn wait_healthy(&self, running: &mut Running) -> Result<(), OpencodeError> {
        let client = self.client_unchecked(None)?;
        let deadline = tokio::time::Instant::now() + HEALTH_BUDGET;
        loop {
            if let Ok(version) = client.health(HEALTH_REQUEST_TIMEOUT).await {
                if version != PINNED_VERSION {
                    tracing::warn!(%version, pinned = PINNED_VERSION, "the OpenCode server is not the tested version");
                }
                return Ok(());
            }
            if let Ok(Some(status)) = running.child.try_wait() {
                return Err(OpencodeError::Start(format!(
                    "it exited with {status}{}",
                    self.log_tail()
                )));
            }
            if tokio::time::Instant::now() >= deadline {
                terminate(&mut running.child, Duration::ZERO).await;
                return Err(OpencodeError::Start(format!(
                    "it was not healthy within {} s{}",
                    HEALTH_BUDGET.as_secs(),
                    self.log_tail()
                )));
            }
            tokio::time::sleep(HEALTH_INTERVAL).await;
        }
    }

    /// The end of the server's log, scrubbed of its password and the
    /// secrets in its configuration.
    fn log_tail(&self) -> String {
        let Ok(text) = std::fs::read_to_string(self.settings.home.join("server.log")) else {
            return String::new();
        };
        let tail: String = text
            .chars()
            .rev()
            .take(400)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        let secrets = std::iter::once(self.password.expose())
            .chain(self.settings.secrets.iter().map(String::as_str));
        let tail = crate::scrub::Scrubber::new(secrets).scrub_str(tail.trim());
        if tail.is_empty() {
            String::new()
        } else {
            format!(" (its log ends: {tail})")
        }
    }
}

/// Where a started server's process id is kept, in its HOME.
const PID_FILE: &str = "server.pid";

/// SIGKILL the process named by `home`'s pid file if it still runs with
/// that HOME (so an unrelated process that reused the id is left alone).
fn end_leftover(home: &std::path::Path) {
    let Some(pid) = std::fs::read_to_string(home.join(PID_FILE))
        .ok()
        .and_then(|p| p.trim().parse::<u32>().ok())
    else {
        return;
    };
    let marker = format!("HOME={}", home.display());
    let ours = std::fs::read(format!("/proc/{pid}/environ"))
        .is_ok_and(|env| env.split(|b| *b == 0).any(|v| v == marker.as_bytes()));
    if ours {
        tracing::warn!(pid, "ending an OpenCode server left by an earlier run");
        let _ = std::process::Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// SIGTERM, wait up to `grace`, then SIGKILL.
async fn terminate(child: &mut Child, grace: Duration) {
    if let Some(pid) = child.id()
        && !grace.is_zero()
    {
        let sent = std::process::Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if sent && tokio::time::timeout(grace, child.wait()).await.is_ok() {
            return;
        }
    }
    let _ = child.kill().await;
}

fn free_port() -> Result<u16, OpencodeError> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| OpencodeError::Start(format!("finding a free port: {e}")))
}

fn random_password() -> String {
    let mut bytes = [0u8; 24];
    rand::fill(&mut bytes[..]);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
