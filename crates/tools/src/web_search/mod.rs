//! webSearch (R-WS-1..3, R-BX-8): one query through the configured engines
//! in order (DuckDuckGo's HTML page, the Bing Web Search API, a SearXNG
//! instance's JSON API, Tavily), failing over on errors, timeouts, rate
//! limits and empty answers. Each engine has a circuit breaker, so an
//! engine that keeps failing is skipped for a while; the outcome says which
//! engine answered and whether the search was degraded.

mod bing;
mod breaker;
mod duckduckgo;
mod searxng;
mod tavily;

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::net_guard::{AddressPolicy, guarded_client, guarded_client_same_origin};
use breaker::Breaker;

/// Most results one search returns (R-WS-1).
pub const MAX_RESULTS: usize = 30;

/// A search engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EngineKind {
    Duckduckgo,
    Bing,
    Searxng,
    Tavily,
}

impl EngineKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Duckduckgo => "duckduckgo",
            Self::Bing => "bing",
            Self::Searxng => "searxng",
            Self::Tavily => "tavily",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        [Self::Duckduckgo, Self::Bing, Self::Searxng, Self::Tavily]
            .into_iter()
            .find(|k| k.as_str() == name)
    }

    fn default_base_url(self) -> Option<&'static str> {
        match self {
            Self::Duckduckgo => Some("https://html.duckduckgo.com/html/"),
            Self::Bing => Some("https://api.bing.microsoft.com/v7.0/search"),
            Self::Searxng => None,
            Self::Tavily => Some("https://api.tavily.com/search"),
        }
    }

    fn needs_key(self) -> bool {
        matches!(self, Self::Bing | Self::Tavily)
    }
}

/// One configured engine (server configuration; the key never reaches the
/// model, a log or an event).
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EngineConfig {
    pub kind: EngineKind,
    /// The endpoint; DuckDuckGo, Bing and Tavily have defaults, SearXNG
    /// needs the instance's `/search` URL.
    #[serde(default)]
    pub base_url: Option<String>,
    #[serde(default)]
    pub api_key: Option<String>,
}

impl std::fmt::Debug for EngineConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EngineConfig")
            .field("kind", &self.kind)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "[redacted]"))
            .finish()
    }
}

/// `time_range` of webSearch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TimeRange {
    Day,
    Week,
    Month,
    Year,
}

/// What the model asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchQuery {
    pub query: String,
    pub max_results: usize,
    pub time_range: Option<TimeRange>,
}

/// One result, in the seed's shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchHit {
    pub title: String,
    pub url: String,
    pub description: String,
    /// The site the result is on (its host, without `www.`).
    pub source: String,
}

/// An engine that did not answer, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EngineFailure {
    pub engine: &'static str,
    pub reason: String,
}

/// The answer of a search (R-WS-3, R-BX-8).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SearchOutcome {
    pub query: String,
    pub result_count: usize,
    pub results: Vec<SearchHit>,
    /// The engine that answered.
    pub engine: &'static str,
    /// Whether an engine before it failed or was skipped (see `failures`).
    pub degraded: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<EngineFailure>,
}

/// Why one engine gave no results.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EngineError {
    #[error("rate limited")]
    RateLimited,
    #[error("timed out")]
    Timeout,
    #[error("HTTP {0}")]
    Status(u16),
    #[error("unreadable answer: {0}")]
    Parse(String),
    #[error("no results")]
    Empty,
    #[error("request failed: {0}")]
    Network(String),
    #[error("circuit open after repeated failures; skipped")]
    CircuitOpen,
    #[error("the answer is larger than {0} bytes")]
    TooLarge(usize),
}

/// The largest answer body read from a search engine.
pub const MAX_BODY_BYTES: usize = 2 * 1024 * 1024;

/// Why a search failed, or its configuration is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SearchError {
    #[error("every search engine failed: {0}")]
    AllFailed(String),
    #[error("web search configuration: {0}")]
    Config(String),
}

struct Engine {
    kind: EngineKind,
    base_url: url::Url,
    api_key: Option<String>,
    breaker: Breaker,
}

/// The configured engines; built once, shared by all sessions.
pub struct WebSearch {
    engines: Vec<Engine>,
    /// For the engines without a key (followed redirects are checked by the
    /// guard).
    client: reqwest::Client,
    /// For the engines whose key travels in a header: redirects stay within
    /// the origin.
    keyed_client: reqwest::Client,
}

impl std::fmt::Debug for WebSearch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kinds: Vec<&str> = self.engines.iter().map(|e| e.kind.as_str()).collect();
        f.debug_struct("WebSearch")
            .field("engines", &kinds)
            .finish()
    }
}

impl WebSearch {
    /// Engines are tried in the order given; each request may take up to
    /// `timeout`.
    pub fn new(
        configs: &[EngineConfig],
        policy: AddressPolicy,
        timeout: Duration,
    ) -> Result<Self, SearchError> {
        if configs.is_empty() {
            return Err(SearchError::Config("no engine configured".into()));
        }
        let mut engines = Vec::new();
        for c in configs {
            let name = c.kind.as_str();
            let base = c
                .base_url
                .as_deref()
                .or(c.kind.default_base_url())
                .ok_or_else(|| SearchError::Config(format!("{name} needs `base_url`")))?;
            let base_url = url::Url::parse(base)
                .map_err(|e| SearchError::Config(format!("{name} `base_url`: {e}")))?;
            let api_key = c.api_key.clone().filter(|k| !k.trim().is_empty());
            if c.kind.needs_key() && api_key.is_none() {
                return Err(SearchError::Config(format!("{name} needs `api_key`")));
            }
            engines.push(Engine {
                kind: c.kind,
                base_url,
                api_key,
                breaker: Breaker::default(),
            });
        }
        let config = |e: reqwest::Error| SearchError::Config(e.to_string());
        Ok(Self {
            engines,
            client: guarded_client(policy, timeout).map_err(config)?,
            keyed_client: guarded_client_same_origin(policy, timeout).map_err(config)?,
        })
    }

