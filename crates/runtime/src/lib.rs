//! The conversation runtime: sessions, turns against the model, tool
//! execution through bindings, platform built-ins, the event log and the
//! client-tool broker. The only crate that spawns long-lived tasks.
//!
//! A session lives in the database; while it is used, a [`session::SessionCtx`]
//! holds its configuration snapshot, variables, event log and broker. A turn
//! runs as one task per session, cancelled cooperatively when a new user
//! message interrupts it (R-RN-2).

mod background;
// The kernel's modules, under the paths the runtime has always used.
pub(crate) use rtc_session::{broker, cluster, config_cache, error, events, extensions, journal};
mod builtins;
mod composition;
mod control;
mod conversation_tests;
mod fair_gate;
mod feature;
mod features;
mod history;
mod lifecycle;
mod limits;
mod ownership;
mod providers;
mod registry;
mod remote_clients;
mod scheduler;
mod session;
mod small_model;
mod start;
mod telemetry;
mod test_mode;
#[cfg(test)]
mod test_support;
mod tool;
mod turn;
mod variables;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use parking_lot::Mutex;
use std::time::Duration;

use rtc_core::llm::LlmClient;
use rtc_store::Store;
use rtc_tools::http_exec::HttpExecutor;
use rtc_tools::mcp::{McpConnector, McpPool};
use rtc_tools::web_fetch::WebFetcher;
use rtc_tools::web_search::WebSearch;
use tokio_util::task::TaskTracker;

pub use broker::{ClientError, ClientReply, schema_hash};
pub use cluster::ClusterSettings;
pub use composition::{AssistantDeps, McpToolsError, assistant_context, find_interface};
pub use conversation_tests::RUNS_KEPT;
pub use error::RuntimeError;
pub use fair_gate::TestQueueLimits;
pub use features::loops::service::LoopSettings;
pub use features::realtime::{HOST_RATES, MAX_AUDIO_FRAME_BYTES, RealtimeLink};
pub use features::sub_agents::service::SubAgentLimits;
pub use limits::SessionLimits;
pub use providers::{DEFAULT_PROVIDER, check_provider, describe_provider};
pub use session::{ClientConnection, SessionConfig};
pub use telemetry::SPAN_TARGET;

/// A named chat model provider, its default model, and the small model it
/// serves for judges, `llm` leaves and extraction (see `small_model`).
#[derive(Clone)]
pub struct Provider {
    pub client: Arc<dyn LlmClient>,
    pub default_model: String,
    /// For the default provider `RTC_SMALL_MODEL`; a named provider without
    /// one leaves small-model calls to the default provider.
    pub small_model: Option<String>,
}

/// Settings of the runtime.
#[derive(Clone)]
pub struct RuntimeConfig {
    /// The provider used when an assistant names none.
    pub default_provider: Provider,
    /// Providers by name (`llm.provider` of an assistant).
    pub providers: BTreeMap<String, Provider>,
    /// Most model calls in one turn (R-RN-1).
    pub max_steps_per_turn: usize,
    pub http: HttpExecutor,
    pub mcp: McpConnector,
    /// Time limit of one MCP tool call.
    pub mcp_call_timeout: Duration,
    /// How long an unused session context stays in memory (R-PF-2); it is
    /// loaded again from the store when the session is used.
    pub idle_session_ttl: Duration,
    /// webSearch engines; the tool exists only when set (R-WS-2).
    pub web_search: Option<Arc<WebSearch>>,
    /// webFetch; the tool exists only when set (R-WFF-5).
    pub web_fetch: Option<WebFetcher>,
    /// The loop scheduler (R-LP).
    pub loops: LoopSettings,
    /// This instance among the others: its name and lease (R-PF-4).
    pub cluster: ClusterSettings,
    /// Limits of sub-agent trees (R-SA-7).
    pub sub_agents: SubAgentLimits,
    /// Bounds of sessions, messages and events (R-SEC-6).
    pub limits: SessionLimits,
    /// Where the server keeps its files (OpenCode servers it starts get
    /// their homes under it); `None` uses a temporary folder.
    pub data_dir: Option<std::path::PathBuf>,
    /// Conversation test runs (R-BX-10): at once in this process, at once
    /// per workspace, admitted per workspace (R-SEC-7).
    pub tests: TestQueueLimits,
    /// What is read from a server a tenant names (an OpenCode `baseUrl`,
    /// a realtime provider): bodies, lines, messages, silence (R-SEC-7).
    pub upstream: rtc_tools::upstream::UpstreamLimits,
    /// Record message content on trace spans (`RTC_OTEL_CAPTURE_CONTENT`).
    pub capture_content: bool,
}

