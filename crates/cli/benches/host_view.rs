//! rtc-agent as a host application sees it (SPEC R-PF-5): the release
//! binary on a throwaway SQLite file, a local scripted model answering at
//! once and a local HTTP tool, driven through the public API. A run
//! creates a session, subscribes to its SSE events, posts one message and
//! reads events until `turn.completed`; the model makes K tool calls, one
//! per answer, then answers (K round trips, K+1 model calls).
//!
//! Two configurations, each on a server of its own and each beside its own
//! floor measured in the same run: the assistant's built-in families off
//! (one function per request: the bound tool) and on (the default). The
//! floor is a bare HTTP client replaying the model requests the mock
//! received from rtc-agent for that configuration (same messages, same
//! function list) and making the same tool calls ([`floor`]). Per
//! configuration it prints:
//!
//! - the floor: one model call + one tool call (µs), and its runs/s at
//!   K = 5 with 100 clients;
//! - the added time per extra tool round trip (slope of the median run
//!   time over K = 1, 5, 20, runs one at a time), rtc-agent's own share
//!   above the floor and the ratio of both to the floor; the server's CPU
//!   per extra round trip (slope of its CPU per run over K);
//! - runs/s, p50/p99 run time and server CPU per run at K = 5 with 100
//!   concurrent clients, beside the floor's runs/s with the same clients;
//! - resident memory per in-flight session: `SESSIONS` sessions waiting on
//!   a 2 s model answer, with an SSE subscriber each and without (each
//!   wave on a server of its own warmed up by as many K = 1 runs, 16 at a
//!   time: a second wave would reuse what the first left to the
//!   allocator), and what stays after they end (no floor: printed beside
//!   the targets);
//!
//! then the built-ins-on/off ratios, and sessions created per second
//! (`CREATE` sessions, 16 clients at once, on the last configuration).
//! The server may take 64 steps per turn (K = 20 needs 21 model calls).
//!
//! `cargo bench -p rtc-cli --bench host_view` (`RUNS` per K, default 60;
//! `SECONDS` of the concurrent phase, default 10; `SESSIONS`, default
//! 1000; `CREATE`, default 10000; `ONLY` = `slope`, `throughput`,
//! `memory` or `create` runs one phase; `SSE` = `1` or `0` runs one wave
//! of the memory phase; `BUILT_INS` = `off` or `on` runs one
//! configuration; `TLS` = `1` serves the model to the server over HTTPS
//! with HTTP/2 offered (ALPN `h2`, a throwaway test CA the server trusts
//! through `SSL_CERT_FILE`; the floor stays on plain HTTP) and prints the
//! HTTP version of the server's model requests per memory wave
//! ([`tls`]); `RTC_BENCH_DATABASE_URL` runs the
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

#[path = "host_view/floor.rs"]
mod floor;
#[path = "host_view/measure.rs"]
mod measure;
#[path = "host_view/tls.rs"]
mod tls;

use measure::{cpu_time, fit, median, ms, percentile, rss_kib};

