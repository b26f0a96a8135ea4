//! `rtc-agent serve`: open the store, settle the admin token, serve HTTP
//! until SIGINT/SIGTERM, then drain.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use rtc_llm::{OpenAiClient, ProviderConfig};
use rtc_runtime::{
    ClusterSettings, FeatureLimits, KernelConfig, LoopSettings, Provider, Runtime, RuntimeConfig,
    SessionLimits, SubAgentLimits, TestQueueLimits,
};
use rtc_server::{AdminAuth, AppState, Limits, PerMinuteEach, ProviderChecks};
use rtc_store::{MasterKey, SecretBox, Store, hash_token, new_token};
use rtc_tools::http_exec::{DEFAULT_MAX_RESPONSE_BYTES, HttpExecutor};
use rtc_tools::mcp::McpConnector;
use rtc_tools::net_guard::AddressPolicy;
use rtc_tools::upstream::UpstreamLimits;
use rtc_tools::web_fetch::WebFetcher;
use rtc_tools::web_search::WebSearch;

use crate::config::{ProviderSettings, Settings};

const ADMIN_HASH_SETTING: &str = "admin_token_hash";

/// Connect and migrate.
pub async fn open_store(settings: &Settings) -> anyhow::Result<Store> {
    let key = match &settings.master_key {
        Some(k) => MasterKey::parse(k).context("RTC_MASTER_KEY")?,
        None => MasterKey::load_or_create(&settings.data_dir.join("master.key"))?,
    };
    let store = Store::connect(&settings.database_url, SecretBox::new(&key))
        .await
        .with_context(|| {
            format!(
                "connecting to {}",
                rtc_store::redact_url(&settings.database_url)
            )
        })?;
    store.migrate().await?;
    Ok(store)
}

/// The admin token from the settings, or the one created on first start
/// (printed once; only its hash is kept).
async fn admin_auth(settings: &Settings, store: &Store) -> anyhow::Result<AdminAuth> {
    if let Some(token) = &settings.admin_token {
        return Ok(AdminAuth::from_token(token));
    }
    if let Some(hash) = store.setting(ADMIN_HASH_SETTING).await? {
        return Ok(AdminAuth::from_hash(hash));
    }
    let token = new_token("rtc_admin");
    let hash = hash_token(&token);
    let stored = store.setting_or_insert(ADMIN_HASH_SETTING, &hash).await?;
    if stored == hash {
        writeln!(
            std::io::stdout(),
            "admin token (shown once, store it now): {token}"
        )?;
    }
    Ok(AdminAuth::from_hash(stored))
}

