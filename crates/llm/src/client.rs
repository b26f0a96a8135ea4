//! HTTP transport: retries before the first byte, SSE parsing, idle timeout.

use std::time::Duration;

use eventsource_stream::Eventsource;
use futures::{Stream, StreamExt};
use rtc_core::llm::{ChatRequest, LlmClient, LlmError, LlmEvent, LlmStream};
use serde_json::Value;

use crate::accumulate::Accumulator;
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
        }
    }
}

/// The client; cheap to clone.
#[derive(Clone, Debug)]
pub struct OpenAiClient {
    config: ProviderConfig,
    http: reqwest::Client,
}

impl OpenAiClient {
    pub fn new(config: ProviderConfig, http: reqwest::Client) -> Self {
        Self { config, http }
    }

    fn url(&self) -> String {
        format!(
            "{}/chat/completions",
            self.config.base_url.trim_end_matches('/')
        )
    }

    /// Send the request, retrying as [`ProviderConfig::max_retries`] says.
    /// Each attempt writes the body anew and hands it over as a one-chunk
    /// stream, so the bytes are freed once written: a request waiting on
    /// its model holds the [`ChatRequest`] (shared tool specs), not a
    /// second copy of its JSON for reqwest's own redirects and retries.
    async fn send(&self, request: &ChatRequest) -> Result<reqwest::Response, LlmError> {
        let mut attempt = 0;
        loop {
            let body = request_body(request);
            let length = body.len();
            let once = futures::stream::once(std::future::ready(Ok::<_, std::io::Error>(body)));
            let mut req = self
                .http
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
                Ok(Err(e)) if e.is_connect() || e.is_timeout() => {
                    (LlmError::Connect(e.without_url().to_string()), None)
                }
                Ok(Err(e)) => return Err(LlmError::Connect(e.without_url().to_string())),
                Ok(Ok(resp)) if resp.status().is_success() => return Ok(resp),
                Ok(Ok(resp)) => {
                    let status = resp.status().as_u16();
                    let retry_after = resp
                        .headers()
                        .get(reqwest::header::RETRY_AFTER)
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.parse::<u64>().ok())
                        .map(|s| Duration::from_secs(s.min(20)));
                    let text = resp.text().await.unwrap_or_default();
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
            if attempt >= self.config.max_retries {
                return Err(failure);
            }
            let base = self.config.backoff.saturating_mul(1 << attempt.min(6));
            let jitter = Duration::from_millis(rand::random_range(
                0..=base.as_millis().min(1000) as u64 / 2,
            ));
            let wait = retry_after.unwrap_or(base + jitter);
            tracing::warn!(attempt, ?wait, "model request failed; retrying");
            tokio::time::sleep(wait).await;
            attempt += 1;
        }
    }
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
    fn endpoint(&self) -> Option<rtc_core::llm::Endpoint> {
        Some(rtc_core::llm::Endpoint {
            base_url: redacted_base_url(&self.config.base_url),
            api_key_set: self.config.api_key.is_some(),
        })
    }

    fn stream(&self, request: ChatRequest) -> LlmStream {
        let this = self.clone();
        let idle = self.config.idle_timeout;
        let start = async move { this.send(&request).await };
        futures::stream::once(start)
            .map(move |resp| -> LlmStream {
                match resp {
                    Err(e) => Box::pin(futures::stream::once(async move { Err(e) })),
                    Ok(resp) => Box::pin(events(resp, idle)),
                }
            })
            .flatten()
            .boxed()
    }
}

struct Reading<S> {
    sse: S,
    acc: Option<Accumulator>,
}

/// The events of one response: a streamed SSE body, or a whole JSON answer
/// from a provider that ignores `stream: true`.
fn events(
    resp: reqwest::Response,
    idle: Duration,
) -> impl Stream<Item = Result<LlmEvent, LlmError>> + Send {
    let is_json = resp
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("application/json"));
    if is_json {
        let whole = async move {
            let body: Value = tokio::time::timeout(idle, resp.json())
                .await
                .map_err(|_| LlmError::Timeout)?
                .map_err(|e| LlmError::Protocol(e.without_url().to_string()))?;
            let mut acc = Accumulator::default();
            acc.push(&body)?;
            Ok(LlmEvent::Done(acc.finish()))
        };
        return futures::stream::once(whole).boxed();
    }
    let state = Reading {
        sse: resp.bytes_stream().eventsource(),
        acc: Some(Accumulator::default()),
    };
    futures::stream::try_unfold(state, move |mut st| async move {
        loop {
            let Some(acc) = st.acc.as_mut() else {
                return Ok(None);
            };
            match tokio::time::timeout(idle, st.sse.next()).await {
                Err(_) => return Err(LlmError::Timeout),
                Ok(Some(Err(e))) => return Err(LlmError::Connect(e.to_string())),
                Ok(Some(Ok(event))) => {
                    let data = event.data.trim();
                    if data.is_empty() {
                        continue;
                    }
                    if data != "[DONE]" {
                        let chunk: Value = serde_json::from_str(data)
                            .map_err(|e| LlmError::Protocol(format!("bad chunk: {e}")))?;
                        if let Some(text) = acc.push(&chunk)? {
                            return Ok(Some((LlmEvent::TextDelta(text), st)));
                        }
                        continue;
                    }
                }
                Ok(None) => {}
            }
            // `[DONE]` or the end of the body.
            let done = st.acc.take().map(Accumulator::finish).unwrap_or_default();
            return Ok(Some((LlmEvent::Done(done), st)));
        }
    })
    .boxed()
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
