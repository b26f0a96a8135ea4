//! rtc-agent as a host application sees it (SPEC R-PF-5): the release
//! binary on a throwaway SQLite file, a local scripted model answering at
//! once and a local HTTP tool, driven through the public API. A run
//! creates a session, subscribes to its SSE events, posts one message and
//! reads events until `turn.completed`; the model makes K tool calls, one
//! per answer, then answers (K round trips, K+1 model calls). Prints:
//!
//! - the added time per extra tool round trip (slope of the median run
//!   time over K = 1, 5, 20, runs one at a time), beside what a bare
//!   HTTP client needs for one model call and one tool call against the
//!   same servers (the floor under it);
//! - runs/s, p50/p99 run time and server CPU per run at K = 5 with 100
//!   concurrent clients;
//! - resident memory per in-flight session: 1,000 sessions waiting on a
//!   2 s model answer, with an SSE subscriber each and without, and what
//!   stays after they end;
//! - sessions created per second (`CREATE` sessions, 16 clients at once).
//!
//! `cargo bench -p rtc-cli --bench host_view` (`RUNS` per K, default 60;
//! `SECONDS` of the concurrent phase, default 10; `SESSIONS`, default
//! 1000; `CREATE`, default 10000; `ONLY` = `slope`, `throughput`,
//! `memory` or `create` runs one phase; `SSE` = `1` or `0` runs one wave
//! of the memory phase; `RTC_BENCH_DATABASE_URL` runs the
//! server on that database (PostgreSQL, say) instead of a fresh SQLite
//! file; `RTC_BENCH_BINARY` runs a wrapper such as a heap profiler;
//! `RTC_BENCH_LOG` is the server's `RUST_LOG`, its log printed at the end).

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::cast_precision_loss,
    reason = "a benchmark binary"
)]

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use rtc_testkit::{MockLlm, MockReply, ServerProcess, TEST_ADMIN_TOKEN};
use serde_json::{Value, json};

/// The model: `K=n` asks for n tool calls, `wait` answers after 2 s.
fn model(req: &Value) -> MockReply {
    let msgs = req["messages"].as_array().cloned().unwrap_or_default();
    let input = msgs
        .iter()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or("");
    if input == "wait" {
        return MockReply::Delayed(Duration::from_secs(2), Box::new(MockReply::text("waited")));
    }
    let k: usize = input
        .strip_prefix("K=")
        .and_then(|k| k.parse().ok())
        .unwrap_or(0);
    let done = msgs.iter().filter(|m| m["role"] == "tool").count();
    if done < k {
        MockReply::call("get_order", json!({"order_id": format!("o{done}")}))
    } else {
        MockReply::text("done")
    }
}

/// The HTTP tool: answers every order at once.
async fn tool_server() -> anyhow::Result<String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let app = axum::Router::new().route(
        "/orders/{id}",
        axum::routing::get(|| async { axum::Json(json!({"status": "shipped"})) }),
    );
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok(format!("http://{addr}"))
}

#[derive(Clone)]
struct Host {
    base: String,
    key: String,
    assistant: String,
    http: reqwest::Client,
    /// The mock model's and the HTTP tool's base URLs.
    model: String,
    tools: String,
}

impl Host {
    async fn post(&self, path: &str, body: Value) -> anyhow::Result<Value> {
        let resp = self
            .http
            .post(format!("{}{path}", self.base))
            .bearer_auth(&self.key)
            .json(&body)
            .send()
            .await?;
        anyhow::ensure!(resp.status().is_success(), "{path}: {}", resp.text().await?);
        Ok(resp.json().await.unwrap_or(Value::Null))
    }

    /// A session with its SSE subscription open (or none).
    async fn open(&self, subscribe: bool) -> anyhow::Result<(String, Option<reqwest::Response>)> {
        let s = self
            .post("/v1/sessions", json!({"assistantId": self.assistant}))
            .await?;
        let sid = s["id"].as_str().unwrap_or_default().to_owned();
        let token = s["clientToken"].as_str().unwrap_or_default();
        let events = if subscribe {
            let url = format!("{}/v1/sessions/{sid}/events?token={token}", self.base);
            let resp = self.http.get(url).send().await?;
            anyhow::ensure!(resp.status().is_success(), "SSE {}", resp.status());
            Some(resp)
        } else {
            None
        };
        Ok((sid, events))
    }