pub async fn run(settings: Settings) -> anyhow::Result<()> {
    let store = open_store(&settings).await?;
    let pending = store.pending_legacy().await?;
    if pending > 0 {
        store.close().await;
        anyhow::bail!(
            "the database holds {pending} v3 documents waiting for the Tool Resource v4 migration; serving them is refused: stop here, run `rtc-agent migrate --backup PATH` (a backup taken with `rtc-agent backup --out PATH`) or `rtc-agent migrate --create-backup PATH`, then start again"
        );
    }
    let auth = admin_auth(&settings, &store).await?;
    let policy = settings.address_policy();
    let limits = Limits {
        max_body_bytes: settings.max_body_bytes,
        ..Limits::default()
    };
    let mcp = McpConnector {
        policy,
        timeout: limits.mcp_timeout,
    };
    let runtime = build_runtime(&settings, store.clone(), policy, mcp)?;
    // A provider that cannot work is said at start, naming what to set
    // (the first session would otherwise be the first to find out).
    for p in runtime.providers() {
        if let Some(problem) = &p.problem {
            tracing::warn!(provider = %p.name, "the model provider cannot work: {problem}");
        }
    }
    let interrupted = runtime.recover().await?;
    if interrupted > 0 {
        tracing::warn!(
            interrupted,
            "turns interrupted by the last stop were marked as such"
        );
    }
    let shutdown = tokio_util::sync::CancellationToken::new();
    let state = AppState {
        store: store.clone(),
        auth,
        limits,
        runtime: runtime.clone(),
        shutdown: shutdown.clone(),
        cors_origins: settings.cors_origins.clone(),
        metrics_auth: settings.metrics_token.as_deref().map(AdminAuth::from_token),
        provider_checks: Arc::new(ProviderChecks::new(
            u32::try_from(settings.limits.provider_checks_per_minute).unwrap_or(u32::MAX),
        )),
        speech_checks: Arc::new(PerMinuteEach::new(
            u32::try_from(settings.limits.speech_checks_per_minute).unwrap_or(u32::MAX),
        )),
    };
    let listener = tokio::net::TcpListener::bind(&settings.listen)
        .await
        .with_context(|| format!("binding {}", settings.listen))?;
    let addr = listener.local_addr()?;
    writeln!(std::io::stdout(), "rtc-agent listening on http://{addr}")?;
    // A wildcard address is reached on this machine through loopback.
    let mut local = addr;
    if local.ip().is_unspecified() {
        local.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
    }
    writeln!(
        std::io::stdout(),
        "console: http://{local}/ (sign in with the admin token to create workspaces, or with a workspace key)"
    )?;
    std::io::stdout().flush()?;
    tracing::info!(%addr, database = %rtc_store::redact_url(&settings.database_url), "serving");
    let signalled = shutdown.clone();
    let header_timeout = Duration::from_secs(settings.header_read_timeout_secs);
    crate::http::serve(
        listener,
        rtc_server::router(state),
        header_timeout,
        async move {
            shutdown_signal().await;
            // Live streams end, so the server can drain its connections.
            signalled.cancel();
        },
    )
    .await;
    let grace = Duration::from_secs(settings.shutdown_grace_secs);
    let report = runtime.shutdown(grace).await;
    tracing::info!(
        finished = report.finished,
        checkpointed = report.checkpointed,
        "stopped"
    );
    store.close().await;
    Ok(())
}

pub(crate) fn provider(
    p: &ProviderSettings,
    small_model: Option<String>,
) -> anyhow::Result<Provider> {
    // After a burst of model calls, at most 64 idle connections stay open
    // (a plain HTTP/1.1 one holds ~30 KiB in hyper); the rest close.
    let client = || {
        reqwest::Client::builder()
            .connect_timeout(std::time::Duration::from_secs(10))
            .pool_max_idle_per_host(64)
            .pool_idle_timeout(std::time::Duration::from_secs(30))
            .build()
    };
    let first = client()?;
    let mut config = ProviderConfig::new(&p.base_url, p.api_key.clone());
    config.caps = p.caps();
    config.model_caps = p.models.clone();
    if let Some(n) = p.streams_per_connection {
        config.streams_per_connection = usize::try_from(n.get()).unwrap_or(usize::MAX);
    }
    let max_tools = p.max_tools.map_or(rtc_runtime::DEFAULT_MAX_TOOLS, |n| {
        usize::try_from(n).unwrap_or(usize::MAX)
    });
    Ok(Provider {
        // An `https://` provider speaks HTTP/2 and caps the streams of a
        // connection: its requests go out on lanes (`rtc_llm::lanes`).
        client: Arc::new(if p.base_url.starts_with("https://") {
            let make: rtc_llm::MakeClient = Arc::new(move || client().ok());
            OpenAiClient::with_lanes(config, first, make)
        } else {
            OpenAiClient::new(config, first)
        }),
        default_model: p.model.clone(),
        small_model,
        max_tools,
    })
}