/// The model: `K=n` asks for n tool calls, `wait` answers after 2 s;
/// `K=n capture` keeps the run's requests for the floor.
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
    let input = input.strip_suffix(floor::CAPTURE).map_or(input, |k| {
        floor::record(req);
        k
    });
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
        self.turn(&format!("K={k}")).await
    }

    /// A run whose message is `text`.
    async fn turn(&self, text: &str) -> anyhow::Result<Duration> {
        let started = Instant::now();
        let (sid, events) = self.open(true).await?;
        self.post(
            &format!("/v1/sessions/{sid}/messages"),
            json!({"text": text}),
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

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// What one configuration measured: the floor and added time per round
/// trip (µs), runs/s and server CPU per run (ms) at K = 5.
#[derive(Default)]
struct Figures {
    round_trip: Option<(f64, f64)>,
    throughput: Option<(f64, f64)>,
}

/// The added time per extra tool round trip: the slope of the median run
/// time over K = 1, 5, 20, runs one at a time, beside the floor; and the
/// server's CPU per extra round trip (the slope of its CPU per run).
async fn slope(
    host: &Host,
    pid: u32,
    floor: &floor::Floor,
    runs: usize,
) -> anyhow::Result<(f64, f64)> {
    for _ in 0..10 {
        host.run(1).await?;
    }
    let (mut medians, mut cpu) = (Vec::new(), Vec::new());
    for k in [1usize, 5, 20] {
        let mut times = Vec::with_capacity(runs);
        let cpu_before = cpu_time(pid);
        for _ in 0..runs {
            times.push(host.run(k).await?);
        }
        let cpu_per_run = cpu_time(pid).saturating_sub(cpu_before) / runs as u32;
        let m = median(&mut times);
        println!(
            "  K = {k:>2}: median run {:>8.2} ms, server CPU {:.2} ms per run",
            ms(m),
            ms(cpu_per_run)
        );
        medians.push((k as f64, m.as_secs_f64()));
        cpu.push((k as f64, cpu_per_run.as_secs_f64()));
    }
    let added = fit(&medians) * 1e6;
    let floor_us = floor.round_trip(host, runs).await?.as_secs_f64() * 1e6;
    println!(
        "  floor (a bare client's model call + tool call): {floor_us:.0} µs\n  added per extra tool round trip: {added:.0} µs = {:.2}× the floor (target ≤ 1.3×); rtc-agent's own share {:.0} µs = {:.2}× the floor (target ≤ 50 µs)\n  server CPU per extra round trip: {:.0} µs",
        added / floor_us,
        added - floor_us,
        (added - floor_us) / floor_us,
        fit(&cpu) * 1e6
    );
    Ok((floor_us, added))
}

/// Runs/s, run time and server CPU per run at K = 5 with 100 concurrent
/// clients for `seconds`, beside the floor's runs/s with the same clients.
async fn throughput(
    host: &Host,
    pid: u32,
    floor: &floor::Floor,
    seconds: usize,
) -> anyhow::Result<(f64, f64)> {
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
    let runs_s = total as f64 / elapsed.as_secs_f64();
    let cpu_per_run = ms(cpu) / total.max(1) as f64;
    let floor_runs_s = floor.runs_per_s(host, seconds).await?;
    println!(
        "  K = 5, 100 clients: {runs_s:.0} runs/s, floor {floor_runs_s:.0} runs/s (same clients, bare model + tool calls): {:.2}× the floor's; run p50 {:.2} ms p99 {:.2} ms\n  server CPU {cpu_per_run:.2} ms per K = 5 run (target ≤ 1 ms), {:.0} µs per round trip",
        runs_s / floor_runs_s,
        ms(percentile(&times, 0.5)),
        ms(percentile(&times, 0.99)),
        cpu_per_run * 1e3 / 5.0
    );
    Ok((runs_s, cpu_per_run))
}

/// 1,000 sessions waiting on the model: the memory they hold each.
async fn in_flight(
    host: &Host,
    pid: u32,
    sessions: usize,
    subscribe: bool,
) -> anyhow::Result<(f64, u64)> {
    tokio::time::sleep(Duration::from_millis(500)).await;
    tls::reset_peak();
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
    let model_connections = tls::open_connections();
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
    if model_connections > 0 {
        println!(
            "  TLS model connections open while the sessions waited: {model_connections} (at most {} at once during the burst; the mock allows {} streams per connection)",
            tls::peak_connections(),
            tls::STREAMS
        );
    }
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

/// What every configuration shares.
struct Bench {
    runs: usize,
    seconds: usize,
    sessions: usize,
    only: String,
    /// The server's model is the TLS mock (`TLS=1`).
    tls: bool,
    model: String,
    tools: String,
    dir: tempfile::TempDir,
    env: HashMap<String, String>,
    binary: std::path::PathBuf,
}

impl Bench {
    fn wanted(&self, phase: &str) -> bool {
        self.only.is_empty() || self.only == phase
    }
}

/// A server of its own for one configuration, its workspace, bound tool
/// and assistant ready.
async fn start(
    b: &Bench,
    built_ins: bool,
    tag: &str,
) -> anyhow::Result<(ServerProcess, Host, u32)> {
    let data = b.dir.path().join(tag);
    std::fs::create_dir_all(&data)?;
    let db = std::env::var("RTC_BENCH_DATABASE_URL")
        .unwrap_or_else(|_| format!("sqlite://{}", data.join("bench.db").display()));
    let server = ServerProcess::start(&b.binary, &db, &data, &b.env).await?;
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
        http,
        model: b.model.clone(),
        tools: b.tools.clone(),
    };
    let ws = admin
        .post("/v1/workspaces", json!({"name": format!("bench-{tag}")}))
        .await?;
    let mut host = Host {
        key: ws["apiKey"].as_str().unwrap_or_default().to_owned(),
        ..admin
    };
    host.post("/v1/tools", json!({"id": "get_order", "name": "get_order", "type": "http",
        "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]},
        "http": {"method": "GET", "url": format!("{}/orders/{{{{order_id}}}}", b.tools)}})).await?;
    // Built-ins on: the default (its sessions have no `userId`, so no
    // memory tools); off: the bound tool alone.
    let features = if built_ins {
        json!({})
    } else {
        json!({"subAgents": false, "askUser": false, "todo": false, "goals": false,
            "loops": false, "webSearch": false, "webFetch": false, "memory": false})
    };
    let assistant = host.post("/v1/assistants", json!({"name": "Bench", "systemPrompt": "Help.",
        "features": features,
        "toolBindings": [{"toolId": "get_order", "argumentBindings": {"order_id": {"source": "model"}}}]})).await?;
    host.assistant = assistant["id"].as_str().unwrap_or_default().to_owned();
    Ok((server, host, pid))
}

/// The server's log on stderr, if `RTC_BENCH_LOG` asks for it.
fn print_log(server: &ServerProcess) {
    if std::env::var_os("RTC_BENCH_LOG").is_some() {
        eprintln!("{}", server.log());
    }
}

/// The timed phases of one configuration on a server of its own: its
/// floor, then the round trips, the concurrent runs and (`create`) the
/// sessions created per second.
async fn timed(b: &Bench, built_ins: bool, create: bool) -> anyhow::Result<Figures> {
    let mut figures = Figures::default();
    let timing = b.wanted("slope") || b.wanted("throughput");
    let create = create && b.wanted("create");
    if !timing && !create {
        return Ok(figures);
    }
    let (server, host, pid) = start(b, built_ins, if built_ins { "on" } else { "off" }).await?;
    if timing {
        let floor = floor::Floor::capture(&host).await?;
        println!(
            "  the floor replays rtc-agent's model requests: {} function(s) each, {:.1} KB after 10 tool results",
            floor.functions,
            floor.request_kb()
        );
        if b.wanted("slope") {
            figures.round_trip = Some(slope(&host, pid, &floor, b.runs).await?);
        }
        if b.wanted("throughput") {
            figures.throughput = Some(throughput(&host, pid, &floor, b.seconds).await?);
        }
    }
    if create {
        creation(&host, env_or("CREATE", 10_000)).await?;
    }
    print_log(&server);
    server.kill().await;
    Ok(figures)
}

/// One wave of the memory phase on a server of its own, warmed up (a
/// second wave would reuse what the first left to the allocator).
async fn wave(b: &Bench, built_ins: bool, subscribe: bool) -> anyhow::Result<()> {
    let tag = format!(
        "{}-sse{}",
        if built_ins { "on" } else { "off" },
        u8::from(subscribe)
    );
    let (server, host, pid) = start(b, built_ins, &tag).await?;
    let versions_before = tls::versions();
    if b.tls {
        tokio::time::timeout(Duration::from_secs(15), host.run(1))
            .await
            .map_err(|_| {
                anyhow::anyhow!(
                    "no answer from the TLS model in 15 s: does the server trust SSL_CERT_FILE?"
                )
            })??;
    }
    // Warm up with as many runs, 16 at a time (caches, pools and threads
    // grown; at most 16 sessions' memory left to reuse).
    let warm = futures::stream::iter((0..b.sessions).map(|_| host.run(1)))
        .buffer_unordered(16)
        .collect::<Vec<_>>()
        .await;
    for w in warm {
        w?;
    }
    let base_rss = rss_kib(pid);
    let (per_session, after) = in_flight(&host, pid, b.sessions, subscribe).await?;
    let (with, target) = if subscribe {
        ("with an SSE subscriber each", 48)
    } else {
        ("without subscribers", 32)
    };
    let over = if b.tls {
        let (h1, h2) = tls::versions();
        let (h1, h2) = (h1 - versions_before.0, h2 - versions_before.1);
        println!(
            "  the server's model requests in this wave (warm-up included): {h2} over HTTP/2, {h1} over HTTP/1.1"
        );
        anyhow::ensure!(
            h1 + h2 >= 2 * b.sessions,
            "the TLS mock answered {} model requests, expected at least {}: does the server trust SSL_CERT_FILE?",
            h1 + h2,
            2 * b.sessions
        );
        if h1 == 0 {
            " over TLS + HTTP/2"
        } else {
            " over TLS"
        }
    } else {
        ""
    };
    println!(
        "  {} sessions waiting on the model{over}, {with}: {per_session:.1} KiB per session (target ≤ {target} KiB); resident memory {base_rss} KiB after the warm-up, {after} KiB after they ended",
        b.sessions
    );
    print_log(&server);
    server.kill().await;
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mock = MockLlm::with_responder(model).await?;
    let dir = tempfile::tempdir()?;
    let mut env = HashMap::from([
        ("RTC_LLM_BASE_URL".to_owned(), mock.base_url.clone()),
        ("RTC_ALLOW_PRIVATE_NETWORK".to_owned(), "1".to_owned()),
        // K = 20 takes 21 model calls (the default stops a turn at 16).
        ("RTC_MAX_STEPS_PER_TURN".to_owned(), "64".to_owned()),
        (
            "RTC_MAX_SESSIONS_PER_WORKSPACE".to_owned(),
            "100000".to_owned(),
        ),
        (
            "RUST_LOG".to_owned(),
            std::env::var("RTC_BENCH_LOG").unwrap_or_else(|_| "warn".to_owned()),
        ),
    ]);
    // `TLS=1`: the server's model over HTTPS (HTTP/2 offered), its test
    // CA trusted through SSL_CERT_FILE.
    let tls = std::env::var("TLS").as_deref() == Ok("1");
    if tls {
        let (url, ca) = tls::serve(MockLlm::responder_app(model), dir.path()).await?;
        println!("the server's model: {url} (a test CA in SSL_CERT_FILE)");
        env.insert("RTC_LLM_BASE_URL".to_owned(), url);
        env.insert("SSL_CERT_FILE".to_owned(), ca.display().to_string());
    }
    let bench = Bench {
        runs: env_or("RUNS", 60),
        seconds: env_or("SECONDS", 10),
        sessions: env_or("SESSIONS", 1000),
        // `ONLY=slope|throughput|memory|create` runs one phase.
        only: std::env::var("ONLY").unwrap_or_default(),
        tls,
        model: mock.base_url.clone(),
        tools: tool_server().await?,
        dir,
        env,
        // A wrapper (a heap profiler, say) may stand in for the binary.
        binary: std::env::var_os("RTC_BENCH_BINARY").map_or_else(
            || std::path::PathBuf::from(env!("CARGO_BIN_EXE_rtc-agent")),
            std::path::PathBuf::from,
        ),
    };
    // `BUILT_INS=off|on` runs one configuration.
    let configurations: &[bool] = match std::env::var("BUILT_INS").as_deref() {
        Ok("off") => &[false],
        Ok("on") => &[true],
        _ => &[false, true],
    };
    // `SSE=1|0` runs one wave of the memory phase.
    let waves: &[bool] = match std::env::var("SSE").as_deref() {
        Ok("1") => &[true],
        Ok("0") => &[false],
        _ => &[true, false],
    };
    let mut figures = Vec::new();
    for (i, &built_ins) in configurations.iter().enumerate() {
        println!("built-ins {}:", if built_ins { "on" } else { "off" });
        let last = i + 1 == configurations.len();
        figures.push(timed(&bench, built_ins, last).await?);
        for &subscribe in waves.iter().filter(|_| bench.wanted("memory")) {
            wave(&bench, built_ins, subscribe).await?;
        }
    }
    if let [off, on] = figures.as_slice() {
        if let (Some((off_floor, off_added)), Some((on_floor, on_added))) =
            (off.round_trip, on.round_trip)
        {
            println!(
                "built-ins on / off: added per round trip {:.2}× (target ≤ 1.10×), rtc-agent's own share {:.2}×, floor {:.2}×",
                on_added / off_added,
                (on_added - on_floor) / (off_added - off_floor),
                on_floor / off_floor
            );
        }
        if let (Some((off_runs, off_cpu)), Some((on_runs, on_cpu))) =
            (off.throughput, on.throughput)
        {
            println!(
                "built-ins on / off at K = 5, 100 clients: runs/s {:.2}×, server CPU per run {:.2}×",
                on_runs / off_runs,
                on_cpu / off_cpu
            );
        }
    }
    Ok(())
}
