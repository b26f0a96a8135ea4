//! R-PF-1: the runtime's own overhead per tool round trip (model tool call
//! → tool executed → next model request sent), persistence included, on
//! loopback with the scripted mock LLM answering instantly.
//!
//! `cargo bench -p rtc-runtime --bench round_trip` prints, for K = 1, 5, 20
//! tool round trips per turn, streaming and whole answers:
//! - the overhead per round trip, measured where the definition puts it:
//!   the time between two consecutive model requests arriving at the mock
//!   within a turn, minus what a bare HTTP client needs for one model call
//!   and one tool call (p50, p99);
//! - the amortized overhead: turn time (user message committed, turn start
//!   and end included) minus the bare client's time for the same K+1 model
//!   calls and K tool calls, divided by K;
//! - CPU time per round trip;
//!
//! then turns/s with 100 and 1,000 concurrent sessions (R-PF-2), and the resident
//! memory of 10,000 idle sessions with their contexts in memory and after
//! the idle sweep.
//!
//! `BUILT_INS=on` offers every LLM built-in family (22 functions per
//! request instead of the one bound tool); `FLOOR=functions` has the bare
//! client offer the same functions as the session's requests, so that
//! what the in-process mock spends reading them is in the floor too;
//! `ONLY=round_trip|concurrency|memory` runs one phase.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a benchmark binary"
)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use rtc_llm::{OpenAiClient, ProviderConfig};
use rtc_protocol::{Assistant, CreateSessionParams, Tool};
use rtc_runtime::{Provider, Runtime, RuntimeConfig};
use rtc_store::{MasterKey, SecretBox, Store};
use rtc_testkit::{MockLlm, MockReply};
use rtc_tools::net_guard::AddressPolicy;
use serde_json::{Value, json};

const RUNS: usize = 40;

