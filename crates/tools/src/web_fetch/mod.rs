//! webFetch (R-WFF-1..5): fetch one URL for the model and turn it into
//! readable Markdown. The body is streamed and cut at the size limit
//! (never buffered whole first); HTML becomes Markdown of the main content,
//! other text passes through, binary content is refused. Conversion runs
//! on threads of its own ([`convert`]) within a deadline, and refuses pages
//! nested too deeply for it ([`limits`]). A redirect to
//! another host is not followed but reported; private and loopback
//! addresses are refused on the resolved IP, also after redirects, unless
//! the operator allows them. Answers are cached per workspace and URL for
//! 30 minutes, within a byte budget shared by all workspaces.
//!
//! Answering the model's `prompt` over a long page needs the chat model and
//! is the runtime's part; this module only reaches outside.

mod cache;
pub mod convert;
pub mod limits;
pub mod markdown;

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;

use crate::net_guard::{AddressPolicy, blocked_host, check_url, guarded_client_same_host};
use cache::PageCache;
use convert::{Converter, RunError};
pub use limits::ConvertError;
pub use markdown::{Converted, Extraction, html_to_markdown};

/// Limits and behaviour of webFetch (defaults from SPEC §2.7).
#[derive(Debug, Clone)]
pub struct WebFetchConfig {
    pub max_url_chars: usize,
    /// Content beyond this is cut.
    pub max_bytes: usize,
    pub timeout: Duration,
    pub cache_ttl: Duration,
    /// Bytes of answers the cache holds, all workspaces together.
    pub cache_max_bytes: u64,
    /// Markdown longer than this goes through the small model with the
    /// caller's prompt (applied by the runtime).
    pub extract_threshold_bytes: usize,
    /// Longest HTML → Markdown conversion (waiting for a free conversion
    /// thread included).
    pub convert_timeout: Duration,
    /// Conversions running at once, each on its own thread.
    pub convert_threads: usize,
}

impl Default for WebFetchConfig {
    fn default() -> Self {
        Self {
            max_url_chars: 2_000,
            max_bytes: 10 * 1024 * 1024,
            timeout: Duration::from_secs(60),
            cache_ttl: Duration::from_secs(30 * 60),
            cache_max_bytes: 64 * 1024 * 1024,
            extract_threshold_bytes: 50_000,
            convert_timeout: Duration::from_secs(10),
            convert_threads: 2,
        }
    }
}

/// A fetched page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// The URL finally read (after same-host redirects).
    pub url: String,
    pub content_type: String,
    pub title: Option<String>,
    /// Markdown for HTML, the text itself otherwise.
    pub content: String,
    /// Bytes read from the server.
    pub bytes: usize,
    /// Whether the body was cut at the size limit.
    pub truncated: bool,
    /// How the main content was found (HTML only).
    pub extraction: Option<Extraction>,
}

/// What a fetch found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fetched {
    Page(Page),
    /// The server redirected to another host; fetch `to` explicitly.
    Redirect {
        from: String,
        to: String,
        status: u16,
    },
}

/// Why a fetch failed; every message is meant for the model to act on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FetchError {
    #[error("the URL is {len} characters long; the limit is {max}")]
    UrlTooLong { len: usize, max: usize },
    #[error("`{0}` is not a valid absolute http(s) URL")]
    InvalidUrl(String),
    #[error("the URL is not allowed: {0}")]
    Blocked(String),
    #[error("the page did not answer within {0:?}")]
    Timeout(Duration),
    #[error("the server answered HTTP {0}")]
    Status(u16),
    #[error("the content is binary ({0}); webFetch reads HTML and text only")]
    Binary(String),
    #[error("the request failed: {0}")]
    Network(String),
    #[error(transparent)]
    Convert(#[from] ConvertError),
    #[error("converting the page to Markdown did not finish within {0:?}")]
    ConvertTimeout(Duration),
    #[error("the page could not be converted to Markdown: {0}")]
    ConvertFailed(String),
}

/// Fetches pages; cheap to clone (one HTTP client, one cache).
#[derive(Clone)]
pub struct WebFetcher {
    client: reqwest::Client,
    policy: AddressPolicy,
    config: Arc<WebFetchConfig>,
    cache: Arc<PageCache>,
    converter: Converter,
}

