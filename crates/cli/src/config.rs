//! Settings from flags, environment variables and the config file, in that
//! order of precedence (SPEC §9 names).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The model used when none is configured.
const DEFAULT_MODEL: &str = "gpt-4o-mini";

use anyhow::Context;
use clap::Args;
use serde::Deserialize;

use rtc_core::model_caps::{CapsOverride, TokenParameter};

use crate::limit_settings::{LimitFile, LimitSettings};
use crate::web_config::{WebFetchFile, WebSearchFile, WebSettings};

/// Flags (each also read from its environment variable).
#[derive(Debug, Default, Clone, Args)]
pub struct Overrides {
    /// Listen address.
    #[arg(long, env = "RTC_LISTEN")]
    pub listen: Option<String>,
    /// `sqlite://PATH` or `postgres://…`.
    #[arg(long, env = "DATABASE_URL")]
    pub database_url: Option<String>,
    /// Folder for the master key file.
    #[arg(long, env = "RTC_DATA_DIR")]
    pub data_dir: Option<PathBuf>,
}

/// The config file (TOML). Keys match the environment variables.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    listen: Option<String>,
    database_url: Option<String>,
    data_dir: Option<PathBuf>,
    admin_token: Option<String>,
    master_key: Option<String>,
    allow_private_network: Option<bool>,
    outbound_allow: Option<String>,
    max_body_bytes: Option<usize>,
    log_format: Option<String>,
    llm_base_url: Option<String>,
    llm_api_key: Option<String>,
    llm_model: Option<String>,
    small_model: Option<String>,
    llm_token_parameter: Option<TokenParameter>,
    llm_sampling: Option<bool>,
    llm_vision: Option<bool>,
    llm_context_window: Option<u32>,
    llm_max_tools: Option<u64>,
    llm_streams_per_connection: Option<std::num::NonZeroU32>,
    max_steps_per_turn: Option<usize>,
    idle_session_secs: Option<u64>,
    shutdown_grace_secs: Option<u64>,
    header_read_timeout_secs: Option<u64>,
    loop_poll_ms: Option<u64>,
    loop_lease_secs: Option<u64>,
    loop_max_hours: Option<u64>,
    subagent_max_depth: Option<u64>,
    subagent_max_children: Option<u64>,
    subagent_max_sessions: Option<u64>,
    subagent_max_tree_total: Option<u64>,
    max_sessions_per_workspace: Option<u64>,
    max_event_result_bytes: Option<u64>,
    max_message_bytes: Option<u64>,
    max_end_reason_chars: Option<u64>,
    test_concurrency: Option<u64>,
    metrics_token: Option<String>,
    cors_origins: Option<String>,
    instance_id: Option<String>,
    #[serde(default)]
    web_search: WebSearchFile,
    #[serde(default)]
    web_fetch: WebFetchFile,
    #[serde(default)]
    providers: BTreeMap<String, ProviderSettings>,
}

/// A named OpenAI-compatible provider (`[providers.NAME]` in the config file).
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderSettings {
    pub base_url: String,
    #[serde(default)]
    pub api_key: Option<String>,
    pub model: String,
    /// The model this provider serves for judges, `llm` leaves and
    /// extraction; without one those calls go to the default provider.
    #[serde(default)]
    pub small_model: Option<String>,
    /// What its models accept, over the capability table
    /// (`rtc_core::model_caps`): `max_tokens` or `max_completion_tokens`.
    #[serde(default)]
    pub token_parameter: Option<TokenParameter>,
    /// Whether its models take `temperature`.
    #[serde(default)]
    pub sampling: Option<bool>,
    /// Whether its models read images (tool results' images).
    #[serde(default)]
    pub vision: Option<bool>,
    /// Its models' context window in tokens.
    #[serde(default)]
    pub context_window: Option<u32>,
    /// The same, per model name (`[providers.NAME.models."MODEL"]`).
    #[serde(default)]
    pub models: BTreeMap<String, CapsOverride>,
    /// Most functions one request may offer (default 128).
    #[serde(default)]
    pub max_tools: Option<u64>,
    /// Model requests in flight on one connection before another is
    /// opened (default 100; keep it at or below the provider's HTTP/2
    /// stream limit).
    #[serde(default)]
    pub streams_per_connection: Option<std::num::NonZeroU32>,
}

