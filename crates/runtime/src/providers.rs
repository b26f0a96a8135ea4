//! The configured model providers as operators see them, and a check
//! that sends one tiny request to one of them.

use std::time::{Duration, Instant};

use futures::StreamExt;
use rtc_core::llm::{ChatMessage, ChatRequest, LlmEvent};
use rtc_protocol::{ProviderCheck, ProviderInfo};

use crate::{Provider, Runtime, RuntimeError};

/// The name of the default provider.
pub const DEFAULT_PROVIDER: &str = "default";
/// Longest wait for a check's answer.
const CHECK_TIMEOUT: Duration = Duration::from_secs(20);

/// How `p` looks to an operator (`rtc-agent doctor` shows it too).
pub fn describe_provider(name: &str, is_default: bool, p: &Provider) -> ProviderInfo {
    let endpoint = p.client.endpoint();
    let base_url = endpoint
        .as_ref()
        .map_or_else(|| "(in process)".to_owned(), |e| e.base_url.clone());
    let api_key_set = endpoint.as_ref().is_some_and(|e| e.api_key_set);
    // OpenAI itself answers nothing without a key; other servers (local
    // ones) may not need one, which only a check can tell.
    let needs_key = base_url.starts_with("https://api.openai.com");
    let problem = (needs_key && !api_key_set).then(|| {
        if is_default {
            "no API key: set RTC_LLM_API_KEY (or RTC_LLM_BASE_URL and RTC_LLM_MODEL for another OpenAI-compatible server)".to_owned()
        } else {
            format!("no API key: set `api_key` under [providers.{name}] in the config file")
        }
    });
    ProviderInfo {
        name: name.to_owned(),
        is_default,
        base_url,
        default_model: p.default_model.clone(),
        small_model: p.small_model.clone(),
        api_key_set,
        ready: problem.is_none(),
        problem,
    }
}

impl Runtime {
    /// The default provider first, then the named ones by name.
    pub fn providers(&self) -> Vec<ProviderInfo> {
        let config = &self.inner.config;
        std::iter::once(describe_provider(
            DEFAULT_PROVIDER,
            true,
            &config.kernel.default_provider,
        ))
        .chain(
            config
                .kernel
                .providers
                .iter()
                .map(|(n, p)| describe_provider(n, false, p)),
        )
        .collect()
    }

    /// Send the provider `name` one short request with its default model.
    pub async fn check_provider(&self, name: &str) -> Result<ProviderCheck, RuntimeError> {
        let config = &self.inner.config;
        let provider = match name {
            DEFAULT_PROVIDER => &config.kernel.default_provider,
            other => config
                .kernel
                .providers
                .get(other)
                .ok_or_else(|| RuntimeError::not_found("provider", other))?,
        };
        Ok(check_provider(name, provider).await)
    }
}

/// Send `provider` one short request with its default model.
pub async fn check_provider(name: &str, provider: &Provider) -> ProviderCheck {
    let request = ChatRequest {
        model: provider.default_model.clone(),
        messages: vec![ChatMessage::User {
            content: "Reply with the single word: ok".to_owned(),
        }],
        max_tokens: Some(16),
        ..ChatRequest::default()
    };
    let started = Instant::now();
    let answer = tokio::time::timeout(CHECK_TIMEOUT, async {
        let mut stream = provider.client.stream(request);
        while let Some(event) = stream.next().await {
            match event {
                Ok(LlmEvent::Done(_)) => return Ok(()),
                Ok(_) => {}
                Err(e) => return Err(e.to_string()),
            }
        }
        Err("the provider closed the answer before it was complete".to_owned())
    })
    .await
    .unwrap_or_else(|_| Err(format!("no answer within {} s", CHECK_TIMEOUT.as_secs())));
    ProviderCheck {
        name: name.to_owned(),
        ok: answer.is_ok(),
        model: provider.default_model.clone(),
        latency_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        error: answer.err(),
    }
}
