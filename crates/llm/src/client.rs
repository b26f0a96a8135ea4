//! HTTP transport: retries before the first byte, SSE parsing, idle
//! timeout. A stream that ends (or whose connection breaks) with neither
//! `[DONE]` nor a finish reason was cut: before any text reached the
//! caller it is sent again like a 5xx; after, it is [`LlmError::Cut`]. A
//! finish reason without `[DONE]`, or `[DONE]` without a finish reason,
//! is a tolerated quirk. `Retry-After` is read in every form
//! (`retry-after-ms`, seconds, an HTTP date) and honoured up to a minute,
//! as the official SDKs do; a 429 for an exhausted quota is not retried.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use eventsource_stream::Eventsource;
use futures::StreamExt;
use rtc_core::llm::{ChatRequest, LlmClient, LlmError, LlmEvent, LlmStream};
use rtc_core::model_caps::{CapsOverride, ModelCaps, model_caps};
use serde_json::Value;

use crate::accumulate::Accumulator;
use crate::lanes::{Lanes, Lease, MakeClient};
use crate::wire::request_body;

/// One OpenAI-compatible endpoint.
#[derive(Clone)]
pub struct ProviderConfig {
    /// e.g. `https://api.openai.com/v1`; `/chat/completions` is appended.
    pub base_url: String,
    pub api_key: Option<String>,
    /// Longest wait for the response to start and between two chunks.
    pub idle_timeout: Duration,
    /// Retries on 429, 5xx and connection errors (before any output).
    pub max_retries: u32,
    /// First backoff; doubled each retry, with jitter.
    pub backoff: Duration,
    /// What this provider's models accept, over the table
    /// (`rtc_core::model_caps`): for all of them, then per model name.
    pub caps: CapsOverride,
    pub model_caps: BTreeMap<String, CapsOverride>,
    /// Requests in flight on one connection lane before another is opened
    /// ([`crate::lanes`]): below the provider's HTTP/2 stream limit.
    pub streams_per_connection: usize,
}

impl std::fmt::Debug for ProviderConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

impl ProviderConfig {
    pub fn new(base_url: impl Into<String>, api_key: Option<String>) -> Self {
        Self {
            base_url: base_url.into(),
            api_key,
            idle_timeout: Duration::from_secs(60),
            max_retries: 3,
            backoff: Duration::from_millis(250),
            caps: CapsOverride::default(),
            model_caps: BTreeMap::new(),
            streams_per_connection: DEFAULT_STREAMS_PER_CONNECTION,
        }
    }
}

/// Requests in flight per connection lane unless configured: at or below
/// the HTTP/2 stream limits providers commonly set (100 to 256).
pub const DEFAULT_STREAMS_PER_CONNECTION: usize = 100;

/// The client; cheap to clone.
#[derive(Clone, Debug)]
pub struct OpenAiClient {
    config: ProviderConfig,
    lanes: Arc<Lanes>,
}

impl OpenAiClient {
    /// Every request on `http` (one connection over HTTP/2: see
    /// [`OpenAiClient::with_lanes`]).
    pub fn new(config: ProviderConfig, http: reqwest::Client) -> Self {
        Self {
            config,
            lanes: Arc::new(Lanes::single(http)),
        }
    }

    /// Requests spread over `first` and clients `make` opens as needed,
    /// each carrying up to [`ProviderConfig::streams_per_connection`] at
    /// once (for HTTP/2 providers: over HTTP/1.1 every request has a
    /// connection of its own anyway, and [`OpenAiClient::new`] keeps one
    /// pool of idle ones).
    pub fn with_lanes(config: ProviderConfig, first: reqwest::Client, make: MakeClient) -> Self {
        let lanes = Lanes::new(first, make, config.streams_per_connection);
        Self {
            config,
            lanes: Arc::new(lanes),
        }
    }

    /// What `model` accepts: the table, then this provider's overrides.
    pub fn caps(&self, model: &str) -> ModelCaps {
        let caps = self.config.caps.apply(model_caps(model));
        match self.config.model_caps.get(model) {
            Some(o) => o.apply(caps),
            None => caps,
        }
    }

    fn url(&self) -> String {
        format!(
            "{}/chat/completions",
            self.config.base_url.trim_end_matches('/')
        )
    }

