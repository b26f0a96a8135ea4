//! R-PF-3: 10,000 active loops (intervals 1–60 s, one per session), each
//! tick a real turn against the mock LLM answering instantly; prints the
//! tick lateness (start − due) p50/p99/max, ticks run and skipped, and
//! duplicates (two ticks for one due time of one loop), on SQLite with one
//! instance and, when `RTC_TEST_POSTGRES_URL` is set, on PostgreSQL with
//! two instances (two runtimes with their own connection pools).
//!
//! `cargo bench -p rtc-runtime --bench loop_ticks` (`LOOPS`, `SECONDS` to
//! change the size and the measured window).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a benchmark binary"
)]

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use rtc_llm::{OpenAiClient, ProviderConfig};
use rtc_protocol::{Assistant, CreateSessionParams, LoopStatus};
use rtc_runtime::{Provider, Runtime, RuntimeConfig};
use rtc_store::{LoopRecord, MasterKey, SecretBox, Store, new_id, now_millis};
use rtc_testkit::{MockLlm, MockReply};
use rtc_tools::net_guard::AddressPolicy;
use serde_json::json;

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn runtime(store: Store, mock: &MockLlm, instance: &str) -> Runtime {
    let mut cfg = ProviderConfig::new(&mock.base_url, None);
    cfg.max_retries = 0;
    let provider = Provider {
        client: Arc::new(OpenAiClient::new(cfg, reqwest::Client::new())),
        default_model: "mock".into(),
        small_model: Some("mock-small".into()),
        max_tools: rtc_runtime::DEFAULT_MAX_TOOLS,
    };
    let mut config = RuntimeConfig::with_defaults(provider, AddressPolicy::AllowPrivate).unwrap();
    config.kernel.max_steps_per_turn = 4;
    config.kernel.idle_session_ttl = Duration::from_secs(3600);
    config.kernel.cluster.instance = instance.to_owned();
    Runtime::new(store, config)
}

async fn store(url: &str) -> Store {
    let store = Store::connect(url, SecretBox::new(&MasterKey::generate()))
        .await
        .unwrap();
    store.migrate().await.unwrap();
    store
}

fn percentile(sorted: &[i64], p: f64) -> i64 {
    if sorted.is_empty() {
        return 0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// Create the sessions and their loops; returns when the measured window starts.
async fn populate(rt: &Runtime, store: &Store, loops: usize) -> i64 {
    let workspace = new_id("ws");
    store
        .create_workspace(&workspace, "bench", &new_id("key"))
        .await
        .unwrap();
    let assistant: Assistant =
        // The LLM built-ins off: ticks measure the schedule, not tool lists.
        serde_json::from_value(json!({"name": "ticker", "systemPrompt": "Tick.", "features": {
            "subAgents": false, "askUser": false, "todo": false, "goals": false,
            "loops": false, "webSearch": false, "webFetch": false, "memory": false}}))
        .unwrap();
    store
        .insert(&workspace, Some("asst_tick".into()), assistant)
        .await
        .unwrap();
    let mut sessions = Vec::with_capacity(loops);
    for _ in 0..loops {
        let params = CreateSessionParams {
            assistant_id: Some("asst_tick".into()),
            ..Default::default()
        };
        sessions.push(rt.create_session(&workspace, params).await.unwrap().id);
    }
    // The window starts once every session exists; first ticks spread over
    // each loop's interval.
    let start = now_millis() + 2_000;
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    for session in sessions {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let interval = 1_000 * (1 + (seed >> 33) % 60) as i64;
        let offset = (seed >> 13) as i64 % interval;
        store
            .insert_loop(&LoopRecord {
                id: new_id("loop"),
                session_id: session,
                prompt: "tick".into(),
                interval_ms: interval,
                max_turns: 1_000_000,
                turns_done: 0,
                skipped_ticks: 0,
                status: LoopStatus::Active,
                reason: None,
                expires_at: start + 86_400_000,
                next_tick_at: start + offset,
                created_at: start,
                updated_at: start,
            })
            .await
            .unwrap();
    }
    start
}

async fn measure(label: &str, store: &Store, start: i64, seconds: usize) {
    let wait = start + (seconds as i64) * 1000 - now_millis();
    tokio::time::sleep(Duration::from_millis(wait.max(0) as u64 + 2_000)).await;
    let ticks = store
        .ticks_started_between(start, start + (seconds as i64) * 1000)
        .await
        .unwrap();
    let mut lateness: Vec<i64> = ticks.iter().map(|t| t.2 - t.1).collect();
    lateness.sort_unstable();
    let mut per_due: HashMap<(&str, i64), usize> = HashMap::new();
    for t in &ticks {
        *per_due.entry((t.0.as_str(), t.1)).or_default() += 1;
    }
    let duplicates: usize = per_due.values().map(|n| n - 1).sum();
    let skipped = ticks
        .iter()
        .filter(|t| t.3.as_deref() == Some("skipped"))
        .count();
    println!(
        "{label:<34} {:>7} ticks ({:>5.0}/s), {skipped} skipped | lateness p50 {} ms, p99 {} ms, max {} ms | duplicates {duplicates}",
        ticks.len(),
        ticks.len() as f64 / seconds as f64,
        percentile(&lateness, 0.5),
        percentile(&lateness, 0.99),
        lateness.last().copied().unwrap_or(0),
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    rtc_testkit::init_tls();
    let loops = env_number("LOOPS", 10_000);
    let seconds = env_number("SECONDS", 60);
    let mock = MockLlm::with_responder(|_| MockReply::text("tick done"))
        .await
        .unwrap();
    println!(
        "{loops} active loops, intervals 1-60 s, one tick = one turn; {seconds} s measured (R-PF-3: p99 <= 250 ms, no duplicates)"
    );

    let dir = tempfile::tempdir().unwrap();
    let sqlite = store(&format!(
        "sqlite://{}",
        dir.path().join("loops.db").display()
    ))
    .await;
    let rt = runtime(sqlite.clone(), &mock, "inst_sqlite");
    let start = populate(&rt, &sqlite, loops).await;
    measure("SQLite, one instance", &sqlite, start, seconds).await;
    rt.shutdown(Duration::from_secs(5)).await;
    drop(rt);

    if std::env::var("RTC_TEST_POSTGRES_URL").is_err() {
        println!("PostgreSQL: set RTC_TEST_POSTGRES_URL to measure two instances");
        return;
    }
    let db = rtc_testkit::TestDatabase::postgres()
        .await
        .unwrap()
        .expect("a PostgreSQL database");
    let db_url = db.url.clone();
    let (a, b) = (store(&db_url).await, store(&db_url).await);
    let rt_a = runtime(a.clone(), &mock, "inst_a");
    let rt_b = runtime(b, &mock, "inst_b");
    let start = populate(&rt_a, &a, loops).await;
    measure("PostgreSQL, two instances", &a, start, seconds).await;
    rt_a.shutdown(Duration::from_secs(5)).await;
    rt_b.shutdown(Duration::from_secs(5)).await;
}
