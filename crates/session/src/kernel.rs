//! The kernel's central type: [`Kernel`] holds what every session and
//! every feature shares (the store and journal, the live contexts, the
//! features and their services, the tool registry, the background work)
//! and starts and stops it. Its methods live beside the concern they
//! serve: contexts (`contexts.rs`), history (`history.rs`), the turn
//! lifecycle (`lifecycle.rs`), the model loop (`turn.rs`) and tool calls
//! (`registry/`); the cluster layer is [`crate::ownership::Cluster`] and
//! [`crate::remote_clients::RemoteClients`].
//!
//! A [`Host`] embeds the kernel (the runtime's composition root does): the
//! host derefs to its `Kernel`, features receive the host in their hooks
//! and tools in their calls, so a feature's own methods on the host sit
//! beside the kernel's. The kernel holds its host weakly and never names
//! what it holds beyond that.

use std::collections::{BTreeMap, HashMap};
use std::ops::Deref;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::Mutex;
use rtc_core::llm::LlmClient;
use rtc_store::Store;
use tokio_util::task::TaskTracker;
use tracing::Instrument;

use crate::RuntimeError;
use crate::background::Background;
use crate::cluster::ClusterSettings;
use crate::config_cache::ConfigCache;
use crate::context::SessionCtx;
use crate::extensions::Extensions;
use crate::feature::Feature;
use crate::journal::Journal;
use crate::limits::SessionLimits;
use crate::registry::{BuiltIns, RemoteTools};
use crate::remote_clients::RemoteClients;

/// The live session contexts, by session id.
pub type Contexts = Mutex<HashMap<String, Arc<SessionCtx>>>;

/// What embeds a kernel: it derefs to its [`Kernel`] and carries the
/// configuration its features read.
pub trait Host: Deref<Target = Kernel<Self>> + Send + Sync + Sized + 'static {
    /// The features' configuration.
    type Config: Send + Sync;

    /// The features' configuration.
    fn config(&self) -> &Self::Config;
}

/// A named chat model provider, its default model, and the small model it
/// serves for judges, `llm` leaves and extraction (see `small_model`).
#[derive(Clone)]
pub struct Provider {
    pub client: Arc<dyn LlmClient>,
    pub default_model: String,
    /// For the default provider `RTC_SMALL_MODEL`; a named provider without
    /// one leaves small-model calls to the default provider.
    pub small_model: Option<String>,
    /// Most functions one request may offer its models (OpenAI refuses
    /// more than 128): an assistant that could offer more is refused.
    pub max_tools: usize,
}

/// What a provider accepts when its configuration does not say: the
/// OpenAI API's bound on the functions of one request.
pub const DEFAULT_MAX_TOOLS: usize = 128;

/// The kernel's settings.
#[derive(Clone)]
pub struct KernelConfig {
    /// The provider used when an assistant names none.
    pub default_provider: Provider,
    /// Providers by name (`llm.provider` of an assistant).
    pub providers: BTreeMap<String, Provider>,
    /// Most model calls in one turn (R-RN-1).
    pub max_steps_per_turn: usize,
    /// How long an unused session context stays in memory (R-PF-2); it is
    /// loaded again from the store when the session is used.
    pub idle_session_ttl: Duration,
    /// This instance among the others: its name and lease (R-PF-4).
    pub cluster: ClusterSettings,
    /// Bounds of sessions, messages and events (R-SEC-6).
    pub limits: SessionLimits,
    /// Record message content on trace spans (`RTC_OTEL_CAPTURE_CONTENT`).
    pub capture_content: bool,
    /// Label model usage counters with the workspace (only when
    /// `/metrics` needs a token: a public one shows totals).
    pub metrics_by_workspace: bool,
}

impl KernelConfig {
    /// `default_provider` as the only provider and the server's defaults
    /// for the rest (16 model calls per turn, 300 s idle contexts).
    pub fn with_defaults(default_provider: Provider) -> Self {
        Self {
            default_provider,
            providers: BTreeMap::new(),
            max_steps_per_turn: 16,
            idle_session_ttl: Duration::from_secs(300),
            cluster: ClusterSettings::default(),
            limits: SessionLimits::default(),
            capture_content: false,
            metrics_by_workspace: false,
        }
    }
}

/// What a graceful shutdown did with the turns that were running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShutdownReport {
    /// Turns that finished within the grace period.
    pub finished: usize,
    /// Turns cancelled at the end of it, with their state recorded.
    pub checkpointed: usize,
}

/// What the kernel is built from, besides its host.
pub struct KernelParts<H> {
    pub store: Store,
    pub settings: KernelConfig,
    /// The features, in the order of their hooks.
    pub features: Vec<Arc<dyn Feature<H>>>,
    /// What the features keep across sessions (see [`Feature::services`]).
    pub services: Extensions,
    /// How HTTP and MCP tools run.
    pub remote_tools: Arc<dyn RemoteTools>,
}

/// The session kernel (see the module doc).
pub struct Kernel<H> {
    host: Weak<H>,
    pub store: Store,
    pub journal: Journal,
    pub settings: KernelConfig,
    pub sessions: Arc<Contexts>,
    /// The configurations the contexts in `sessions` share.
    pub configs: ConfigCache,
    /// Turns, and work that shutdown waits for.
    pub tasks: TaskTracker,
    /// How many turns recovery marked interrupted, once it has run.
    pub(crate) recovered: tokio::sync::OnceCell<usize>,
    /// Whether this instance's heartbeat row is written (shared stores).
    pub(crate) registered: AtomicBool,
    /// Client connections and calls across instances.
    pub remote_clients: Arc<RemoteClients>,
    /// Periodic loops and listeners, stopped at shutdown.
    pub background: Background,
    /// The features, in the order of their hooks.
    pub features: Vec<Arc<dyn Feature<H>>>,
    /// What the features keep across sessions, by type (see
    /// [`Kernel::service`]).
    pub services: Extensions,
    /// The features' tools and the reserved names.
    pub(crate) built_ins: BuiltIns<H>,
    /// What sessions offer their models, prepared once per snapshot.
    pub(crate) prepared_tools: crate::registry::prepared::PreparedTools<H>,
    pub(crate) remote_tools: Arc<dyn RemoteTools>,
    /// Model usage not yet written.
    pub usage: crate::usage::UsageLedger,
    /// Workspaces' quotas as last read.
    pub quotas: crate::quota::Quotas,
}