    /// Send the request, retrying as [`ProviderConfig::max_retries`] says
    /// (`attempt`: the retries made so far for this answer, cut streams
    /// included). Each attempt writes the body anew and hands it over as a
    /// one-chunk stream, so the bytes are freed once written: a request
    /// waiting on its model holds the [`ChatRequest`] (shared tool specs),
    /// not a second copy of its JSON for reqwest's own redirects and retries.
    ///
    /// The answer comes with its place on a connection lane, to hold until
    /// the answer has been read.
    async fn send(
        &self,
        request: &ChatRequest,
        attempt: &mut u32,
    ) -> Result<(reqwest::Response, Lease), LlmError> {
        let caps = self.caps(&request.model);
        loop {
            let body = request_body(request, caps);
            let length = body.len();
            let once = futures::stream::once(std::future::ready(Ok::<_, std::io::Error>(body)));
            let (http, lease) = self.lanes.take();
            let mut req = http
                .post(self.url())
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .header(reqwest::header::CONTENT_LENGTH, length)
                .body(reqwest::Body::wrap_stream(once));
            if let Some(key) = &self.config.api_key {
                req = req.bearer_auth(key);
            }
            let outcome = tokio::time::timeout(self.config.idle_timeout, req.send()).await;
            let (failure, retry_after) = match outcome {
                Err(_) => (LlmError::Timeout, None),
                // A request that failed on the way (a refused connection,
                // a reset, an HTTP/2 stream the provider refused past its
                // limit) is sent again, as the official SDKs do; one that
                // could not be built or was redirected away fails as it is.
                Ok(Err(e))
                    if (e.is_connect() || e.is_timeout() || e.is_request()) && !e.is_redirect() =>
                {
                    (LlmError::Connect(e.without_url().to_string()), None)
                }
                Ok(Err(e)) => return Err(LlmError::Connect(e.without_url().to_string())),
                Ok(Ok(resp)) if resp.status().is_success() => return Ok((resp, lease)),
                Ok(Ok(resp)) => {
                    let status = resp.status().as_u16();
                    let retry_after = retry_after(resp.headers(), std::time::SystemTime::now());
                    // A provider that sends an error's headers, then stalls,
                    // holds neither the turn nor the connection lane.
                    let text = tokio::time::timeout(self.config.idle_timeout, resp.text())
                        .await
                        .ok()
                        .and_then(Result::ok)
                        .unwrap_or_default();
                    if status == 429 && is_quota_error(&text) {
                        return Err(LlmError::Quota(error_message(&text)));
                    }
                    if status == 400 && is_context_length_error(&text) {
                        return Err(LlmError::ContextLength(error_message(&text)));
                    }
                    let failure = LlmError::Http {
                        status,
                        message: error_message(&text),
                    };
                    if !(status == 429 || status >= 500) {
                        return Err(failure);
                    }
                    (failure, retry_after)
                }
            };
            if *attempt >= self.config.max_retries {
                return Err(failure);
            }
            // Not in flight while it waits: its lane's place is free.
            drop(lease);
            self.back_off(*attempt, retry_after).await;
            *attempt += 1;
        }
    }

    /// Wait before retry `attempt`: what the provider asked, else the
    /// doubling backoff with jitter.
    async fn back_off(&self, attempt: u32, retry_after: Option<Duration>) {
        let base = self.config.backoff.saturating_mul(1 << attempt.min(6));
        let jitter = Duration::from_millis(rand::random_range(
            0..=base.as_millis().min(1000) as u64 / 2,
        ));
        let wait = retry_after.unwrap_or(base + jitter);
        tracing::warn!(attempt, ?wait, "model request failed; retrying");
        tokio::time::sleep(wait).await;
    }
}

/// The longest wait a provider's `Retry-After` is honoured for; a longer
/// one falls back to the backoff (as the official SDKs do).
const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

/// How long the provider asks to wait: `retry-after-ms` (milliseconds),
/// else `retry-after` in seconds or as an HTTP date; `None` when absent,
/// unreadable, not positive or past [`MAX_RETRY_AFTER`].
pub fn retry_after(
    headers: &reqwest::header::HeaderMap,
    now: std::time::SystemTime,
) -> Option<Duration> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    let wait = if let Some(ms) = header("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        Duration::try_from_secs_f64(ms / 1000.0).ok()
    } else {
        let value = header("retry-after")?;
        match value.parse::<f64>() {
            Ok(secs) => Duration::try_from_secs_f64(secs).ok(),
            Err(_) => httpdate::parse_http_date(value)
                .ok()?
                .duration_since(now)
                .ok(),
        }
    }?;
    (!wait.is_zero() && wait <= MAX_RETRY_AFTER).then_some(wait)
}