impl ProviderSettings {
    /// What the configuration says of all this provider's models.
    pub fn caps(&self) -> CapsOverride {
        CapsOverride {
            token_parameter: self.token_parameter,
            sampling: self.sampling,
            vision: self.vision,
            context_window: self.context_window,
        }
    }
}

impl std::fmt::Debug for ProviderSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderSettings")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("small_model", &self.small_model)
            .finish_non_exhaustive()
    }
}

/// The settings in force. Its `Debug` shows whether the admin token and
/// master key are set, never their values.
pub struct Settings {
    pub listen: String,
    pub database_url: String,
    pub data_dir: PathBuf,
    pub admin_token: Option<String>,
    pub master_key: Option<String>,
    pub allow_private_network: bool,
    /// The private hosts, addresses and networks tools may reach
    /// (`RTC_OUTBOUND_ALLOW`), as the guard's policy.
    pub outbound_allow: rtc_tools::net_guard::AddressPolicy,
    pub max_body_bytes: usize,
    pub json_logs: bool,
    /// The default provider.
    pub llm: ProviderSettings,
    pub small_model: String,
    pub max_steps_per_turn: usize,
    /// How long an unused session stays in memory (it is reloaded from the
    /// store when used again).
    pub idle_session_secs: u64,
    /// On SIGTERM: how long running turns may take to finish before they
    /// are checkpointed (cancelled with their results recorded).
    pub shutdown_grace_secs: u64,
    /// How long a connection may take to send a request's headers before
    /// it is closed.
    pub header_read_timeout_secs: u64,
    /// Loop scheduler: poll interval, tick lease, longest loop life.
    pub loop_poll_ms: u64,
    pub loop_lease_secs: u64,
    pub loop_max_hours: u64,
    /// Sub-agent trees: deepest level, active children per session,
    /// active sessions per tree (R-SA-7).
    pub subagent_max_depth: u64,
    pub subagent_max_children: u64,
    pub subagent_max_sessions: u64,
    /// Sessions one tree may ever create (working or not).
    pub subagent_max_tree_total: u64,
    /// R-SEC-6: active sessions per workspace; bytes of a tool result one
    /// `tool.completed` event records (longer ones are cut there); bytes of
    /// a message's text; characters of an end reason.
    pub max_sessions_per_workspace: u64,
    pub max_event_result_bytes: u64,
    pub max_message_bytes: u64,
    pub max_end_reason_chars: u64,
    /// Conversation test runs at once (R-BX-10).
    pub test_concurrency: u64,
    /// The bounds of what a tenant or a model can grow (R-SEC-7).
    pub limits: LimitSettings,
    /// When set, `GET /metrics` needs `Authorization: Bearer <token>`.
    pub metrics_token: Option<String>,
    /// Origins whose pages may call the API (CORS), `*` for any.
    pub cors_origins: Vec<String>,
    /// This process's name in loop leases (default: random per start).
    pub instance_id: Option<String>,
    pub web: WebSettings,
    pub providers: BTreeMap<String, ProviderSettings>,
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let redacted = |v: &Option<String>| v.as_ref().map(|_| "[redacted]");
        f.debug_struct("Settings")
            .field("listen", &self.listen)
            .field("database_url", &redact_url(&self.database_url))
            .field("data_dir", &self.data_dir)
            .field("admin_token", &redacted(&self.admin_token))
            .field("master_key", &redacted(&self.master_key))
            .field("allow_private_network", &self.allow_private_network)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("json_logs", &self.json_logs)
            .field("llm", &self.llm)
            .field("small_model", &self.small_model)
            .field("max_steps_per_turn", &self.max_steps_per_turn)
            .field("idle_session_secs", &self.idle_session_secs)
            .field("shutdown_grace_secs", &self.shutdown_grace_secs)
            .field("header_read_timeout_secs", &self.header_read_timeout_secs)
            .field("loop_poll_ms", &self.loop_poll_ms)
            .field("loop_lease_secs", &self.loop_lease_secs)
            .field("loop_max_hours", &self.loop_max_hours)
            .field("subagent_max_depth", &self.subagent_max_depth)
            .field("subagent_max_children", &self.subagent_max_children)
            .field("subagent_max_sessions", &self.subagent_max_sessions)
            .field("subagent_max_tree_total", &self.subagent_max_tree_total)
            .field(
                "max_sessions_per_workspace",
                &self.max_sessions_per_workspace,
            )
            .field("max_event_result_bytes", &self.max_event_result_bytes)
            .field("max_message_bytes", &self.max_message_bytes)
            .field("max_end_reason_chars", &self.max_end_reason_chars)
            .field("test_concurrency", &self.test_concurrency)
            .field("limits", &self.limits)
            .field("metrics_token", &self.metrics_token.is_some())
            .field("cors_origins", &self.cors_origins)
            .field("instance_id", &self.instance_id)
            .field("web", &self.web)
            .field("providers", &self.providers)
            .finish()
    }
}

