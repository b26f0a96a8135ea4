//! The conversation runtime: the composition root that puts the session
//! kernel (`rtc-session`) together with the features (`features/`: the
//! LLM's built-in tools and what they keep, workflows, task backends,
//! realtime) and the executors of `rtc-tools`, behind the [`Runtime`]
//! API the server calls.
//!
//! A session lives in the database; while it is used, a
//! [`session::SessionCtx`] holds its configuration snapshot, variables,
//! event log and broker. A turn runs as one task per session, cancelled
//! cooperatively when a new user message interrupts it (R-RN-2).

// The kernel's modules, under the paths the runtime has always used.
pub(crate) use rtc_session::{
    broker, cluster, error, events, extensions, history, mocks, registry, small_model, variables,
};
mod builtins;
mod composition;
mod conversation_tests;
mod executor;
mod fair_gate;
mod feature;
mod features;
mod host;
mod providers;
#[cfg(test)]
mod registry_tests;
mod session;
mod speech_interfaces;
mod start;
mod test_suites;
#[cfg(test)]
mod test_support;
mod tool;
mod tool_test;
mod usage;

use std::sync::Arc;
use std::time::Duration;

use rtc_store::Store;
use rtc_tools::http_exec::HttpExecutor;
use rtc_tools::mcp::McpConnector;
use rtc_tools::web_fetch::WebFetcher;
use rtc_tools::web_search::WebSearch;

pub use broker::{ClientError, ClientReply, schema_hash};
pub use cluster::ClusterSettings;
pub use composition::{AssistantDeps, McpToolsError, assistant_context, find_interface};
pub use conversation_tests::RUNS_KEPT;
pub use error::RuntimeError;
pub use fair_gate::TestQueueLimits;
pub use features::FeatureLimits;
pub use features::loops::service::LoopSettings;
pub use features::realtime::{HOST_RATES, MAX_AUDIO_FRAME_BYTES, RealtimeLink};
pub use features::sub_agents::service::SubAgentLimits;
pub use features::voice::VoiceLink;
pub use providers::{DEFAULT_PROVIDER, check_provider, describe_provider};
pub use rtc_session::limits::SessionLimits;
pub use rtc_session::telemetry::SPAN_TARGET;
pub use rtc_session::{DEFAULT_MAX_TOOLS, KernelConfig, Provider, ShutdownReport};
pub use session::{ClientConnection, SessionConfig};
pub use speech_interfaces::{CHECK_WITHIN as SPEECH_CHECK_WITHIN, espeak_installed};
pub use test_suites::SUITE_RUNS_KEPT;

pub(crate) use host::Inner;

/// Settings of the runtime.
#[derive(Clone)]
pub struct RuntimeConfig {
    /// The kernel's settings: providers, steps per turn, idle contexts,
    /// this instance among the others, session bounds, telemetry.
    pub kernel: KernelConfig,
    pub http: HttpExecutor,
    pub mcp: McpConnector,
    /// Time limit of one MCP tool call.
    pub mcp_call_timeout: Duration,
    /// webSearch engines; the tool exists only when set (R-WS-2).
    pub web_search: Option<Arc<WebSearch>>,
    /// webFetch; the tool exists only when set (R-WFF-5).
    pub web_fetch: Option<WebFetcher>,
    /// The loop scheduler (R-LP).
    pub loops: LoopSettings,
    /// Limits of sub-agent trees (R-SA-7).
    pub sub_agents: SubAgentLimits,
    /// The features' own bounds (R-SEC-7): workflow walks, realtime
    /// connections, task transcripts.
    pub feature_limits: FeatureLimits,
    /// Where the server keeps its files (OpenCode servers it starts get
    /// their homes under it); `None` uses a temporary folder.
    pub data_dir: Option<std::path::PathBuf>,
    /// Conversation test runs (R-BX-10): at once in this process, at once
    /// per workspace, admitted per workspace (R-SEC-7).
    pub tests: TestQueueLimits,
    /// What is read from a server a tenant names (an OpenCode `baseUrl`,
    /// a realtime provider): bodies, lines, messages, silence (R-SEC-7).
    pub upstream: rtc_tools::upstream::UpstreamLimits,
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
            kernel: KernelConfig::with_defaults(default_provider),
            http: HttpExecutor::new(policy, rtc_tools::http_exec::DEFAULT_MAX_RESPONSE_BYTES)?,
            mcp: McpConnector {
                policy,
                timeout: Duration::from_secs(30),
            },
            mcp_call_timeout: Duration::from_secs(60),
            web_search: None,
            web_fetch: None,
            loops: LoopSettings::default(),
            sub_agents: SubAgentLimits::default(),
            feature_limits: FeatureLimits::default(),
            data_dir: None,
            tests: TestQueueLimits::default(),
            upstream: rtc_tools::upstream::UpstreamLimits::default(),
        })
    }
}

/// Whether `name` belongs to a platform tool, so no tool resource may take
/// it: every name of the tool registry (built-ins, the task tools).
pub fn is_reserved_tool_name(name: &str) -> bool {
    static RESERVED: std::sync::LazyLock<std::collections::BTreeSet<String>> =
        std::sync::LazyLock::new(|| registry::reserved_names(&features::registered()));
    RESERVED.contains(name)
}

/// The runtime; cheap to clone.
#[derive(Clone)]
pub struct Runtime {
    pub(crate) inner: Arc<Inner>,
}

impl Runtime {
    /// Must be called inside a Tokio runtime: it starts the journal writer
    /// and the kernel's background work.
    pub fn new(store: Store, config: RuntimeConfig) -> Self {
        Self {
            inner: host::Inner::build(store, config),
        }
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

    /// The configuration-dependent built-ins this server can offer.
    pub fn server_offers(&self) -> rtc_protocol::ServerOffers {
        rtc_protocol::ServerOffers {
            web_search: self.inner.config.web_search.is_some(),
            web_fetch: self.inner.config.web_fetch.is_some(),
        }
    }

    /// Names of the configured providers.
    pub fn provider_names(&self) -> std::collections::BTreeSet<String> {
        self.inner.settings.providers.keys().cloned().collect()
    }

    /// What one `updateState` may hold, for save-time checks.
    pub fn update_bounds(&self) -> rtc_core::bounds::UpdateBounds {
        self.inner.settings.limits.update
    }

    /// Run `work` to its end on the runtime's supervised tasks even when
    /// the caller stops waiting: the server runs the requests that change
    /// a session this way, so a client that goes away never leaves one
    /// half done (see `rtc_session::Kernel::to_the_end`).
    pub async fn to_the_end<T: Send + 'static>(
        &self,
        what: &str,
        work: impl Future<Output = T> + Send + 'static,
    ) -> Result<T, RuntimeError> {
        self.inner.to_the_end(what, work).await
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
        self.inner.shutdown(grace).await
    }

    /// Whether [`Self::shutdown`] has begun.
    pub fn is_shutting_down(&self) -> bool {
        self.inner.tasks.is_closed()
    }
}
