//! Test helpers shared by the runtime's unit tests.

use rtc_store::{MasterKey, NewSession, SecretBox, Store};
use serde_json::{Map, json};

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
            config: &json!({}),
            client_token: "t",
        })
        .await
        .unwrap();
    store
}

/// Runtime settings for unit tests that never call a model or a tool.
pub(crate) fn config() -> crate::RuntimeConfig {
    use std::sync::Arc;
    use std::time::Duration;

    use rtc_tools::net_guard::AddressPolicy;

    rtc_testkit::init_tls();
    let llm = rtc_llm::ProviderConfig::new("http://127.0.0.1:9/v1", None);
    crate::RuntimeConfig {
        default_provider: crate::Provider {
            client: Arc::new(rtc_llm::OpenAiClient::new(llm, reqwest::Client::new())),
            default_model: "m".into(),
            small_model: None,
        },
        providers: std::collections::BTreeMap::new(),
        max_steps_per_turn: 4,
        http: rtc_tools::http_exec::HttpExecutor::new(AddressPolicy::AllowPrivate, 1 << 20)
            .unwrap(),
        mcp: rtc_tools::mcp::McpConnector {
            policy: AddressPolicy::AllowPrivate,
            timeout: Duration::from_secs(1),
        },
        mcp_call_timeout: Duration::from_secs(1),
        idle_session_ttl: Duration::from_secs(60),
        web_search: None,
        web_fetch: None,
        loops: crate::LoopSettings::default(),
        sub_agents: crate::SubAgentLimits::default(),
    }
}