    /// Run the query through the engines until one answers with results.
    pub async fn search(&self, q: &SearchQuery) -> Result<SearchOutcome, SearchError> {
        let q = SearchQuery {
            max_results: q.max_results.clamp(1, MAX_RESULTS),
            ..q.clone()
        };
        let mut failures = Vec::new();
        let mut skipped = Vec::new();
        for engine in &self.engines {
            if !engine.breaker.allows() {
                skipped.push(engine);
                failures.push(EngineFailure {
                    engine: engine.kind.as_str(),
                    reason: EngineError::CircuitOpen.to_string(),
                });
                continue;
            }
            match self.ask(engine, &q, &mut failures).await {
                Some(outcome) => return Ok(outcome.with(failures)),
                None => continue,
            }
        }
        // Every engine that was tried failed: the skipped ones are the last resort.
        for engine in &skipped {
            if let Some(outcome) = self.ask(engine, &q, &mut failures).await {
                return Ok(outcome.with(failures));
            }
        }
        let summary: Vec<String> = failures
            .iter()
            .map(|f| format!("{}: {}", f.engine, f.reason))
            .collect();
        Err(SearchError::AllFailed(summary.join("; ")))
    }

    async fn ask(
        &self,
        engine: &Engine,
        q: &SearchQuery,
        failures: &mut Vec<EngineFailure>,
    ) -> Option<SearchOutcome> {
        match self.query_engine(engine, q).await {
            Ok(mut hits) if !hits.is_empty() => {
                engine.breaker.succeeded();
                hits.truncate(q.max_results);
                Some(SearchOutcome {
                    query: q.query.clone(),
                    result_count: hits.len(),
                    results: hits,
                    engine: engine.kind.as_str(),
                    degraded: false,
                    failures: Vec::new(),
                })
            }
            outcome => {
                let error = outcome.err().unwrap_or(EngineError::Empty);
                match &error {
                    // An empty answer is an answer: fail over, but the engine works.
                    EngineError::Empty => engine.breaker.succeeded(),
                    EngineError::RateLimited => engine.breaker.trip(),
                    _ => engine.breaker.failed(),
                }
                tracing::warn!(engine = engine.kind.as_str(), error = %error, "web search engine failed");
                failures.push(EngineFailure {
                    engine: engine.kind.as_str(),
                    reason: error.to_string(),
                });
                None
            }
        }
    }

    async fn query_engine(
        &self,
        engine: &Engine,
        q: &SearchQuery,
    ) -> Result<Vec<SearchHit>, EngineError> {
        let key = engine.api_key.as_deref().unwrap_or_default();
        let request = match engine.kind {
            EngineKind::Duckduckgo => duckduckgo::request(&self.client, &engine.base_url, q),
            EngineKind::Bing => bing::request(&self.keyed_client, &engine.base_url, key, q),
            EngineKind::Searxng => searxng::request(&self.client, &engine.base_url, q),
            EngineKind::Tavily => tavily::request(&self.keyed_client, &engine.base_url, key, q),
        };
        let resp = request.send().await.map_err(transport)?;
        let status = resp.status().as_u16();
        let body = read_body(resp, MAX_BODY_BYTES).await?;
        match engine.kind {
            EngineKind::Duckduckgo => duckduckgo::parse(status, &body),
            EngineKind::Bing => bing::parse(status, &body),
            EngineKind::Searxng => searxng::parse(status, &body),
            EngineKind::Tavily => tavily::parse(status, &body),
        }
    }
}

impl SearchOutcome {
    fn with(mut self, failures: Vec<EngineFailure>) -> Self {
        self.degraded = !failures.is_empty();
        self.failures = failures;
        self
    }
}

/// The body as text, refused beyond `max` bytes (announced or read).
async fn read_body(resp: reqwest::Response, max: usize) -> Result<String, EngineError> {
    use crate::upstream::{BodyError, read_at_most};
    match read_at_most(resp, max).await {
        Ok(body) => Ok(String::from_utf8_lossy(&body).into_owned()),
        Err(BodyError::TooLarge(max)) => Err(EngineError::TooLarge(max)),
        Err(BodyError::Transport(e)) => Err(transport(e)),
    }
}

fn transport(e: reqwest::Error) -> EngineError {
    if e.is_timeout() {
        EngineError::Timeout
    } else {
        EngineError::Network(e.without_url().to_string())
    }
}

/// The shared failure mapping of the JSON APIs: rate limits, then any
/// other non-success status.
fn check_status(status: u16) -> Result<(), EngineError> {
    match status {
        429 => Err(EngineError::RateLimited),
        200..=299 => Ok(()),
        other => Err(EngineError::Status(other)),
    }
}

/// A result with its `source` (host without `www.`); `None` when the URL is
/// not an absolute http(s) URL or the title is empty.
fn hit(title: &str, url: &str, description: &str) -> Option<SearchHit> {
    let parsed = url::Url::parse(url).ok()?;
    if !matches!(parsed.scheme(), "http" | "https") || title.trim().is_empty() {
        return None;
    }
    let host = parsed.host_str()?;
    Some(SearchHit {
        title: collapse(title),
        url: parsed.to_string(),
        description: collapse(description),
        source: host.strip_prefix("www.").unwrap_or(host).to_owned(),
    })
}

fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