impl<H: Host> Kernel<H> {
    /// A kernel for the host `host` will point to (build the host with
    /// `Arc::new_cyclic`), then call [`Self::start`]. Must be called inside
    /// a Tokio runtime: it starts the journal's writer.
    pub fn new(host: Weak<H>, parts: KernelParts<H>) -> Self {
        let KernelParts {
            store,
            settings,
            features,
            services,
            remote_tools,
        } = parts;
        let sessions = Arc::new(Contexts::default());
        let usage = crate::usage::UsageLedger::new(settings.metrics_by_workspace);
        Self {
            host,
            journal: Journal::start(store.clone(), Some(&settings.cluster.instance)),
            remote_clients: Arc::new(RemoteClients::new(
                store.clone(),
                sessions.clone(),
                settings.cluster.instance.clone(),
            )),
            store,
            settings,
            sessions,
            configs: ConfigCache::default(),
            tasks: TaskTracker::new(),
            recovered: tokio::sync::OnceCell::new(),
            registered: AtomicBool::new(false),
            background: Background::default(),
            built_ins: BuiltIns::of(&features),
            prepared_tools: crate::registry::prepared::PreparedTools::default(),
            features,
            services,
            remote_tools,
            usage,
            quotas: crate::quota::Quotas::default(),
        }
    }

    /// Start the background work: the idle sweeper, the scheduler of the
    /// features' periodic work, the listeners of other instances' writes
    /// and requests, the heartbeats.
    pub fn start(&self) {
        let host = self.host();
        crate::contexts::spawn_sweeper(&host);
        crate::scheduler::spawn_scheduler(&host);
        crate::contexts::spawn_listener(&host);
        crate::control::spawn_control_listener(&host);
        crate::ownership::spawn_heartbeat(&host);
        crate::remote_clients::spawn_client_rows(&host);
    }

    /// The host, for what outlives the call (a turn's task, a hook).
    pub fn host(&self) -> Arc<H> {
        // The kernel is a field of its host, which lives in an `Arc`: while
        // a method of the kernel runs, the host is alive.
        self.host
            .upgrade()
            .unwrap_or_else(|| unreachable!("a kernel's host outlives its calls"))
    }

    /// Run `work` to its end on a task of [`Self::tasks`], even when the
    /// caller stops waiting (a request whose client went away, a task
    /// driver being dropped): work stopped halfway, such as a message
    /// stored or delivered with no turn started to answer it, leaves a
    /// session stuck. It runs in the caller's span. `what` names the work
    /// in the error of a panic.
    pub async fn to_the_end<T: Send + 'static>(
        &self,
        what: &str,
        work: impl Future<Output = T> + Send + 'static,
    ) -> Result<T, RuntimeError> {
        self.tasks
            .spawn(work.in_current_span())
            .await
            .map_err(|e| RuntimeError::Internal(format!("{what} stopped: {e}")))
    }

    /// The cluster layer: who runs a session's turns (`ownership.rs`).
    pub fn cluster(&self) -> crate::ownership::Cluster<'_, H> {
        crate::ownership::Cluster(self)
    }

    /// The service of type `T` a feature registered at start.
    pub fn service<T: Send + Sync + 'static>(&self) -> &T {
        self.services.get::<T>().unwrap_or_else(|| {
            unreachable!(
                "{} is registered by its feature at start",
                std::any::type_name::<T>()
            )
        })
    }

    /// Graceful shutdown: no new turn starts by itself; running turns get
    /// `grace` to finish; those still running then are checkpointed
    /// (cancelled: finished calls keep their results, the rest are
    /// recorded as cancelled, the turn as interrupted); the features stop
    /// their work; the journal is flushed.
    pub async fn shutdown(&self, grace: Duration) -> ShutdownReport {
        self.tasks.close();
        let host = self.host();
        for feature in &self.features {
            feature.shutdown_begins(&host);
        }
        let running = self.running_turns().await;
        let in_time = tokio::time::timeout(grace, self.tasks.wait()).await.is_ok();
        let mut checkpointed = 0;
        if !in_time {
            let ctxs: Vec<_> = self.sessions.lock().values().cloned().collect();
            for ctx in ctxs {
                if ctx.cancel_turn().await {
                    checkpointed += 1;
                }
            }
            let _ = tokio::time::timeout(Duration::from_secs(5), self.tasks.wait()).await;
        }
        for feature in &self.features {
            feature.shutdown(&host).await;
        }
        if let Err(e) = self.flush_usage().await {
            tracing::error!(error = %e, "writing model usage at shutdown failed");
        }
        self.journal.flush().await;
        self.background.stop(Duration::from_secs(5)).await;
        // What is left (inbox items, goals) is adopted by the other
        // instances at once rather than after a lease.
        if self.store.allows_several_instances()
            && let Err(e) = self
                .store
                .remove_instance(&self.settings.cluster.instance)
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
        let ctxs: Vec<_> = self.sessions.lock().values().cloned().collect();
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
}
