//! The real MCP "everything" server (npm `@modelcontextprotocol/server-everything`),
//! installed into the repository's `node_modules` by `scripts/test`, and a
//! rich server on the Python `mcp` SDK (`fixtures/rich_mcp_server.py`,
//! its python in `RTC_TEST_PYTHON_MCP`, set by `scripts/test`).

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context, bail};
use tokio::process::{Child, Command};

use crate::free_port;

/// The repository root (two levels above this crate).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `(command, args)` that start the everything server over stdio.
pub fn everything_stdio_command() -> anyhow::Result<(String, Vec<String>)> {
    let script =
        repo_root().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    if !script.exists() {
        bail!(
            "{} is missing: run `npm ci` at the repository root (scripts/test does)",
            script.display()
        );
    }
    let script = script.canonicalize()?;
    Ok((
        "node".to_owned(),
        vec![script.display().to_string(), "stdio".to_owned()],
    ))
}

/// The everything server over streamable HTTP on a free loopback port.
pub struct McpHttpServer {
    pub url: String,
    child: Child,
}

impl McpHttpServer {
    pub async fn start() -> anyhow::Result<Self> {
        Self::start_on(free_port()?).await
    }

    /// The Python rich server (images, audio, an embedded resource,
    /// progress, structured results) over streamable HTTP; `None` when
    /// `RTC_TEST_PYTHON_MCP` is not set (`scripts/test` sets it).
    pub async fn start_python() -> anyhow::Result<Option<Self>> {
        Self::start_python_on(free_port()?, None).await
    }

    /// [`Self::start_python`] on `port`, as `variant` (`changed`: a tool
    /// with other parameters, see the script) when given.
    pub async fn start_python_on(port: u16, variant: Option<&str>) -> anyhow::Result<Option<Self>> {
        let Ok(python) = std::env::var("RTC_TEST_PYTHON_MCP") else {
            return Ok(None);
        };
        let script = repo_root().join("crates/testkit/fixtures/rich_mcp_server.py");
        let child = Command::new(python)
            .arg(script)
            .arg(port.to_string())
            .env("RICH_MCP_VARIANT", variant.unwrap_or(""))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .context("starting the Python MCP server")?;
        Self::listening(child, port).await.map(Some)
    }

    /// Start on a given port (e.g. to restart a server where it was).
    pub async fn start_on(port: u16) -> anyhow::Result<Self> {
        let (node, mut args) = everything_stdio_command()?;
        args[1] = "streamableHttp".to_owned();
        let child = Command::new(node)
            .args(&args)
            .env("PORT", port.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .context("starting the MCP everything server")?;
        Self::listening(child, port).await
    }

    /// `child`, once it accepts connections on `port` (within 10 s).
    async fn listening(child: Child, port: u16) -> anyhow::Result<Self> {
        let addr = format!("127.0.0.1:{port}");
        for _ in 0..200 {
            if tokio::net::TcpStream::connect(&addr).await.is_ok() {
                return Ok(Self {
                    url: format!("http://{addr}/mcp"),
                    child,
                });
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        bail!("the MCP server did not listen on {addr} within 10 s")
    }

    pub async fn stop(mut self) {
        let _ = self.child.kill().await;
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        url::Url::parse(&self.url)
            .ok()
            .and_then(|u| u.port())
            .unwrap_or(0)
    }
}