impl std::fmt::Debug for WebFetcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebFetcher")
            .field("policy", &self.policy)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl WebFetcher {
    pub fn new(policy: AddressPolicy, config: WebFetchConfig) -> Result<Self, FetchError> {
        let client = guarded_client_same_host(policy, config.timeout)
            .map_err(|e| FetchError::Network(e.to_string()))?;
        Ok(Self {
            client,
            policy,
            cache: Arc::new(PageCache::new(config.cache_ttl, config.cache_max_bytes)),
            converter: Converter::new(config.convert_threads, config.convert_timeout),
            config: Arc::new(config),
        })
    }

    pub fn config(&self) -> &WebFetchConfig {
        &self.config
    }

    /// Fetch `url` for `workspace`, from the cache when that workspace
    /// fetched it recently; the flag tells whether the cache answered.
    pub async fn fetch(&self, workspace: &str, url: &str) -> Result<(Fetched, bool), FetchError> {
        let url = self.check(url)?;
        if let Some(hit) = self.cache.get(workspace, url.as_str()) {
            return Ok((hit, true));
        }
        let fetched = tokio::time::timeout(self.config.timeout, self.fetch_uncached(&url))
            .await
            .map_err(|_| FetchError::Timeout(self.config.timeout))??;
        self.cache.insert(workspace, url.as_str(), fetched.clone());
        Ok((fetched, false))
    }

    fn check(&self, url: &str) -> Result<url::Url, FetchError> {
        let len = url.chars().count();
        if len > self.config.max_url_chars {
            return Err(FetchError::UrlTooLong {
                len,
                max: self.config.max_url_chars,
            });
        }
        let parsed =
            url::Url::parse(url.trim()).map_err(|_| FetchError::InvalidUrl(url.to_owned()))?;
        check_url(&parsed, self.policy).map_err(|e| FetchError::Blocked(e.to_string()))?;
        Ok(parsed)
    }

    async fn fetch_uncached(&self, url: &url::Url) -> Result<Fetched, FetchError> {
        let resp = self
            .client
            .get(url.as_str())
            .header(
                reqwest::header::ACCEPT,
                "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.5",
            )
            .send()
            .await
            .map_err(|e| classify(&e, self.config.timeout))?;
        let status = resp.status();
        if status.is_redirection() {
            let to = resp
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|l| resp.url().join(l).ok())
                .ok_or(FetchError::Status(status.as_u16()))?;
            return Ok(Fetched::Redirect {
                from: resp.url().to_string(),
                to: to.to_string(),
                status: status.as_u16(),
            });
        }
        if !status.is_success() {
            return Err(FetchError::Status(status.as_u16()));
        }
        let final_url = resp.url().to_string();
        let content_type = resp
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_ascii_lowercase();
        let kind = Kind::of(&content_type);
        if kind == Kind::Binary {
            return Err(FetchError::Binary(content_type));
        }
        let (body, truncated) = self.read_capped(resp).await?;
        let bytes = body.len();
        if kind == Kind::Unknown && body.contains(&0) {
            return Err(FetchError::Binary("unlabelled binary data".into()));
        }
        let text = String::from_utf8_lossy(&body);
        let looks_html =
            kind == Kind::Html || (kind == Kind::Unknown && text.trim_start().starts_with('<'));
        let (title, content, extraction) = if looks_html {
            // CPU work with deep recursion: on a conversion thread.
            let (html, at) = (text.into_owned(), final_url.clone());
            let c = self
                .converter
                .run(move || html_to_markdown(&html, Some(&at)))
                .await
                .map_err(|e| match e {
                    RunError::Deadline(d) => FetchError::ConvertTimeout(d),
                    other => FetchError::ConvertFailed(other.to_string()),
                })??;
            (c.title, c.markdown, Some(c.extraction))
        } else {
            (None, text.into_owned(), None)
        };
        Ok(Fetched::Page(Page {
            url: final_url,
            content_type,
            title,
            content,
            bytes,
            truncated,
            extraction,
        }))
    }

    /// The body up to the size limit, streamed; whether it was cut.
    async fn read_capped(&self, resp: reqwest::Response) -> Result<(Vec<u8>, bool), FetchError> {
        let max = self.config.max_bytes;
        let mut body = Vec::new();
        let mut stream = resp.bytes_stream();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| classify(&e, self.config.timeout))?;
            let room = max - body.len();
            if chunk.len() > room {
                body.extend_from_slice(&chunk[..room]);
                return Ok((body, true));
            }
            body.extend_from_slice(&chunk);
        }
        Ok((body, false))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Html,
    Text,
    Binary,
    Unknown,
}

impl Kind {
    fn of(content_type: &str) -> Self {
        let mime = content_type.split(';').next().unwrap_or("").trim();
        match mime {
            "" => Self::Unknown,
            "text/html" | "application/xhtml+xml" => Self::Html,
            m if m.starts_with("text/")
                || m.ends_with("+json")
                || m.ends_with("+xml")
                || matches!(
                    m,
                    "application/json"
                        | "application/xml"
                        | "application/javascript"
                        | "application/x-yaml"
                        | "application/yaml"
                        | "application/toml"
                ) =>
            {
                Self::Text
            }
            _ => Self::Binary,
        }
    }
}

/// A reqwest error as something the model can act on; blocked addresses
/// are named as such.
fn classify(e: &reqwest::Error, timeout: Duration) -> FetchError {
    if e.is_timeout() {
        return FetchError::Timeout(timeout);
    }
    if let Some(blocked) = blocked_host(e) {
        return FetchError::Blocked(blocked.to_string());
    }
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text = format!("{text}: {s}");
        source = s.source();
    }
    FetchError::Network(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_types() {
        assert_eq!(Kind::of("text/html; charset=utf-8"), Kind::Html);
        assert_eq!(Kind::of("application/xhtml+xml"), Kind::Html);
        assert_eq!(Kind::of("text/plain"), Kind::Text);
        assert_eq!(Kind::of("application/ld+json"), Kind::Text);
        assert_eq!(Kind::of("application/pdf"), Kind::Binary);
        assert_eq!(Kind::of("image/png"), Kind::Binary);
        assert_eq!(Kind::of(""), Kind::Unknown);
    }
}