/// Whether a 429's body says the account's quota is exhausted (OpenAI's
/// `insufficient_quota`), which no retry cures.
fn is_quota_error(body: &str) -> bool {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    parsed.is_some_and(|v| {
        ["/error/code", "/error/type"]
            .iter()
            .any(|p| v.pointer(p).and_then(Value::as_str) == Some("insufficient_quota"))
    })
}

/// Whether a 400's body says the request is longer than the model's
/// context window: OpenAI's `context_length_exceeded` code, or the words
/// other providers use for it.
fn is_context_length_error(body: &str) -> bool {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    if parsed.as_ref().is_some_and(|v| {
        v.pointer("/error/code").and_then(Value::as_str) == Some("context_length_exceeded")
    }) {
        return true;
    }
    let lower = body.to_ascii_lowercase();
    [
        "maximum context length",
        "context_length_exceeded",
        "context window",
        "prompt is too long",
        "too many tokens",
    ]
    .iter()
    .any(|w| lower.contains(w))
}

/// The provider's error message, shortened.
fn error_message(body: &str) -> String {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let msg = parsed
        .as_ref()
        .and_then(|v| {
            v.pointer("/error/message")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .unwrap_or_else(|| body.to_owned());
    msg.chars().take(500).collect()
}

/// `url` with its user, password and query values replaced by `***`
/// (some gateways take their key in the URL).
pub fn redacted_base_url(url: &str) -> String {
    let Ok(mut u) = reqwest::Url::parse(url) else {
        return "(not a URL)".to_owned();
    };
    if !u.username().is_empty() {
        let _ = u.set_username("***");
    }
    if u.password().is_some() {
        let _ = u.set_password(Some("***"));
    }
    if u.query().is_some() {
        let names: Vec<String> = u.query_pairs().map(|(k, _)| k.into_owned()).collect();
        u.query_pairs_mut()
            .clear()
            .extend_pairs(names.iter().map(|k| (k.as_str(), "***")));
    }
    u.set_fragment(None);
    u.to_string()
}

impl LlmClient for OpenAiClient {
    fn caps(&self, model: &str) -> ModelCaps {
        OpenAiClient::caps(self, model)
    }

    fn count_tokens(&self, model: &str, text: &str) -> u32 {
        crate::tokenizer::count(model, text)
    }

    fn endpoint(&self) -> Option<rtc_core::llm::Endpoint> {
        Some(rtc_core::llm::Endpoint {
            base_url: redacted_base_url(&self.config.base_url),
            api_key_set: self.config.api_key.is_some(),
        })
    }

    fn stream(&self, request: ChatRequest) -> LlmStream {
        let answer = Answer {
            client: self.clone(),
            request,
            attempt: 0,
            phase: Phase::Send,
        };
        futures::stream::unfold(answer, |mut answer| async move {
            let item = answer.next().await?;
            Some((item, answer))
        })
        .boxed()
    }
}

type Sse = futures::stream::BoxStream<
    'static,
    Result<eventsource_stream::Event, eventsource_stream::EventStreamError<reqwest::Error>>,
>;

/// Where one answer is.
enum Phase {
    /// (Re)send the request.
    Send,
    /// Reading a streamed body; `streamed`: text reached the caller.
    /// The lease keeps the request's place on its lane while it streams.
    Reading {
        sse: Sse,
        acc: Accumulator,
        streamed: bool,
        _lease: Lease,
    },
    Finished,
}

/// One answer being read, across the retries of a cut stream.
struct Answer {
    client: OpenAiClient,
    request: ChatRequest,
    /// Retries made so far (failed requests and cut streams alike).
    attempt: u32,
    phase: Phase,
}

impl Answer {
    async fn next(&mut self) -> Option<Result<LlmEvent, LlmError>> {
        let idle = self.client.config.idle_timeout;
        loop {
            match &mut self.phase {
                Phase::Finished => return None,
                Phase::Send => match self.client.send(&self.request, &mut self.attempt).await {
                    Err(e) => return self.fail(e),
                    Ok((resp, _lease)) if is_json(&resp) => {
                        self.phase = Phase::Finished;
                        return Some(whole(resp, idle).await);
                    }
                    Ok((resp, lease)) => {
                        self.phase = Phase::Reading {
                            sse: resp.bytes_stream().eventsource().boxed(),
                            acc: Accumulator::default(),
                            streamed: false,
                            _lease: lease,
                        }
                    }
                },
                Phase::Reading {
                    sse, acc, streamed, ..
                } => {
                    let next = match tokio::time::timeout(idle, sse.next()).await {
                        Err(_) => return self.fail(LlmError::Timeout),
                        Ok(next) => next,
                    };
                    let complete = match next {
                        Some(Ok(event)) => {
                            let data = event.data.trim();
                            if data.is_empty() {
                                continue;
                            }
                            if data != "[DONE]" {
                                let chunk: Value = match serde_json::from_str(data) {
                                    Ok(chunk) => chunk,
                                    Err(e) => {
                                        let e = LlmError::Protocol(format!("bad chunk: {e}"));
                                        return self.fail(e);
                                    }
                                };
                                match acc.push(&chunk) {
                                    Ok(Some(text)) => {
                                        *streamed = true;
                                        return Some(Ok(LlmEvent::TextDelta(text)));
                                    }
                                    Ok(None) => continue,
                                    Err(e) => return self.fail(e),
                                }
                            }
                            true
                        }
                        // The body ended: complete only with a finish reason.
                        None => acc.finished(),
                        // The connection broke.
                        Some(Err(_)) => false,
                    };
                    if complete {
                        let Phase::Reading { acc, .. } =
                            std::mem::replace(&mut self.phase, Phase::Finished)
                        else {
                            return None;
                        };
                        return Some(Ok(LlmEvent::Done(acc.finish())));
                    }
                    // Cut: sent again while nothing reached the caller.
                    if *streamed || self.attempt >= self.client.config.max_retries {
                        return self.fail(LlmError::Cut);
                    }
                    tracing::warn!("the model's stream was cut before any output");
                    // The cut body (and its lane's place) goes before the wait.
                    self.phase = Phase::Send;
                    self.client.back_off(self.attempt, None).await;
                    self.attempt += 1;
                }
            }
        }
    }

    fn fail(&mut self, e: LlmError) -> Option<Result<LlmEvent, LlmError>> {
        self.phase = Phase::Finished;
        Some(Err(e))
    }
}

/// Whether the provider answered with a whole JSON completion (it ignores
/// `stream: true`).
fn is_json(resp: &reqwest::Response) -> bool {
    resp.headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("application/json"))
}

/// A whole JSON answer.
async fn whole(resp: reqwest::Response, idle: Duration) -> Result<LlmEvent, LlmError> {
    let body: Value = tokio::time::timeout(idle, resp.json())
        .await
        .map_err(|_| LlmError::Timeout)?
        .map_err(|e| LlmError::Protocol(e.without_url().to_string()))?;
    let mut acc = Accumulator::default();
    acc.push(&body)?;
    Ok(LlmEvent::Done(acc.finish()))
}

#[cfg(test)]
mod redaction_tests {
    use super::redacted_base_url;

    #[test]
    fn credentials_in_a_base_url_are_hidden() {
        assert_eq!(
            redacted_base_url("https://api.openai.com/v1"),
            "https://api.openai.com/v1"
        );
        assert_eq!(
            redacted_base_url("https://user:sk-secret@gw.example.com/v1?key=sk-secret&x=1#frag"),
            "https://***:***@gw.example.com/v1?key=***&x=***"
        );
        assert_eq!(redacted_base_url("not a url"), "(not a URL)");
    }
}

#[cfg(test)]
mod retry_after_tests {
    use std::time::{Duration, SystemTime};

    use reqwest::header::{HeaderMap, HeaderValue};

    use super::retry_after;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn every_form_is_read_and_long_waits_fall_back() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(784_111_777);
        let wait = |pairs: &[(&'static str, &str)]| retry_after(&headers(pairs), now);
        assert_eq!(wait(&[("retry-after", "2")]), Some(Duration::from_secs(2)));
        assert_eq!(
            wait(&[("retry-after", "0.5")]),
            Some(Duration::from_millis(500))
        );
        assert_eq!(
            wait(&[("retry-after-ms", "750"), ("retry-after", "9")]),
            Some(Duration::from_millis(750)),
            "retry-after-ms comes first"
        );
        // 784111777 is Sun, 06 Nov 1994 08:49:37 GMT.
        assert_eq!(
            wait(&[("retry-after", "Sun, 06 Nov 1994 08:49:47 GMT")]),
            Some(Duration::from_secs(10))
        );
        assert_eq!(
            wait(&[("retry-after", "Sun, 06 Nov 1994 08:49:27 GMT")]),
            None,
            "past"
        );
        assert_eq!(
            wait(&[("retry-after", "120")]),
            None,
            "past a minute: the backoff"
        );
        assert_eq!(wait(&[("retry-after", "0")]), None);
        assert_eq!(wait(&[("retry-after", "soon")]), None);
        assert_eq!(wait(&[]), None);
    }
}