fn build_runtime(
    settings: &Settings,
    store: Store,
    policy: AddressPolicy,
    mcp: McpConnector,
) -> anyhow::Result<Runtime> {
    let mut providers = BTreeMap::new();
    for (name, p) in &settings.providers {
        providers.insert(name.clone(), provider(p, p.small_model.clone())?);
    }
    let l = &settings.limits;
    let kernel = KernelConfig {
        default_provider: provider(&settings.llm, Some(settings.small_model.clone()))?,
        providers,
        max_steps_per_turn: settings.max_steps_per_turn,
        capture_content: std::env::var("RTC_OTEL_CAPTURE_CONTENT")
            .is_ok_and(|v| v == "1" || v.eq_ignore_ascii_case("true")),
        // Workspace ids on /metrics only when it needs a token.
        metrics_by_workspace: settings.metrics_token.is_some(),
        idle_session_ttl: std::time::Duration::from_secs(settings.idle_session_secs),
        cluster: ClusterSettings {
            instance: settings
                .instance_id
                .clone()
                .unwrap_or_else(|| ClusterSettings::default().instance),
            lease: Duration::from_secs(settings.loop_lease_secs),
        },
        limits: SessionLimits {
            max_active_sessions: settings.max_sessions_per_workspace,
            max_event_result_bytes: size(settings.max_event_result_bytes),
            max_message_bytes: size(settings.max_message_bytes),
            max_end_reason_chars: size(settings.max_end_reason_chars),
            update: l.update_bounds(),
            max_history_bytes: l.max_history_bytes,
            history_memory_bytes: l.history_memory_bytes,
            max_replayed_result_bytes: size(l.max_replayed_result_bytes),
            context_compact_percent: u8::try_from(l.context_compact_percent).unwrap_or(80),
            max_subscribers: size(l.max_subscribers_per_session),
        },
    };
    let config = RuntimeConfig {
        kernel,
        http: HttpExecutor::new(policy, DEFAULT_MAX_RESPONSE_BYTES)?,
        mcp,
        mcp_call_timeout: std::time::Duration::from_secs(60),
        data_dir: Some(settings.data_dir.clone()),
        tests: TestQueueLimits {
            global: size(settings.test_concurrency),
            per_workspace: size(l.test_concurrency_per_workspace),
            max_queued: l.max_test_runs_per_workspace,
        },
        upstream: UpstreamLimits {
            max_body_bytes: size(l.max_upstream_body_bytes),
            max_line_bytes: size(l.max_upstream_line_bytes),
            ..UpstreamLimits::default()
        },
        loops: LoopSettings {
            poll: Duration::from_millis(settings.loop_poll_ms),
            max_lifetime: Duration::from_secs(settings.loop_max_hours * 3600),
        },
        sub_agents: SubAgentLimits {
            max_depth: i64::try_from(settings.subagent_max_depth).unwrap_or(i64::MAX),
            max_children: size(settings.subagent_max_children),
            max_sessions: size(settings.subagent_max_sessions),
            max_tree_total: size(settings.subagent_max_tree_total),
        },
        feature_limits: FeatureLimits {
            max_walk_hops: u32::try_from(l.max_walk_hops).unwrap_or(u32::MAX),
            max_walk_events: size(l.max_walk_events),
            max_walk_state_bytes: size(l.max_walk_state_bytes),
            realtime_connects_per_minute: u32::try_from(l.realtime_connects_per_minute)
                .unwrap_or(u32::MAX),
            max_task_transcript_bytes: size(l.max_task_transcript_bytes),
            voice_max_sessions: size(l.voice_max_sessions),
        },
        web_search: match settings.web.search_engines.as_slice() {
            [] => None,
            engines => Some(Arc::new(WebSearch::new(
                engines,
                policy,
                settings.web.search_timeout,
            )?)),
        },
        web_fetch: settings
            .web
            .fetch
            .clone()
            .map(|c| WebFetcher::new(policy, c))
            .transpose()?,
    };
    Ok(Runtime::new(store, config))
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        if let Ok(mut s) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        {
            s.recv().await;
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
    tracing::info!("shutting down");
}

/// A setting as a size in memory (saturating on 32-bit targets).
fn size(value: u64) -> usize {
    usize::try_from(value).unwrap_or(usize::MAX)
}