/// A database URL without its password (`postgres://user:pw@host` ->
/// `postgres://user:[redacted]@host`).
fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => {
            let user = userinfo.split_once(':').map_or(userinfo, |(u, _)| u);
            format!("{scheme}://{user}:[redacted]@{host}{path}")
        }
        None => url.to_owned(),
    }
}

/// `RTC_LLM_TOKEN_PARAMETER`: `max_tokens` or `max_completion_tokens`.
fn token_parameter(v: &str) -> anyhow::Result<TokenParameter> {
    match v {
        "max_tokens" => Ok(TokenParameter::MaxTokens),
        "max_completion_tokens" => Ok(TokenParameter::MaxCompletionTokens),
        other => anyhow::bail!(
            "RTC_LLM_TOKEN_PARAMETER must be max_tokens or max_completion_tokens, not `{other}`"
        ),
    }
}

pub(crate) fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// A positive number from the environment, else the file, else `default`.
/// `RTC_CORS_ORIGINS`: comma-separated `scheme://host[:port]` origins, or `*`.
fn cors_origins(list: Option<String>) -> anyhow::Result<Vec<String>> {
    let mut out = Vec::new();
    for origin in list
        .iter()
        .flat_map(|l| l.split(','))
        .map(str::trim)
        .filter(|o| !o.is_empty())
    {
        let ok = origin == "*"
            || ((origin.starts_with("http://") || origin.starts_with("https://"))
                && !origin.trim_end_matches('/').contains(['?', '#'])
                && origin
                    .split("://")
                    .nth(1)
                    .is_some_and(|rest| !rest.is_empty() && !rest.contains('/')));
        anyhow::ensure!(
            ok,
            "RTC_CORS_ORIGINS: `{origin}` is not an origin (scheme://host[:port], or *)"
        );
        out.push(origin.to_owned());
    }
    Ok(out)
}

pub(crate) fn number(name: &str, file: Option<u64>, default: u64) -> anyhow::Result<u64> {
    let value = match env(name) {
        Some(v) => v
            .parse()
            .with_context(|| format!("{name} must be a whole number"))?,
        None => file.unwrap_or(default),
    };
    anyhow::ensure!(value > 0, "{name} must be above 0");
    Ok(value)
}

pub(crate) fn env_flag(name: &str) -> anyhow::Result<Option<bool>> {
    match env(name).as_deref() {
        None => Ok(None),
        Some("1" | "true" | "yes") => Ok(Some(true)),
        Some("0" | "false" | "no") => Ok(Some(false)),
        Some(other) => anyhow::bail!("{name} must be 1 or 0, got {other:?}"),
    }
}