impl RuntimeConfig {
    /// `default_provider` as the only provider, outbound requests under
    /// `policy`, and the server's defaults for the rest (16 model calls
    /// per turn, 60 s MCP calls, 300 s idle contexts, no web tools, the
    /// default loop and sub-agent settings): for embedding the runtime and
    /// for tests, which change the fields they care about.
    pub fn with_defaults(
        default_provider: Provider,
        policy: rtc_tools::net_guard::AddressPolicy,
    ) -> Result<Self, rtc_tools::http_exec::HttpToolError> {
        Ok(Self {
            default_provider,
            providers: BTreeMap::new(),
            max_steps_per_turn: 16,
            http: HttpExecutor::new(policy, rtc_tools::http_exec::DEFAULT_MAX_RESPONSE_BYTES)?,
            mcp: McpConnector {
                policy,
                timeout: Duration::from_secs(30),
            },
            mcp_call_timeout: Duration::from_secs(60),
            idle_session_ttl: Duration::from_secs(300),
            web_search: None,
            web_fetch: None,
            loops: LoopSettings::default(),
            cluster: ClusterSettings::default(),
            sub_agents: SubAgentLimits::default(),
            limits: SessionLimits::default(),
            data_dir: None,
            tests: TestQueueLimits::default(),
            upstream: rtc_tools::upstream::UpstreamLimits::default(),
            capture_content: false,
        })
    }
}

pub(crate) struct Inner {
    pub store: Store,
    pub journal: journal::Journal,
    pub config: RuntimeConfig,
    pub mcp_pool: McpPool,
    pub sessions: Mutex<HashMap<String, Arc<session::SessionCtx>>>,
    /// The configurations the contexts in `sessions` share.
    pub configs: config_cache::ConfigCache,
    pub tasks: TaskTracker,
    /// How many turns recovery marked interrupted, once it has run.
    pub recovered: tokio::sync::OnceCell<usize>,
    /// Whether this instance's heartbeat row is written (shared stores).
    pub registered: std::sync::atomic::AtomicBool,
    /// Client connections and calls across instances.
    pub remote_clients: remote_clients::RemoteClients,
    /// Slots of conversation test runs (`RuntimeConfig::tests`).
    pub test_slots: Arc<fair_gate::FairGate>,
    /// Periodic loops and listeners, stopped at shutdown.
    pub background: background::Background,
    /// The features of the lifecycle, in the order of their hooks.
    pub features: Vec<Arc<dyn feature::Feature>>,
    /// What the features keep across sessions, by type (each registers its
    /// own in `Feature::services`; see [`Inner::service`]).
    pub services: extensions::Extensions,
}

impl Inner {
    /// The service of type `T` a feature registered at start.
    pub(crate) fn service<T: Send + Sync + 'static>(&self) -> &T {
        self.services.get::<T>().unwrap_or_else(|| {
            unreachable!(
                "{} is registered by its feature at start",
                std::any::type_name::<T>()
            )
        })
    }
}

/// Whether `name` belongs to a platform tool, so no tool resource may take
/// it: every name of the tool registry (built-ins, the task tools).
pub fn is_reserved_tool_name(name: &str) -> bool {
    registry::is_reserved(name)
}

/// What a graceful shutdown did with the turns that were running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShutdownReport {
    /// Turns that finished within the grace period.
    pub finished: usize,
    /// Turns cancelled at the end of it, with their state recorded.
    pub checkpointed: usize,
}

/// The runtime; cheap to clone.
#[derive(Clone)]
pub struct Runtime {
    pub(crate) inner: Arc<Inner>,
}

impl Runtime {
    /// Must be called inside a Tokio runtime: it starts the journal writer
    /// and the sweeper of idle sessions.
    pub fn new(store: Store, config: RuntimeConfig) -> Self {
        let test_slots = fair_gate::FairGate::new(config.tests);
        let features = features::registered();
        let mut services = extensions::Extensions::default();
        for feature in &features {
            feature.services(&config, &mut services);
        }
        let runtime = Self {
            inner: Arc::new(Inner {
                journal: journal::Journal::start(store.clone(), Some(&config.cluster.instance)),
                store,
                config,
                mcp_pool: McpPool::default(),
                sessions: Mutex::default(),
                configs: config_cache::ConfigCache::default(),
                tasks: TaskTracker::new(),
                recovered: tokio::sync::OnceCell::new(),
                registered: std::sync::atomic::AtomicBool::new(false),
                remote_clients: remote_clients::RemoteClients::default(),
                test_slots,
                background: background::Background::default(),
                features,
                services,
            }),
        };
        session::spawn_sweeper(&runtime.inner);
        scheduler::spawn_scheduler(&runtime.inner);
        session::spawn_listener(&runtime.inner);
        control::spawn_control_listener(&runtime.inner);
        ownership::spawn_heartbeat(&runtime.inner);
        remote_clients::spawn_client_rows(&runtime.inner);
        runtime
    }