    /// One run: open, subscribe, message, events until the turn ends.
    async fn run(&self, k: usize) -> anyhow::Result<Duration> {
        let started = Instant::now();
        let (sid, events) = self.open(true).await?;
        self.post(
            &format!("/v1/sessions/{sid}/messages"),
            json!({"text": format!("K={k}")}),
        )
        .await?;
        if let Some(events) = events {
            until_turn_completed(events).await?;
        }
        let took = started.elapsed();
        self.post(&format!("/v1/sessions/{sid}/end"), json!({}))
            .await?;
        Ok(took)
    }
}

async fn until_turn_completed(events: reqwest::Response) -> anyhow::Result<()> {
    let mut body = events.bytes_stream();
    let mut buf = String::new();
    while let Some(chunk) = tokio::time::timeout(Duration::from_secs(30), body.next()).await? {
        buf.push_str(&String::from_utf8_lossy(&chunk?));
        if buf.contains("\"type\":\"turn.completed\"") {
            return Ok(());
        }
        if let Some(end) = buf.rfind("\n\n") {
            buf.drain(..end);
        }
    }
    anyhow::bail!("the event stream ended before the turn did")
}

/// User + system CPU time of a process so far.
fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let ticks: u64 = fields.get(11).and_then(|u| u.parse().ok()).unwrap_or(0)
        + fields.get(12).and_then(|s| s.parse().ok()).unwrap_or(0);
    Duration::from_millis(ticks * 10) // USER_HZ is 100 on Linux
}

/// Resident memory of a process, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn median(times: &mut [Duration]) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[(((sorted.len() - 1) as f64) * p).round() as usize]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The added time per extra tool round trip: the slope of the median run
/// time over K = 1, 5, 20, runs one at a time.
async fn slope(host: &Host, runs: usize) -> anyhow::Result<()> {
    for _ in 0..10 {
        host.run(1).await?;
    }
    let mut medians = Vec::new();
    for k in [1usize, 5, 20] {
        let mut times = Vec::with_capacity(runs);
        for _ in 0..runs {
            times.push(host.run(k).await?);
        }
        let m = median(&mut times);
        println!("K = {k:>2}: median run {:>8.2} ms", ms(m));
        medians.push((k as f64, m.as_secs_f64()));
    }
    let n = medians.len() as f64;
    let (sx, sy) = medians
        .iter()
        .fold((0.0, 0.0), |(a, b), (x, y)| (a + x, b + y));
    let (sxx, sxy) = medians
        .iter()
        .fold((0.0, 0.0), |(a, b), (x, y)| (a + x * x, b + x * y));
    let slope = (n * sxy - sx * sy) / (n * sxx - sx * sx);
    let floor = bare_round_trip(host, runs).await?;
    println!(
        "added time per extra tool round trip: {:.0} µs (a bare client's model call + tool call: {:.0} µs; rtc-agent's own: {:.0} µs)",
        slope * 1e6,
        floor.as_secs_f64() * 1e6,
        (slope - floor.as_secs_f64()) * 1e6
    );
    Ok(())
}