impl Settings {
    pub fn load(path: Option<&Path>, o: Overrides) -> anyhow::Result<Self> {
        let (file, limit_file): (FileConfig, LimitFile) = match path {
            Some(p) => {
                let text = std::fs::read_to_string(p)
                    .with_context(|| format!("reading config file {}", p.display()))?;
                let mut table: toml::Table = toml::from_str(&text)
                    .with_context(|| format!("parsing config file {}", p.display()))?;
                let limits = LimitFile::take(&mut table)
                    .with_context(|| format!("parsing config file {}", p.display()))?;
                let file = table
                    .try_into()
                    .with_context(|| format!("parsing config file {}", p.display()))?;
                (file, limits)
            }
            None => (FileConfig::default(), LimitFile::default()),
        };
        let test_concurrency = number("RTC_TEST_CONCURRENCY", file.test_concurrency, 4)?;
        let max_body_bytes = match env("RTC_MAX_BODY_BYTES") {
            Some(v) => v
                .parse()
                .context("RTC_MAX_BODY_BYTES must be a number of bytes")?,
            None => file.max_body_bytes.unwrap_or(1024 * 1024),
        };
        let llm_model = env("RTC_LLM_MODEL").or(file.llm_model.clone());
        Ok(Self {
            listen: o
                .listen
                .or(file.listen)
                .unwrap_or_else(|| "127.0.0.1:8080".to_owned()),
            database_url: o
                .database_url
                .or(file.database_url)
                .unwrap_or_else(|| "sqlite://rtc-agent.db".to_owned()),
            data_dir: o
                .data_dir
                .or(file.data_dir)
                .unwrap_or_else(|| PathBuf::from(".")),
            admin_token: env("RTC_ADMIN_TOKEN").or(file.admin_token),
            master_key: env("RTC_MASTER_KEY").or(file.master_key),
            allow_private_network: env_flag("RTC_ALLOW_PRIVATE_NETWORK")?
                .or(file.allow_private_network)
                .unwrap_or(false),
            outbound_allow: match env("RTC_OUTBOUND_ALLOW").or(file.outbound_allow) {
                Some(spec) => rtc_tools::net_guard::AddressPolicy::allowing(
                    rtc_tools::net_guard::OutboundAllow::parse(&spec)
                        .map_err(|e| anyhow::anyhow!("RTC_OUTBOUND_ALLOW: {e}"))?,
                ),
                None => rtc_tools::net_guard::AddressPolicy::PublicOnly,
            },
            max_body_bytes,
            json_logs: env("RTC_LOG_FORMAT")
                .or(file.log_format)
                .is_some_and(|f| f == "json"),
            small_model: env("RTC_SMALL_MODEL")
                .or(file.small_model)
                .or_else(|| llm_model.clone())
                .unwrap_or_else(|| DEFAULT_MODEL.to_owned()),
            llm: ProviderSettings {
                base_url: env("RTC_LLM_BASE_URL")
                    .or(file.llm_base_url)
                    .unwrap_or_else(|| "https://api.openai.com/v1".to_owned()),
                api_key: env("RTC_LLM_API_KEY").or(file.llm_api_key),
                model: llm_model.unwrap_or_else(|| DEFAULT_MODEL.to_owned()),
                small_model: None,
                token_parameter: match env("RTC_LLM_TOKEN_PARAMETER") {
                    Some(v) => Some(token_parameter(&v)?),
                    None => file.llm_token_parameter,
                },
                sampling: env_flag("RTC_LLM_SAMPLING")?.or(file.llm_sampling),
                vision: env_flag("RTC_LLM_VISION")?.or(file.llm_vision),
                context_window: match env("RTC_LLM_CONTEXT_WINDOW") {
                    Some(v) => Some(v.parse().ok().filter(|w| *w >= 1_024).context(
                        "RTC_LLM_CONTEXT_WINDOW must be a number of tokens, at least 1024",
                    )?),
                    None => file.llm_context_window,
                },
                models: BTreeMap::new(),
                max_tools: Some(number(
                    "RTC_LLM_MAX_TOOLS",
                    file.llm_max_tools,
                    rtc_runtime::DEFAULT_MAX_TOOLS as u64,
                )?),
                streams_per_connection: match env("RTC_LLM_STREAMS_PER_CONNECTION") {
                    Some(v) => Some(v.parse().ok().context(
                        "RTC_LLM_STREAMS_PER_CONNECTION must be a number of requests, at least 1",
                    )?),
                    None => file.llm_streams_per_connection,
                },
            },
            max_steps_per_turn: match env("RTC_MAX_STEPS_PER_TURN") {
                Some(v) => v
                    .parse()
                    .context("RTC_MAX_STEPS_PER_TURN must be a number")?,
                None => file.max_steps_per_turn.unwrap_or(16),
            },
            idle_session_secs: match env("RTC_IDLE_SESSION_SECS") {
                Some(v) => v
                    .parse()
                    .context("RTC_IDLE_SESSION_SECS must be a number of seconds")?,
                None => file.idle_session_secs.unwrap_or(300),
            },
            shutdown_grace_secs: number("RTC_SHUTDOWN_GRACE_SECS", file.shutdown_grace_secs, 10)?,
            header_read_timeout_secs: number(
                "RTC_HEADER_READ_TIMEOUT_SECS",
                file.header_read_timeout_secs,
                10,
            )?,
            loop_poll_ms: number("RTC_LOOP_POLL_MS", file.loop_poll_ms, 100)?,
            loop_lease_secs: number("RTC_LOOP_LEASE_SECS", file.loop_lease_secs, 30)?,
            loop_max_hours: number("RTC_LOOP_MAX_HOURS", file.loop_max_hours, 24)?,
            subagent_max_depth: number("RTC_SUBAGENT_MAX_DEPTH", file.subagent_max_depth, 3)?,
            subagent_max_children: number(
                "RTC_SUBAGENT_MAX_CHILDREN",
                file.subagent_max_children,
                8,
            )?,
            subagent_max_sessions: number(
                "RTC_SUBAGENT_MAX_SESSIONS",
                file.subagent_max_sessions,
                32,
            )?,
            subagent_max_tree_total: number(
                "RTC_SUBAGENT_MAX_TREE_TOTAL",
                file.subagent_max_tree_total,
                100,
            )?,
            test_concurrency,
            limits: LimitSettings::load(&limit_file, test_concurrency)?,
            metrics_token: env("RTC_METRICS_TOKEN").or(file.metrics_token),
            cors_origins: cors_origins(env("RTC_CORS_ORIGINS").or(file.cors_origins))?,
            max_sessions_per_workspace: number(
                "RTC_MAX_SESSIONS_PER_WORKSPACE",
                file.max_sessions_per_workspace,
                10_000,
            )?,
            max_event_result_bytes: number(
                "RTC_MAX_EVENT_RESULT_BYTES",
                file.max_event_result_bytes,
                256 * 1024,
            )?,
            max_message_bytes: number("RTC_MAX_MESSAGE_BYTES", file.max_message_bytes, 100_000)?,
            max_end_reason_chars: number(
                "RTC_MAX_END_REASON_CHARS",
                file.max_end_reason_chars,
                1_000,
            )?,
            instance_id: env("RTC_INSTANCE_ID").or(file.instance_id),
            web: WebSettings::load(file.web_search, file.web_fetch)?,
            providers: file.providers,
        })
    }
}

