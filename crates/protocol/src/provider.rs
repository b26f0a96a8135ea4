//! The model providers a server is configured with, as operators see them
//! (`GET /v1/providers`), and the answer of a provider check.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// A configured chat model provider. Its API key is never shown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProviderInfo {
    /// `default` for the default provider (`RTC_LLM_*`), else the name
    /// of its `[providers.NAME]` section, which assistants give in
    /// `llm.provider`.
    pub name: String,
    pub is_default: bool,
    /// The base URL with credentials in it replaced by `***`.
    pub base_url: String,
    pub default_model: String,
    /// The model of judges, `llm` leaves and extraction, when it serves one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub small_model: Option<String>,
    pub api_key_set: bool,
    /// Whether it can be used as configured (a check tells whether it answers).
    pub ready: bool,
    /// Why it is not ready, and what to set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

/// What one tiny request to a provider showed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProviderCheck {
    pub name: String,
    /// The provider answered the request.
    pub ok: bool,
    /// The model asked (the provider's default model).
    pub model: String,
    /// Until the whole answer, or the error, arrived.
    pub latency_ms: u64,
    /// The provider's error, as it gave it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}
