//! One runtime on a throwaway SQLite file with the scripted mock model,
//! workspace `ws`, and helpers to create assistants and sessions and to
//! wait for events.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use rtc_llm::{OpenAiClient, ProviderConfig};
use rtc_protocol::{Assistant, CreateSessionParams, SessionEvent};
use rtc_runtime::{Provider, Runtime, RuntimeConfig};
use rtc_store::{MasterKey, SecretBox, Store};
use rtc_testkit::{MockLlm, MockReply};
use rtc_tools::net_guard::AddressPolicy;
use serde_json::Value;

/// The workspace every harness runs in.
pub const WS: &str = "ws";
/// How long a test waits for an event before it fails.
const PATIENCE: Duration = Duration::from_secs(20);

pub struct Harness {
    pub rt: Runtime,
    pub mock: MockLlm,
    pub store: Store,
    _dir: tempfile::TempDir,
}

/// The runtime's settings for tests: the mock as the only provider, local
/// tools allowed, small limits.
pub fn config(mock: &MockLlm) -> RuntimeConfig {
    let mut cfg = ProviderConfig::new(&mock.base_url, None);
    cfg.max_retries = 0;
    let provider = Provider {
        client: Arc::new(OpenAiClient::new(cfg, reqwest::Client::new())),
        default_model: "mock".into(),
        small_model: Some("mock-small".into()),
        max_tools: rtc_runtime::DEFAULT_MAX_TOOLS,
    };
    let mut config = RuntimeConfig::with_defaults(provider, AddressPolicy::AllowPrivate).unwrap();
    config.kernel.max_steps_per_turn = 8;
    config.mcp_call_timeout = Duration::from_secs(5);
    config.kernel.idle_session_ttl = Duration::from_secs(3600);
    config.loops.poll = Duration::from_millis(20);
    config
}

impl Harness {
    pub async fn start(script: Vec<MockReply>) -> Self {
        Self::with(script, |_| {}).await
    }

    /// A harness whose settings `adjust` changes first.
    pub async fn with(script: Vec<MockReply>, adjust: impl FnOnce(&mut RuntimeConfig)) -> Self {
        let mock = MockLlm::start(script).await.unwrap();
        Self::on(mock, adjust).await
    }

    /// A harness around a mock made by the caller (a responder).
    pub async fn on(mock: MockLlm, adjust: impl FnOnce(&mut RuntimeConfig)) -> Self {
        rtc_testkit::init_tls();
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("r.db").display());
        let store = Store::connect(&url, SecretBox::new(&MasterKey::generate()))
            .await
            .unwrap();
        store.migrate().await.unwrap();
        store.create_workspace(WS, "w", "key").await.unwrap();
        let mut config = config(&mock);
        adjust(&mut config);
        let rt = Runtime::new(store.clone(), config);
        // As `serve` does: recovery is over before anything is asked (the
        // scheduler would otherwise run it late, beside a test's session,
        // and count its running workflow action as cut off).
        rt.recover().await.unwrap();
        Self {
            rt,
            mock,
            store,
            _dir: dir,
        }
    }

    /// Store an assistant (JSON as the API takes it) under `id`.
    pub async fn assistant(&self, id: &str, body: Value) -> String {
        let assistant: Assistant = serde_json::from_value(body).unwrap();
        self.rt
            .validate_assistant(WS, &assistant, None)
            .await
            .unwrap();
        self.store
            .insert(WS, Some(id.into()), assistant)
            .await
            .unwrap();
        id.to_owned()
    }

    /// A new session of `assistant`.
    pub async fn session(&self, assistant: &str) -> String {
        let params = CreateSessionParams {
            assistant_id: Some(assistant.into()),
            ..Default::default()
        };
        self.rt.create_session(WS, params).await.unwrap().id
    }

    /// The session's events from the start, live.
    pub async fn events(&self, session: &str) -> Events {
        Events(self.rt.subscribe(WS, session, 0).await.unwrap().boxed())
    }

    /// The names of the tools the model was offered in request `n`.
    pub fn offered_tools(&self, n: usize) -> Vec<String> {
        self.mock.requests()[n]["tools"]
            .as_array()
            .map(|tools| {
                tools
                    .iter()
                    .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// A session's event stream.
pub struct Events(futures::stream::BoxStream<'static, SessionEvent>);

impl Events {
    /// `session`'s events on `rt` from the start, live.
    pub async fn of(rt: &Runtime, session: &str) -> Self {
        Self(rt.subscribe(WS, session, 0).await.unwrap().boxed())
    }

    /// The next event of `kind` that `matches`, skipping others; fails the
    /// test when none comes in time.
    pub async fn until(&mut self, kind: &str, matches: impl Fn(&Value) -> bool) -> SessionEvent {
        let wait = async {
            while let Some(ev) = self.0.next().await {
                if ev.kind() == kind && matches(&serde_json::to_value(&ev).unwrap()) {
                    return ev;
                }
            }
            panic!("the event stream ended before a `{kind}` event");
        };
        tokio::time::timeout(PATIENCE, wait)
            .await
            .unwrap_or_else(|_| panic!("no `{kind}` event within {PATIENCE:?}"))
    }

    /// The next event of `kind`.
    pub async fn next_of(&mut self, kind: &str) -> SessionEvent {
        self.until(kind, |_| true).await
    }

    /// Every event that comes within `window`.
    pub async fn collect_for(&mut self, window: Duration) -> Vec<SessionEvent> {
        let mut out = Vec::new();
        let deadline = tokio::time::sleep(window);
        tokio::pin!(deadline);
        loop {
            tokio::select! {
                () = &mut deadline => return out,
                ev = self.0.next() => match ev {
                    Some(ev) => out.push(ev),
                    None => return out,
                },
            }
        }
    }
}