/// Logs to stderr, filtered by `RUST_LOG` (default `info`).
impl Settings {
    /// Which outbound addresses tools, MCP and the web tools may reach.
    pub fn address_policy(&self) -> rtc_tools::net_guard::AddressPolicy {
        use rtc_tools::net_guard::AddressPolicy;
        if self.allow_private_network {
            AddressPolicy::AllowPrivate
        } else {
            self.outbound_allow
        }
    }
}

/// The log (stderr, filtered by `RUST_LOG`) and, when the environment
/// asks, OpenTelemetry export of the runtime's spans.
pub fn init_tracing(settings: &Settings) -> anyhow::Result<crate::telemetry::Telemetry> {
    use tracing_subscriber::Layer;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let filter =
        tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into());
    // rmcp traces every JSON-RPC message it receives, before our scrubber
    // sees the result: an MCP server that repeats its header secrets (or a
    // stdio server's env) would put them in the log. It logs at debug at
    // most, whatever `RUST_LOG` says (this directive replaces any `rmcp=…`).
    let filter = match "rmcp=debug".parse() {
        Ok(cap) => filter.add_directive(cap),
        Err(_) => filter,
    };
    // Colours only on a terminal: a log file or collector gets plain text.
    let fmt = tracing_subscriber::fmt::layer()
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    let fmt = if settings.json_logs {
        fmt.json().boxed()
    } else {
        fmt.boxed()
    };
    let (otel, telemetry) = crate::telemetry::layer()?;
    tracing_subscriber::registry()
        .with(fmt.with_filter(filter))
        .with(otel)
        .init();
    Ok(telemetry)
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
