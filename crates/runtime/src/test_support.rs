//! Test helpers shared by the runtime's unit tests.

/// Runtime settings for unit tests that never call a model or a tool.
pub(crate) fn config() -> crate::RuntimeConfig {
    use std::sync::Arc;

    rtc_testkit::init_tls();
    let llm = rtc_llm::ProviderConfig::new("http://127.0.0.1:9/v1", None);
    let provider = crate::Provider {
        client: Arc::new(rtc_llm::OpenAiClient::new(llm, reqwest::Client::new())),
        default_model: "m".into(),
        small_model: None,
        max_tools: crate::DEFAULT_MAX_TOOLS,
    };
    crate::RuntimeConfig::with_defaults(provider, rtc_tools::net_guard::AddressPolicy::AllowPrivate)
        .unwrap()
}
