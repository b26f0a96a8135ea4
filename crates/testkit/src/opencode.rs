//! A real OpenCode server for the task-backend tests (design §4): the
//! binary `scripts/opencode` installs (`RTC_TEST_OPENCODE`), the scripted
//! answers of the mock model ids OpenCode is configured with, and an
//! operator-style `opencode serve` (hermetic environment of §3.3, temporary
//! HOME and working directory, provider `mock` pointing at a [`MockLlm`],
//! a password) started on a free loopback port.
//!
//! Without `RTC_TEST_OPENCODE` a test is skipped with a message saying so,
//! except under `CI`, where it fails.
//!
//! [`MockLlm`]: crate::MockLlm

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context, bail};
use serde_json::{Value, json};
use tokio::process::{Child, Command};

use crate::{MockReply, free_port};

/// The model ids the test server's `mock` provider lists.
pub const OPENCODE_MODELS: [&str; 5] = [
    "tools-0",
    "tools-0-words-20",
    "tools-0-delay-30s",
    "tools-0-delay-8s",
    "tools-1",
];

/// The text `tools-0-words-20` streams.
pub fn twenty_words() -> String {
    (0..20)
        .map(|i| format!("word{i}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The OpenCode binary, or None (after saying why) when the test should be
/// skipped. Panics under `CI`, and when the variable names no file.
pub fn opencode_binary() -> Option<PathBuf> {
    match std::env::var_os("RTC_TEST_OPENCODE").filter(|v| !v.is_empty()) {
        Some(path) => {
            let path = PathBuf::from(path);
            assert!(
                path.is_file(),
                "RTC_TEST_OPENCODE={} is not a file (run scripts/opencode)",
                path.display()
            );
            Some(path)
        }
        None if std::env::var_os("CI").is_some() => {
            panic!(
                "RTC_TEST_OPENCODE is not set: under CI the OpenCode tests must run (scripts/test sets it from scripts/opencode)"
            )
        }
        None => {
            eprintln!(
                "SKIPPED: RTC_TEST_OPENCODE is not set (run `export RTC_TEST_OPENCODE=$(scripts/opencode)`); this OpenCode test did not run"
            );
            None
        }
    }
}

/// Whether a chat request is OpenCode's title generation (the small-model
/// call it makes on a session's first prompt): it offers no tools.
fn is_title_request(request: &Value) -> bool {
    request
        .get("tools")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty)
}

/// The scripted answer of a request OpenCode sent for one of
/// [`OPENCODE_MODELS`] (or its title generation); None for other models,
/// so a test can combine it with a scripted speaking model in one mock:
/// `tools-0` says "done"; `tools-0-words-20` streams `word0 … word19`;
/// `tools-0-delay-30s` says "done" after 30 s (`tools-0-delay-8s` after
/// 8 s); `tools-1` first calls the
/// request's first tool with junk arguments, then says "done" once a tool
/// result is in the messages.
pub fn opencode_reply(request: &Value) -> Option<MockReply> {
    let model = request.get("model").and_then(Value::as_str)?;
    if !OPENCODE_MODELS.contains(&model) {
        return None;
    }
    if is_title_request(request) {
        return Some(MockReply::text("Task title"));
    }
    Some(match model {
        "tools-0-words-20" => MockReply::Text(twenty_words()),
        "tools-0-delay-30s" => {
            MockReply::Delayed(Duration::from_secs(30), Box::new(MockReply::text("done")))
        }
        "tools-0-delay-8s" => {
            MockReply::Delayed(Duration::from_secs(8), Box::new(MockReply::text("done")))
        }
        "tools-1" => {
            let messages = request.get("messages").and_then(Value::as_array);
            let has_result = messages.is_some_and(|m| {
                m.iter()
                    .any(|m| m.get("role").and_then(Value::as_str) == Some("tool"))
            });
            let first_tool = request
                .pointer("/tools/0/function/name")
                .and_then(Value::as_str);
            match first_tool {
                Some(tool) if !has_result => MockReply::call(tool, json!({"junk": true})),
                _ => MockReply::text("done"),
            }
        }
        _ => MockReply::text("done"),
    })
}

/// The OpenCode configuration of a test server whose provider `mock` is
/// the mock LLM at `llm_base_url` (e.g. `http://127.0.0.1:PORT/v1`).
pub fn opencode_test_config(llm_base_url: &str) -> Value {
    let models: serde_json::Map<String, Value> = OPENCODE_MODELS
        .iter()
        .map(|m| ((*m).to_owned(), json!({"name": m})))
        .collect();
    json!({
        "autoupdate": false,
        "share": "disabled",
        "model": "mock/tools-0",
        "small_model": "mock/tools-0",
        "enabled_providers": ["mock"],
        "permission": {"edit": "allow", "bash": "allow", "webfetch": "allow", "external_directory": "allow"},
        "provider": {"mock": {
            "npm": "@ai-sdk/openai-compatible",
            "name": "Mock LLM",
            "options": {"baseURL": llm_base_url, "apiKey": "sk-mock"},
            "models": models,
        }},
    })
}

/// The §3.3 environment of an offline, loopback-only server (without HOME,
/// configuration and password).
pub const OPENCODE_OFFLINE_ENV: [(&str, &str); 9] = [
    ("OPENCODE_DISABLE_MODELS_FETCH", "1"),
    ("OPENCODE_DISABLE_AUTOUPDATE", "1"),
    ("OPENCODE_DISABLE_SHARE", "1"),
    ("OPENCODE_DISABLE_LSP_DOWNLOAD", "1"),
    ("OPENCODE_DISABLE_DEFAULT_PLUGINS", "1"),
    ("OPENCODE_DISABLE_CLAUDE_CODE", "1"),
    ("OPENCODE_DISABLE_EXTERNAL_SKILLS", "1"),
    ("OPENCODE_DISABLE_PROJECT_CONFIG", "1"),
    ("npm_config_registry", "http://127.0.0.1:9/"),
];

/// An operator-style `opencode serve` on a free loopback port; killed when
/// dropped, its temporary HOME and working directory removed.
pub struct OpencodeServer {
    /// `http://127.0.0.1:PORT`.
    pub base_url: String,
    pub password: String,
    pub port: u16,
    /// The server's working directory (its default project).
    pub workdir: PathBuf,
    child: Child,
    _home: tempfile::TempDir,
    _work: tempfile::TempDir,
}

impl OpencodeServer {
    /// Start a server whose provider `mock` is the mock LLM at
    /// `llm_base_url`, and wait until `/global/health` answers.
    pub async fn start(binary: &Path, llm_base_url: &str) -> anyhow::Result<Self> {
        let home = tempfile::tempdir()?;
        let work = tempfile::tempdir()?;
        let port = free_port()?;
        let password = format!("oc-test-{}", rand::random::<u64>());
        let config = opencode_test_config(llm_base_url).to_string();
        let log = std::fs::File::create(home.path().join("server.log"))?;
        let mut command = Command::new(binary);
        command
            .args([
                "serve",
                "--port",
                &port.to_string(),
                "--hostname",
                "127.0.0.1",
            ])
            .current_dir(work.path())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", home.path())
            .env("OPENCODE_CONFIG_CONTENT", config)
            .env("OPENCODE_SERVER_PASSWORD", &password)
            .envs(OPENCODE_OFFLINE_ENV)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .kill_on_drop(true);
        let child = command.spawn().context("starting opencode serve")?;
        let mut server = Self {
            base_url: format!("http://127.0.0.1:{port}"),
            password,
            port,
            workdir: work.path().canonicalize()?,
            child,
            _home: home,
            _work: work,
        };
        server.wait_healthy().await?;
        Ok(server)
    }

    async fn wait_healthy(&mut self) -> anyhow::Result<()> {
        crate::init_tls();
        let http = reqwest::Client::builder()
            .no_proxy()
            .timeout(Duration::from_secs(1))
            .build()?;
        let url = format!("{}/global/health", self.base_url);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while tokio::time::Instant::now() < deadline {
            let ok = http
                .get(&url)
                .basic_auth("opencode", Some(&self.password))
                .send()
                .await
                .is_ok_and(|r| r.status().is_success());
            if ok {
                return Ok(());
            }
            if let Some(status) = self.child.try_wait()? {
                bail!("opencode serve exited early with {status}: {}", self.log());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        bail!("opencode serve was not healthy within 30 s: {}", self.log())
    }

    /// The server's output so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self._home.path().join("server.log")).unwrap_or_default()
    }

    /// Its process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// SIGKILL, at once (the "dies mid-task" scenario).
    /// Kill the server and keep its port closed while the returned guard
    /// lives (no other test's server may answer there meanwhile).
    pub async fn kill(&mut self) -> Option<crate::ClosedPort> {
        let _ = self.child.kill().await;
        crate::ClosedPort::at(self.port).ok()
    }

    /// SIGTERM, then SIGKILL after 5 s.
    pub async fn stop(mut self) {
        if let Some(pid) = self.child.id() {
            let _ = std::process::Command::new("kill")
                .args(["-TERM", &pid.to_string()])
                .status();
            if tokio::time::timeout(Duration::from_secs(5), self.child.wait())
                .await
                .is_ok()
            {
                return;
            }
        }
        let _ = self.child.kill().await;
    }
}
