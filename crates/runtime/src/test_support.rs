//! Test helpers shared by the runtime's unit tests.

use rtc_store::{MasterKey, NewSession, SecretBox, Store};
use serde_json::Map;

/// A migrated SQLite store in `dir` with workspace `ws` and session `s`.
pub(crate) async fn store_with_session(dir: &tempfile::TempDir) -> Store {
    let url = format!("sqlite://{}", dir.path().join("t.db").display());
    let store = Store::connect(&url, SecretBox::new(&MasterKey::generate()))
        .await
        .unwrap();
    store.migrate().await.unwrap();
    store.create_workspace("ws", "w", "k").await.unwrap();
    store
        .create_session(NewSession {
            id: "s",
            workspace_id: "ws",
            assistant_id: "a",
            parent_id: None,
            root_id: "s",
            user_id: None,
            title: None,
            variables: &Map::new(),
            config: "{}",
            client_token: "t",
            workflow_id: None,
            owner: None,
        })
        .await
        .unwrap();
    store
}

/// Runtime settings for unit tests that never call a model or a tool.
pub(crate) fn config() -> crate::RuntimeConfig {
    use std::sync::Arc;

    rtc_testkit::init_tls();
    let llm = rtc_llm::ProviderConfig::new("http://127.0.0.1:9/v1", None);
    let provider = crate::Provider {
        client: Arc::new(rtc_llm::OpenAiClient::new(llm, reqwest::Client::new())),
        default_model: "m".into(),
        small_model: None,
    };
    crate::RuntimeConfig::with_defaults(provider, rtc_tools::net_guard::AddressPolicy::AllowPrivate)
        .unwrap()
}