/// CPU time (user + system) of this process so far.
fn cpu_time() -> Duration {
    rtc_testkit::cpu_time(std::process::id())
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// When each model request reached the mock, in order.
static ARRIVALS: std::sync::Mutex<Vec<Instant>> = std::sync::Mutex::new(Vec::new());

/// The functions the session's requests offer, as the mock first read
/// them (for `FLOOR=functions`).
static OFFERED: std::sync::Mutex<Option<Value>> = std::sync::Mutex::new(None);

async fn tool_server() -> String {
    let app = axum::Router::new().route(
        "/tool",
        axum::routing::post(|body: axum::Json<Value>| async move {
            axum::Json(json!({"ok": true, "echo": body.0}))
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}/tool")
}

/// The mock calls `bench_tool` until the request holds `k` tool results
/// (k is read from the user message), then answers with text.
fn responder(req: &Value) -> MockReply {
    ARRIVALS.lock().unwrap().push(Instant::now());
    let mut offered = OFFERED.lock().unwrap();
    if offered.is_none() {
        *offered = req.get("tools").cloned();
    }
    drop(offered);
    let no_messages = Vec::new();
    let messages = req["messages"].as_array().unwrap_or(&no_messages);
    let k: usize = messages
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .and_then(|c| c.parse().ok())
        .unwrap_or(1);
    let done = messages
        .iter()
        .rev()
        .take_while(|m| m["role"] != "user")
        .filter(|m| m["role"] == "tool")
        .count();
    if done < k {
        MockReply::call("bench_tool", json!({"q": format!("step {done}")}))
    } else {
        MockReply::text("All done, here is the answer.")
    }
}

struct Setup {
    runtime: Runtime,
    mock: MockLlm,
    tool_url: String,
    workspace: String,
    assistant: String,
    _dir: tempfile::TempDir,
}

async fn setup() -> Setup {
    rtc_testkit::init_tls();
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("bench.db").display());
    let store = Store::connect(&url, SecretBox::new(&MasterKey::generate()))
        .await
        .unwrap();
    store.migrate().await.unwrap();
    store
        .create_workspace("ws_bench", "bench", "key")
        .await
        .unwrap();
    let tool_url = tool_server().await;
    let tool: Tool = serde_json::from_value(json!({"name": "bench_tool", "type": "http",
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
        "http": {"method": "POST", "url": tool_url, "body": {"q": "{{q}}"}}})).unwrap();
    store
        .insert("ws_bench", Some("bench_tool".into()), tool)
        .await
        .unwrap();
    // One bound tool and nothing else, so every model request carries one
    // function (the LLM built-ins are on by default; switched off here
    // unless `BUILT_INS=on`, which offers every family: 22 functions).
    let off = if std::env::var("BUILT_INS").is_ok_and(|v| v == "on") {
        json!({})
    } else {
        json!({"subAgents": false, "askUser": false, "todo": false, "goals": false,
            "loops": false, "webSearch": false, "webFetch": false, "memory": false})
    };
    let assistant: Assistant = serde_json::from_value(json!({"name": "bench", "systemPrompt": "Benchmark.",
        "features": off,
        "toolBindings": [{"toolId": "bench_tool", "argumentBindings": {"q": {"source": "model"}}}]})).unwrap();
    store
        .insert("ws_bench", Some("asst_bench".into()), assistant)
        .await
        .unwrap();
    let mock = MockLlm::with_responder(responder).await.unwrap();
    let mut cfg = ProviderConfig::new(&mock.base_url, None);
    cfg.max_retries = 0;
    let provider = Provider {
        client: Arc::new(OpenAiClient::new(cfg, reqwest::Client::new())),
        default_model: "mock".into(),
        small_model: Some("mock-small".into()),
        max_tools: rtc_runtime::DEFAULT_MAX_TOOLS,
    };
    let mut config = RuntimeConfig::with_defaults(provider, AddressPolicy::AllowPrivate).unwrap();
    config.kernel.max_steps_per_turn = 64;
    // The idle phase holds 10,000 sessions beside those of the others.
    config.kernel.limits.max_active_sessions = 1_000_000;
    let runtime = Runtime::new(store, config);
    Setup {
        runtime,
        mock,
        tool_url,
        workspace: "ws_bench".into(),
        assistant: "asst_bench".into(),
        _dir: dir,
    }
}

async fn new_session(s: &Setup) -> String {
    let params = CreateSessionParams {
        assistant_id: Some(s.assistant.clone()),
        ..Default::default()
    };
    s.runtime
        .create_session(&s.workspace, params)
        .await
        .unwrap()
        .id
}

async fn one_turn(s: &Setup, session: &str, k: usize) -> Duration {
    let start = Instant::now();
    s.runtime
        .send_user_message(&s.workspace, session, &k.to_string())
        .await
        .unwrap();
    s.runtime.idle(&s.workspace, session).await.unwrap();
    start.elapsed()
}

/// Gaps between consecutive model requests of each turn recorded in
/// `ARRIVALS` since it was cleared (turns of `k + 1` requests).
fn round_trip_gaps(k: usize) -> Vec<f64> {
    let arrivals = std::mem::take(&mut *ARRIVALS.lock().unwrap());
    arrivals
        .chunks(k + 1)
        .flat_map(|turn| turn.windows(2).map(|w| (w[1] - w[0]).as_secs_f64()))
        .collect()
}

/// What the same K+1 model calls and K tool calls cost with a bare client.
async fn baseline(
    s: &Setup,
    client: &reqwest::Client,
    k: usize,
    stream: bool,
) -> (Duration, Duration) {
    let mut body = json!({"model": "mock", "stream": stream, "messages": [{"role": "user", "content": k.to_string()}]});
    if std::env::var("FLOOR").is_ok_and(|f| f == "functions")
        && let Some(tools) = OFFERED.lock().unwrap().clone()
    {
        body["tools"] = tools;
    }
    // Written once, as the runtime writes its functions once.
    let body = serde_json::to_vec(&body).unwrap();
    let cpu = cpu_time();
    let start = Instant::now();
    for i in 0..=k {
        let resp = client
            .post(format!("{}/chat/completions", s.mock.base_url))
            .header("content-type", "application/json")
            .body(body.clone())
            .send()
            .await
            .unwrap();
        let _ = resp.bytes().await.unwrap();
        if i < k {
            let resp = client
                .post(&s.tool_url)
                .json(&json!({"q": "step"}))
                .send()
                .await
                .unwrap();
            let _ = resp.bytes().await.unwrap();
        }
    }
    (start.elapsed(), cpu_time().saturating_sub(cpu))
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let s = setup().await;
    // `ONLY=round_trip|concurrency|memory` runs one phase.
    let only = std::env::var("ONLY").ok();
    let runs = |phase: &str| only.as_deref().is_none_or(|o| o == phase);
    if runs("round_trip") {
        round_trips(&s).await;
    }
    s.mock.set_whole_answers(false);
    if runs("concurrency") {
        for concurrency in [100, 1000] {
            concurrent_turns(&s, concurrency).await;
        }
    }
    if runs("memory") {
        idle_memory(&s).await;
    }
}

/// The per round trip table: K = 1, 5, 20, streaming and whole answers.
async fn round_trips(s: &Setup) {
    let bare = reqwest::Client::new();
    println!(
        "rtc-agent runtime overhead per tool round trip (R-PF-1 target: p50 <= 200 us), {RUNS} turns each"
    );
    println!(
        "{:<10} {:>3} {:>10} {:>10} {:>16} {:>12} {:>14}",
        "mode", "K", "p50 (us)", "p99 (us)", "amortized (us)", "cpu/rt (us)", "turn p50 (ms)"
    );
    for stream in [true, false] {
        s.mock.set_whole_answers(!stream);
        for k in [1usize, 5, 20] {
            let session = new_session(s).await;
            let _ = one_turn(s, &session, k).await; // warm up
            let mut base: Vec<f64> = Vec::new();
            let mut base_cpu = Duration::ZERO;
            for _ in 0..RUNS {
                let (t, c) = baseline(s, &bare, k, stream).await;
                base.push(t.as_secs_f64());
                base_cpu += c;
            }
            base.sort_by(f64::total_cmp);
            let base_p50 = percentile(&base, 0.5);
            let bare_round_trip = base_p50 / (k as f64 + 0.5); // K tool calls, K+1 model calls
            let mut overhead = Vec::new();
            let mut turns = Vec::new();
            let cpu = cpu_time();
            ARRIVALS.lock().unwrap().clear();
            for _ in 0..RUNS {
                let session = new_session(s).await;
                let t = one_turn(s, &session, k).await.as_secs_f64();
                turns.push(t);
                overhead.push(((t - base_p50) / k as f64).max(0.0) * 1e6);
            }
            let cpu_per_rt =
                (cpu_time().saturating_sub(cpu).saturating_sub(base_cpu)).as_secs_f64() * 1e6
                    / (RUNS * k) as f64;
            overhead.sort_by(f64::total_cmp);
            turns.sort_by(f64::total_cmp);
            let mut gaps: Vec<f64> = round_trip_gaps(k)
                .into_iter()
                .map(|g| (g - bare_round_trip).max(0.0) * 1e6)
                .collect();
            gaps.sort_by(f64::total_cmp);
            println!(
                "{:<10} {:>3} {:>10.0} {:>10.0} {:>16.0} {:>12.0} {:>14.2}",
                if stream { "streaming" } else { "whole" },
                k,
                percentile(&gaps, 0.5),
                percentile(&gaps, 0.99),
                percentile(&overhead, 0.5),
                cpu_per_rt.max(0.0),
                percentile(&turns, 0.5) * 1e3
            );
        }
    }
}

/// Three rounds of one turn (one tool round trip) in each of
/// `concurrency` sessions at once; every call must succeed.
async fn concurrent_turns(s: &Setup, concurrency: usize) {
    let sessions: Vec<String> = futures_join(s, concurrency).await;
    let start = Instant::now();
    let rounds = 3;
    for _ in 0..rounds {
        let mut set = tokio::task::JoinSet::new();
        for id in &sessions {
            let rt = s.runtime.clone();
            let (ws, id) = (s.workspace.clone(), id.clone());
            set.spawn(async move {
                rt.send_user_message(&ws, &id, "1").await.unwrap();
                rt.idle(&ws, &id).await.unwrap();
            });
        }
        while let Some(r) = set.join_next().await {
            r.unwrap();
        }
    }
    let elapsed = start.elapsed().as_secs_f64();
    println!(
        "{concurrency} concurrent sessions, 1 tool round trip per turn: {:.0} turns/s ({} turns in {:.2} s, 0 errors)",
        (concurrency * rounds) as f64 / elapsed,
        concurrency * rounds,
        elapsed
    );
}

/// Resident set size of this process, in bytes.
fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

async fn idle_memory(s: &Setup) {
    let n = 10_000;
    s.runtime.evict_idle_sessions();
    let before = rss_bytes();
    let ids = futures_join(s, n).await;
    for id in &ids {
        s.runtime.state(&s.workspace, id).await.unwrap();
    }
    let live = rss_bytes();
    println!(
        "{n} idle sessions with contexts in memory: {:.1} KiB resident each ({} contexts)",
        (live.saturating_sub(before)) as f64 / n as f64 / 1024.0,
        s.runtime.live_sessions()
    );
}

async fn futures_join(s: &Setup, n: usize) -> Vec<String> {
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        out.push(new_session(s).await);
    }
    out
}
