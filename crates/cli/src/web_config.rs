//! Settings of the web built-ins: the `[web_search]` and `[web_fetch]`
//! sections of the config file, overridden by environment variables.
//!
//! ```toml
//! [web_search]
//! engines = [
//!   { kind = "searxng", base_url = "https://searx.example/search" },
//!   { kind = "tavily", api_key = "tvly-…" },
//!   { kind = "duckduckgo" },
//! ]
//! timeout_secs = 10
//!
//! [web_fetch]
//! enabled = true
//! extract_threshold_bytes = 50000
//! ```
//!
//! `RTC_WEB_SEARCH_ENGINES=searxng=https://searx.example/search,duckduckgo`
//! replaces the engine list (`kind` or `kind=base_url`, in order);
//! `RTC_BING_API_KEY` and `RTC_TAVILY_API_KEY` give those engines their
//! keys; `RTC_WEB_FETCH=1` enables webFetch and
//! `RTC_WEB_FETCH_EXTRACT_BYTES` sets the size above which the small model
//! reads a page for the prompt.

use std::time::Duration;

use anyhow::{Context, bail};
use rtc_tools::web_fetch::WebFetchConfig;
use rtc_tools::web_search::{EngineConfig, EngineKind};
use serde::Deserialize;

use crate::config::{env, env_flag};

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebSearchFile {
    #[serde(default)]
    engines: Vec<EngineConfig>,
    timeout_secs: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebFetchFile {
    #[serde(default)]
    enabled: bool,
    extract_threshold_bytes: Option<usize>,
    max_bytes: Option<usize>,
    timeout_secs: Option<u64>,
    cache_minutes: Option<u64>,
}

/// The web built-ins in force.
#[derive(Debug, Default)]
pub struct WebSettings {
    /// Empty: no webSearch.
    pub search_engines: Vec<EngineConfig>,
    pub search_timeout: Duration,
    /// `None`: no webFetch.
    pub fetch: Option<WebFetchConfig>,
}

impl WebSettings {
    pub fn load(search: WebSearchFile, fetch: WebFetchFile) -> anyhow::Result<Self> {
        let mut engines = match env("RTC_WEB_SEARCH_ENGINES") {
            Some(list) => parse_engine_list(&list)?,
            None => search.engines,
        };
        for engine in &mut engines {
            let key = match engine.kind {
                EngineKind::Bing => env("RTC_BING_API_KEY"),
                EngineKind::Tavily => env("RTC_TAVILY_API_KEY"),
                _ => None,
            };
            if key.is_some() {
                engine.api_key = key;
            }
        }
        let enabled = env_flag("RTC_WEB_FETCH")?.unwrap_or(fetch.enabled);
        let extract_threshold = env("RTC_WEB_FETCH_EXTRACT_BYTES")
            .map(|v| v.parse::<usize>())
            .transpose()
            .context("RTC_WEB_FETCH_EXTRACT_BYTES must be a number of bytes")?;
        let defaults = WebFetchConfig::default();
        let fetch = enabled.then(|| WebFetchConfig {
            extract_threshold_bytes: extract_threshold
                .or(fetch.extract_threshold_bytes)
                .unwrap_or(defaults.extract_threshold_bytes),
            max_bytes: fetch.max_bytes.unwrap_or(defaults.max_bytes),
            timeout: fetch
                .timeout_secs
                .map_or(defaults.timeout, Duration::from_secs),
            cache_ttl: fetch
                .cache_minutes
                .map_or(defaults.cache_ttl, |m| Duration::from_secs(m * 60)),
            ..defaults
        });
        Ok(Self {
            search_engines: engines,
            search_timeout: Duration::from_secs(search.timeout_secs.unwrap_or(10)),
            fetch,
        })
    }
}

fn parse_engine_list(list: &str) -> anyhow::Result<Vec<EngineConfig>> {
    list.split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(|item| {
            let (kind, base_url) = match item.split_once('=') {
                Some((k, url)) => (k.trim(), Some(url.trim().to_owned())),
                None => (item, None),
            };
            let Some(kind) = EngineKind::parse(kind) else {
                bail!("RTC_WEB_SEARCH_ENGINES: unknown engine `{kind}` (duckduckgo, bing, searxng, tavily)");
            };
            Ok(EngineConfig {
                kind,
                base_url,
                api_key: None,
            })
        })
        .collect::<anyhow::Result<Vec<_>>>()
        .context("RTC_WEB_SEARCH_ENGINES")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_lists() {
        let engines = parse_engine_list("searxng=http://127.0.0.1:9/search, duckduckgo").unwrap();
        assert_eq!(engines.len(), 2);
        assert_eq!(engines[0].kind, EngineKind::Searxng);
        assert_eq!(
            engines[0].base_url.as_deref(),
            Some("http://127.0.0.1:9/search")
        );
        assert_eq!(engines[1].kind, EngineKind::Duckduckgo);
        assert!(parse_engine_list("google").is_err());
    }
}
