//! Idle session contexts leave memory (R-PF-2) and come back intact: the
//! history the model sees, the variables and the event sequence continue.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "integration tests fail loudly"
)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use rtc_llm::{OpenAiClient, ProviderConfig};
use rtc_protocol::{Assistant, CreateSessionParams};
use rtc_runtime::{Provider, Runtime, RuntimeConfig};
use rtc_store::{MasterKey, SecretBox, Store};
use rtc_testkit::{MockLlm, MockReply};
use rtc_tools::http_exec::HttpExecutor;
use rtc_tools::mcp::McpConnector;
use rtc_tools::net_guard::AddressPolicy;
use serde_json::json;

async fn runtime(dir: &tempfile::TempDir, mock: &MockLlm, ttl: Duration) -> Runtime {
    rtc_testkit::init_tls();
    let url = format!("sqlite://{}", dir.path().join("r.db").display());
    let store = Store::connect(&url, SecretBox::new(&MasterKey::generate()))
        .await
        .unwrap();
    store.migrate().await.unwrap();
    store.create_workspace("ws", "w", "key").await.unwrap();
    let assistant: Assistant =
        serde_json::from_value(json!({"name": "a", "systemPrompt": "Hi."})).unwrap();
    store
        .insert("ws", Some("asst".into()), assistant)
        .await
        .unwrap();
    let mut cfg = ProviderConfig::new(&mock.base_url, None);
    cfg.max_retries = 0;
    let config = RuntimeConfig {
        default_provider: Provider {
            client: Arc::new(OpenAiClient::new(cfg, reqwest::Client::new())),
            default_model: "mock".into(),
        },
        providers: BTreeMap::new(),
        small_model: "mock".into(),
        max_steps_per_turn: 8,
        http: HttpExecutor::new(AddressPolicy::AllowPrivate, 1 << 20).unwrap(),
        mcp: McpConnector {
            policy: AddressPolicy::AllowPrivate,
            timeout: Duration::from_secs(5),
        },
        mcp_call_timeout: Duration::from_secs(5),
        idle_session_ttl: ttl,
        web_search: None,
        web_fetch: None,
        loops: rtc_runtime::LoopSettings::default(),
        sub_agents: rtc_runtime::SubAgentLimits::default(),
    };
    Runtime::new(store, config)
}

async fn session(rt: &Runtime) -> String {
    let params = CreateSessionParams {
        assistant_id: Some("asst".into()),
        ..Default::default()
    };
    rt.create_session("ws", params).await.unwrap().id
}

#[tokio::test]
async fn an_evicted_session_comes_back_with_its_history_and_sequence() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockLlm::start(vec![
        MockReply::text("First answer."),
        MockReply::text("Second answer."),
    ])
    .await
    .unwrap();
    let rt = runtime(&dir, &mock, Duration::ZERO).await;
    let id = session(&rt).await;
    rt.send_user_message("ws", &id, "one").await.unwrap();
    rt.idle("ws", &id).await.unwrap();
    assert_eq!(rt.live_sessions(), 1);
    assert_eq!(rt.evict_idle_sessions(), 1);
    assert_eq!(rt.live_sessions(), 0);

    rt.send_user_message("ws", &id, "two").await.unwrap();
    rt.idle("ws", &id).await.unwrap();
    let second = &mock.requests()[1];
    let contents: Vec<&str> = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert_eq!(contents[1..], ["one", "First answer.", "two"]);
    let state = rt.state("ws", &id).await.unwrap();
    assert_eq!(
        state["system__turn_count"], 2,
        "variables reloaded from the store"
    );

    let events: Vec<_> = rt
        .subscribe("ws", &id, 0)
        .await
        .unwrap()
        .take_until(tokio::time::sleep(Duration::from_millis(300)))
        .collect()
        .await;
    let seqs: Vec<i64> = events.iter().map(|e| e.seq).collect();
    let expected: Vec<i64> = (1..=seqs.len() as i64).collect();
    assert_eq!(seqs, expected, "one gap-free sequence across the reload");
    assert_eq!(
        events.iter().filter(|e| e.kind == "turn.completed").count(),
        2
    );
}

#[tokio::test]
async fn sessions_in_use_stay_in_memory() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockLlm::start(vec![]).await.unwrap();
    let rt = runtime(&dir, &mock, Duration::ZERO).await;
    let watched = session(&rt).await;
    let connected = session(&rt).await;
    let idle = session(&rt).await;
    let _events = rt.subscribe("ws", &watched, 0).await.unwrap();
    let _client = rt.connect_client("ws", &connected).await.unwrap();
    assert_eq!(rt.live_sessions(), 3);
    assert_eq!(rt.evict_idle_sessions(), 1, "only the unused one goes");
    rt.state("ws", &idle).await.unwrap();
    assert_eq!(rt.live_sessions(), 3, "and comes back when used");

    let long_dir = tempfile::tempdir().unwrap();
    let long = runtime(&long_dir, &mock, Duration::from_secs(3600)).await;
    session(&long).await;
    assert_eq!(long.evict_idle_sessions(), 0, "not before the TTL");
}