/// The floor under a round trip: the median time a bare HTTP client takes
/// for one streamed model call carrying a K = 20 history and one tool
/// call, against the same mock model and tool servers.
async fn bare_round_trip(host: &Host, runs: usize) -> anyhow::Result<Duration> {
    let mut messages = vec![
        json!({"role": "system", "content": "Help."}),
        json!({"role": "user", "content": "K=20"}),
    ];
    for i in 0..10 {
        messages.push(json!({"role": "assistant", "content": "", "tool_calls": [{"id": format!("c{i}"),
            "type": "function", "function": {"name": "get_order", "arguments": format!("{{\"order_id\":\"o{i}\"}}")}}]}));
        messages.push(json!({"role": "tool", "tool_call_id": format!("c{i}"), "content": "{\"status\":\"shipped\"}"}));
    }
    let body = json!({"model": "bench", "stream": true, "messages": messages, "tools": [{"type": "function",
        "function": {"name": "get_order", "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}}}}]});
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs.max(20) {
        let started = Instant::now();
        let answer = host
            .http
            .post(format!("{}/chat/completions", host.model))
            .json(&body)
            .send()
            .await?
            .bytes()
            .await?;
        anyhow::ensure!(!answer.is_empty(), "the mock model answered nothing");
        let tool = host
            .http
            .get(format!("{}/orders/o1", host.tools))
            .send()
            .await?
            .bytes()
            .await?;
        anyhow::ensure!(!tool.is_empty(), "the tool answered nothing");
        times.push(started.elapsed());
    }
    Ok(median(&mut times))
}

/// Runs/s, run time and server CPU per run at K = 5 with 100 concurrent
/// clients for `seconds`.
async fn throughput(host: &Host, pid: u32, seconds: usize) -> anyhow::Result<()> {
    let done = Arc::new(AtomicUsize::new(0));
    let deadline = Instant::now() + Duration::from_secs(seconds as u64);
    let cpu_before = cpu_time(pid);
    let started = Instant::now();
    let clients: Vec<_> = (0..100)
        .map(|_| {
            let (host, done) = (host.clone(), done.clone());
            tokio::spawn(async move {
                let mut times = Vec::new();
                while Instant::now() < deadline {
                    times.push(host.run(5).await?);
                    done.fetch_add(1, Ordering::Relaxed);
                }
                anyhow::Ok(times)
            })
        })
        .collect();
    let mut times = Vec::new();
    for c in clients {
        times.extend(c.await??);
    }
    let elapsed = started.elapsed();
    let cpu = cpu_time(pid).saturating_sub(cpu_before);
    times.sort();
    let total = done.load(Ordering::Relaxed);
    println!(
        "K = 5, 100 clients: {:.0} runs/s, run p50 {:.2} ms p99 {:.2} ms, server CPU {:.2} ms per run",
        total as f64 / elapsed.as_secs_f64(),
        ms(percentile(&times, 0.5)),
        ms(percentile(&times, 0.99)),
        ms(cpu) / total.max(1) as f64
    );
    Ok(())
}

/// 1,000 sessions waiting on the model: the memory they hold each.
async fn in_flight(
    host: &Host,
    pid: u32,
    sessions: usize,
    subscribe: bool,
) -> anyhow::Result<(f64, u64)> {
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = rss_kib(pid);
    let mut open = Vec::with_capacity(sessions);
    for _ in 0..sessions {
        open.push(host.open(subscribe).await?);
    }
    let started = Instant::now();
    let posts = futures::stream::iter(open.iter().map(|(sid, _)| {
        let host = host.clone();
        let sid = sid.clone();
        async move {
            host.post(
                &format!("/v1/sessions/{sid}/messages"),
                json!({"text": "wait"}),
            )
            .await
        }
    }))
    .buffer_unordered(100)
    .collect::<Vec<_>>()
    .await;
    for p in posts {
        p?;
    }
    // All are waiting on the model (2 s): read the peak meanwhile.
    let mut during = rss_kib(pid);
    while started.elapsed() < Duration::from_millis(1_800) {
        during = during.max(rss_kib(pid));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let waits = futures::stream::iter(open.into_iter().map(|(sid, events)| {
        let host = host.clone();
        async move {
            if let Some(events) = events {
                until_turn_completed(events).await?;
            } else {
                tokio::time::sleep(Duration::from_secs(3)).await;
            }
            host.post(&format!("/v1/sessions/{sid}/end"), json!({}))
                .await
        }
    }))
    .buffer_unordered(200)
    .collect::<Vec<_>>()
    .await;
    for w in waits {
        w?;
    }
    let per_session = (during.saturating_sub(before)) as f64 / sessions as f64;
    tokio::time::sleep(Duration::from_secs(2)).await;
    Ok((per_session, rss_kib(pid)))
}

/// Sessions created per second, 16 clients at once, and the rate of the
/// last tenth (whether creation slows as sessions pile up).
async fn creation(host: &Host, count: usize) -> anyhow::Result<()> {
    let started = Instant::now();
    let done = AtomicUsize::new(0);
    let last_tenth = std::sync::Mutex::new(None::<Instant>);
    let results = futures::stream::iter((0..count).map(|_| async {
        let r = host.open(false).await;
        let n = done.fetch_add(1, Ordering::Relaxed) + 1;
        if n == count - count / 10 {
            *last_tenth
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Instant::now());
        }
        r
    }))
    .buffer_unordered(16)
    .collect::<Vec<_>>()
    .await;
    let total = started.elapsed();
    for r in results {
        r?;
    }
    let tail = last_tenth
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .map_or(Duration::ZERO, |t| t.elapsed());
    println!(
        "{count} sessions created in {:.1} s: {:.0} sessions/s ({:.0}/s over the last tenth)",
        total.as_secs_f64(),
        count as f64 / total.as_secs_f64(),
        (count / 10) as f64 / tail.as_secs_f64().max(1e-9),
    );
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let runs = env_or("RUNS", 60);
    let seconds = env_or("SECONDS", 10);
    let sessions = env_or("SESSIONS", 1000);
    let mock = MockLlm::with_responder(model).await?;
    let tools = tool_server().await?;
    let dir = tempfile::tempdir()?;
    let env = HashMap::from([
        ("RTC_LLM_BASE_URL".to_owned(), mock.base_url.clone()),
        ("RTC_ALLOW_PRIVATE_NETWORK".to_owned(), "1".to_owned()),
        (
            "RTC_MAX_SESSIONS_PER_WORKSPACE".to_owned(),
            "100000".to_owned(),
        ),
        (
            "RUST_LOG".to_owned(),
            std::env::var("RTC_BENCH_LOG").unwrap_or_else(|_| "warn".to_owned()),
        ),
    ]);
    let db = std::env::var("RTC_BENCH_DATABASE_URL")
        .unwrap_or_else(|_| format!("sqlite://{}", dir.path().join("bench.db").display()));
    // A wrapper (a heap profiler, say) may stand in for the binary.
    let binary = std::env::var_os("RTC_BENCH_BINARY").map_or_else(
        || std::path::PathBuf::from(env!("CARGO_BIN_EXE_rtc-agent")),
        std::path::PathBuf::from,
    );
    let server = ServerProcess::start(&binary, &db, dir.path(), &env).await?;
    let pid = server
        .pid()
        .ok_or_else(|| anyhow::anyhow!("no server pid"))?;
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(256)
        .build()?;
    let admin = Host {
        base: server.base_url.clone(),
        key: TEST_ADMIN_TOKEN.to_owned(),
        assistant: String::new(),
        http: http.clone(),
        model: mock.base_url.clone(),
        tools: tools.clone(),
    };
    let ws = admin
        .post("/v1/workspaces", json!({"name": "bench"}))
        .await?;
    let mut host = Host {
        key: ws["apiKey"].as_str().unwrap_or_default().to_owned(),
        ..admin
    };
    host.post("/v1/tools", json!({"id": "get_order", "name": "get_order", "type": "http",
        "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]},
        "http": {"method": "GET", "url": format!("{tools}/orders/{{{{order_id}}}}")}})).await?;
    let assistant = host.post("/v1/assistants", json!({"name": "Bench", "systemPrompt": "Help.",
        "toolBindings": [{"toolId": "get_order", "argumentBindings": {"order_id": {"source": "model"}}}]})).await?;
    host.assistant = assistant["id"].as_str().unwrap_or_default().to_owned();
    let base_rss = rss_kib(pid);

    // `ONLY=slope|throughput|memory|create` runs one phase.
    let only = std::env::var("ONLY").unwrap_or_default();
    let wanted = |phase: &str| only.is_empty() || only == phase;
    if wanted("slope") {
        slope(&host, runs).await?;
    }
    if wanted("throughput") {
        throughput(&host, pid, seconds).await?;
    }
    if wanted("memory") {
        // The second wave reuses what the first left to the allocator:
        // `SSE=0` or `SSE=1` measures one wave on a fresh server.
        let sse = std::env::var("SSE").unwrap_or_default();
        for subscribe in [true, false] {
            if !sse.is_empty() && (sse == "1") != subscribe {
                continue;
            }
            let (per_session, after) = in_flight(&host, pid, sessions, subscribe).await?;
            let with = if subscribe {
                "with an SSE subscriber each"
            } else {
                "without subscribers"
            };
            println!(
                "{sessions} sessions waiting on the model, {with}: {per_session:.1} KiB per session; resident memory {base_rss} KiB at start, {after} KiB after they ended"
            );
        }
    }
    if wanted("create") {
        creation(&host, env_or("CREATE", 10_000)).await?;
    }
    if std::env::var_os("RTC_BENCH_LOG").is_some() {
        eprintln!("{}", server.log());
    }
    server.kill().await;
    Ok(())
}
