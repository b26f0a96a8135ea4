//! Starting the binary and talking to it.

use std::collections::HashMap;
use std::path::PathBuf;

use reqwest::{Method, StatusCode};
use rtc_testkit::{Engine, ServerProcess, TestDatabase};
use serde_json::{Value, json};

/// Define one test per engine from one body taking a [`Server`].
macro_rules! on_both {
    ($name:ident, |$srv:ident| $body:block) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            async fn run($srv: crate::harness::Server) -> anyhow::Result<()> $body

            #[tokio::test]
            async fn sqlite() -> anyhow::Result<()> {
                crate::harness::with_server(rtc_testkit::Engine::Sqlite, Default::default(), run).await
            }

            #[tokio::test]
            async fn postgres() -> anyhow::Result<()> {
                crate::harness::with_server(rtc_testkit::Engine::Postgres, Default::default(), run).await
            }
        }
    };
}
pub(crate) use on_both;

/// One test per engine from `async fn body(engine) -> Result` of the
/// same name in the calling module.
macro_rules! both {
    ($name:ident) => {
        mod $name {
            #[tokio::test]
            async fn sqlite() -> anyhow::Result<()> {
                super::$name(rtc_testkit::Engine::Sqlite).await
            }

            #[tokio::test]
            async fn postgres() -> anyhow::Result<()> {
                super::$name(rtc_testkit::Engine::Postgres).await
            }
        }
    };
}
pub(crate) use both;

/// The binary under test: `RTC_TEST_BINARY` when set (the hardening
/// campaign runs the release build), else the one cargo built.
pub fn binary() -> PathBuf {
    std::env::var_os("RTC_TEST_BINARY").map_or_else(
        || PathBuf::from(env!("CARGO_BIN_EXE_rtc-agent")),
        PathBuf::from,
    )
}

/// A running server with its database and data folder.
pub struct Server {
    pub process: ServerProcess,
    pub db: TestDatabase,
    pub data_dir: tempfile::TempDir,
    pub client: reqwest::Client,
}

pub async fn start(engine: Engine, env: HashMap<String, String>) -> anyhow::Result<Option<Server>> {
    let Some(db) = TestDatabase::new(engine).await? else {
        return Ok(None);
    };
    let data_dir = tempfile::tempdir()?;
    let process = ServerProcess::start(&binary(), &db.url, data_dir.path(), &env).await?;
    Ok(Some(Server {
        process,
        db,
        data_dir,
        client: rtc_testkit::api_client(),
    }))
}

pub async fn with_server<F, Fut>(
    engine: Engine,
    env: HashMap<String, String>,
    f: F,
) -> anyhow::Result<()>
where
    F: FnOnce(Server) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<()>>,
{
    let Some(server) = start(engine, env).await? else {
        return Ok(());
    };
    f(server).await
}

/// A response: status and JSON body (`Null` when empty or not JSON).
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub body: Value,
    pub text: String,
}

impl Reply {
    /// Assert an API error with this status, code and (optionally) field.
    #[track_caller]
    pub fn assert_error(&self, status: u16, code: &str, field: Option<&str>) {
        assert_eq!(self.status.as_u16(), status, "{}", self.text);
        assert_eq!(self.body["error"]["code"], code, "{}", self.text);
        if let Some(f) = field {
            assert_eq!(self.body["error"]["field"], f, "{}", self.text);
        }
        assert!(
            self.body["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty()),
            "{}",
            self.text
        );
    }

    #[track_caller]
    pub fn assert_status(&self, status: u16) -> &Value {
        assert_eq!(self.status.as_u16(), status, "{}", self.text);
        &self.body
    }
}

/// A caller with one bearer token (and optionally the admin's workspace header).
#[derive(Clone)]
pub struct Api {
    pub base: String,
    pub token: Option<String>,
    pub workspace_header: Option<String>,
    pub client: reqwest::Client,
}

impl Api {
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> anyhow::Result<Reply> {
        let mut req = self.client.request(method, format!("{}{path}", self.base));
        if let Some(t) = &self.token {
            req = req.bearer_auth(t);
        }
        if let Some(w) = &self.workspace_header {
            req = req.header("X-Rtc-Workspace", w);
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await?;
        let status = resp.status();
        let text = resp.text().await?;
        let body = serde_json::from_str(&text).unwrap_or(Value::Null);
        assert_ne!(status.as_u16(), 500, "internal server error: {text}");
        Ok(Reply { status, body, text })
    }

    pub async fn get(&self, path: &str) -> anyhow::Result<Reply> {
        self.call(Method::GET, path, None).await
    }
    pub async fn post(&self, path: &str, body: Value) -> anyhow::Result<Reply> {
        self.call(Method::POST, path, Some(body)).await
    }
    pub async fn put(&self, path: &str, body: Value) -> anyhow::Result<Reply> {
        self.call(Method::PUT, path, Some(body)).await
    }
    pub async fn delete(&self, path: &str) -> anyhow::Result<Reply> {
        self.call(Method::DELETE, path, None).await
    }

    /// Create and return the resource, asserting 201.
    pub async fn create(&self, path: &str, body: Value) -> anyhow::Result<Value> {
        let r = self.post(path, body).await?;
        Ok(r.assert_status(201).clone())
    }
}

impl Server {
    pub fn anonymous(&self) -> Api {
        Api {
            base: self.process.base_url.clone(),
            token: None,
            workspace_header: None,
            client: self.client.clone(),
        }
    }

    pub fn admin(&self) -> Api {
        Api {
            token: Some(self.process.admin_token.clone()),
            ..self.anonymous()
        }
    }

    /// The admin token acting inside a workspace.
    pub fn admin_in(&self, workspace: &str) -> Api {
        Api {
            workspace_header: Some(workspace.to_owned()),
            ..self.admin()
        }
    }

    /// `kill -9` the server, then start it again on the same database and
    /// data folder (it listens on a new port).
    pub async fn kill_and_restart(self, env: &HashMap<String, String>) -> anyhow::Result<Self> {
        let Self {
            process,
            db,
            data_dir,
            client,
        } = self;
        process.kill().await;
        let process = ServerProcess::start(&binary(), &db.url, data_dir.path(), env).await?;
        Ok(Self {
            process,
            db,
            data_dir,
            client,
        })
    }

    /// A new workspace and a client holding its key.
    pub async fn workspace(&self, name: &str) -> anyhow::Result<(String, Api)> {
        let ws = self
            .admin()
            .create("/v1/workspaces", json!({"name": name}))
            .await?;
        let key = ws["apiKey"].as_str().unwrap_or_default().to_owned();
        Ok((
            ws["id"].as_str().unwrap_or_default().to_owned(),
            Api {
                token: Some(key),
                ..self.anonymous()
            },
        ))
    }
}

/// Assert every key of `expected` appears in `actual` with the same value
/// (recursively for objects).
#[track_caller]
pub fn assert_contains(actual: &Value, expected: &Value) {
    match (actual, expected) {
        (Value::Object(a), Value::Object(e)) => {
            for (k, v) in e {
                let got = a
                    .get(k)
                    .unwrap_or_else(|| panic!("missing `{k}` in {actual}"));
                assert_contains(got, v);
            }
        }
        _ => assert_eq!(actual, expected),
    }
}
