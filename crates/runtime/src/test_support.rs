//! Test helpers shared by the runtime's unit tests.

/// Runtime settings for unit tests that never call a model or a tool.
pub(crate) fn config() -> crate::RuntimeConfig {
    config_at("http://127.0.0.1:9/v1")
}

/// Runtime settings whose only provider is at `base_url` (a mock model),
/// its default model `m`, without retries.
pub(crate) fn config_at(base_url: &str) -> crate::RuntimeConfig {
    use std::sync::Arc;

    rtc_testkit::init_tls();
    let mut llm = rtc_llm::ProviderConfig::new(base_url, None);
    llm.max_retries = 0;
    let provider = crate::Provider {
        client: Arc::new(rtc_llm::OpenAiClient::new(llm, reqwest::Client::new())),
        default_model: "m".into(),
        small_model: None,
        max_tools: crate::DEFAULT_MAX_TOOLS,
    };
    crate::RuntimeConfig::with_defaults(provider, rtc_tools::net_guard::AddressPolicy::AllowPrivate)
        .unwrap()
}

/// A migrated SQLite store in `dir`.
pub(crate) async fn sqlite_store(dir: &std::path::Path) -> rtc_store::Store {
    use rtc_store::{MasterKey, SecretBox, Store};

    let url = format!("sqlite://{}", dir.join("r.db").display());
    let store = Store::connect(&url, SecretBox::new(&MasterKey::generate()))
        .await
        .unwrap();
    store.migrate().await.unwrap();
    store
}