    /// Drop the in-memory contexts of sessions unused for the idle TTL;
    /// returns how many were dropped. Also runs periodically by itself.
    pub fn evict_idle_sessions(&self) -> usize {
        self.inner.evict_idle(rtc_store::now_millis())
    }

    /// How many session contexts are in memory.
    pub fn live_sessions(&self) -> usize {
        self.inner.sessions.lock().len()
    }

    /// Which outbound addresses the operator allows (the MCP connector's
    /// policy, the same for every outbound client).
    pub fn address_policy(&self) -> rtc_tools::net_guard::AddressPolicy {
        self.inner.config.mcp.policy
    }

    /// Names of the configured providers.
    pub fn provider_names(&self) -> std::collections::BTreeSet<String> {
        self.inner.config.providers.keys().cloned().collect()
    }

    /// What one `updateState` may hold, for save-time checks.
    pub fn update_bounds(&self) -> rtc_core::bounds::UpdateBounds {
        self.inner.config.limits.update
    }

    /// After a restart: turns that were running are marked interrupted
    /// (R-RN-4); their sessions stay usable. Sub-agents cut off go on
    /// working and undelivered inbox items are delivered (R-BX-3). Returns
    /// how many turns were marked.
    ///
    /// An embedder awaits it before serving requests (`serve` does): a
    /// user turn started earlier could be marked interrupted by it.
    /// Recovery runs once per runtime, and before anything starts a turn by
    /// itself: the scheduler's loop ticks and goal takeovers wait for it
    /// (and run it if the embedder has not yet). A tick started first would
    /// run beside the turn the store still shows as running, and recovery
    /// would then record that turn's end in the middle of the tick's turn
    /// (or find nothing left to close).
    pub async fn recover(&self) -> Result<usize, RuntimeError> {
        self.inner.recover().await
    }

    /// Graceful shutdown: no new turn starts by itself (loop ticks, goal
    /// continuations and inbox deliveries wait in the store for the next
    /// start); running turns get `grace` to finish; those still running
    /// then are checkpointed (cancelled: finished calls keep their
    /// results, the rest are recorded as cancelled, the turn as
    /// interrupted); the journal is flushed.
    pub async fn shutdown(&self, grace: Duration) -> ShutdownReport {
        let inner = &self.inner;
        inner.tasks.close();
        for feature in &inner.features {
            feature.shutdown_begins(inner);
        }
        let running = self.running_turns().await;
        let in_time = tokio::time::timeout(grace, inner.tasks.wait())
            .await
            .is_ok();
        let mut checkpointed = 0;
        if !in_time {
            let ctxs: Vec<_> = inner.sessions.lock().values().cloned().collect();
            for ctx in ctxs {
                if ctx.cancel_turn().await {
                    checkpointed += 1;
                }
            }
            let _ = tokio::time::timeout(Duration::from_secs(5), inner.tasks.wait()).await;
        }
        for feature in &inner.features {
            feature.shutdown(inner).await;
        }
        inner.journal.flush().await;
        inner.background.stop(Duration::from_secs(5)).await;
        // What is left (inbox items, goals) is adopted by the other
        // instances at once rather than after a lease.
        if inner.store.allows_several_instances()
            && let Err(e) = inner
                .store
                .remove_instance(&inner.config.cluster.instance)
                .await
        {
            tracing::warn!(error = %e, "removing this instance's heartbeat failed");
        }
        ShutdownReport {
            finished: running.saturating_sub(checkpointed),
            checkpointed,
        }
    }

    /// How many turns are running in this process.
    async fn running_turns(&self) -> usize {
        let ctxs: Vec<_> = self.inner.sessions.lock().values().cloned().collect();
        let mut n = 0;
        for ctx in ctxs {
            if ctx
                .turn
                .lock()
                .await
                .as_ref()
                .is_some_and(|t| !t.handle.is_finished())
            {
                n += 1;
            }
        }
        n
    }

    /// Whether [`Self::shutdown`] has begun.
    pub fn is_shutting_down(&self) -> bool {
        self.inner.tasks.is_closed()
    }
}
