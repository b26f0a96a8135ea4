//! R-SEC-7 end to end: the security review's findings, each driven against
//! the binary (the release build under `scripts/campaign-hardening`) while
//! the server runs under a memory limit. Every finding must end in a clear
//! refusal or a bounded result; the process stays up, its resident memory
//! stays within [`RSS_GROWTH`] of its start, its database grows by
//! megabytes. The figures are printed (`--no-capture` shows them).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use rtc_testkit::{
    Engine, Hostile, MockLlm, MockReply, RealtimeFlavor, RealtimeMock, hostile_http,
};
use serde_json::{Value, json};

use crate::conversation::{events_until, open, turn_done};
use crate::harness::{Api, Server, both, start};
use crate::realtime::{interface, seed_key};
use crate::realtime_support::{Host, MOCK_KEY, stage_with, utterance};

/// The server's data-segment limit (`prlimit --data`): the review's
/// variable bomb took 1.16 GB and aborted on an 8 GB allocation.
const MEMORY_LIMIT: u64 = 1 << 30;
/// How much resident memory the whole campaign may add.
const RSS_GROWTH: u64 = 300 << 20;
/// How much the database may grow over the campaign.
const DB_GROWTH: u64 = 64 << 20;

/// The bounds the campaign runs with (small where that makes it quick).
const LIMITS: &[(&str, &str)] = &[
    ("RTC_MAX_SESSIONS_PER_WORKSPACE", "12"),
    ("RTC_MAX_HISTORY_BYTES", "250000"),
    ("RTC_MAX_SUBSCRIBERS_PER_SESSION", "4"),
    ("RTC_PROVIDER_CHECKS_PER_MINUTE", "3"),
    ("RTC_METRICS_TOKEN", "metrics-token-campaign"),
    ("RTC_MAX_TEST_RUNS_PER_WORKSPACE", "10"),
];

/// The model: delegates when asked to, answers a slow assistant's tests
/// after 4 s, else answers "ok" at once.
fn model(request: &Value) -> MockReply {
    if request.to_string().contains("You are slow.") {
        return MockReply::Delayed(Duration::from_secs(4), Box::new(MockReply::text("late")));
    }
    let last = request["messages"]
        .as_array()
        .and_then(|m| m.last())
        .cloned()
        .unwrap_or_default();
    let asked = last["role"] == "user"
        && last["content"]
            .as_str()
            .is_some_and(|c| c.contains("please delegate"));
    if asked {
        MockReply::call(
            "delegate_task",
            json!({"title": "Hostile", "instruction": "Do it."}),
        )
    } else {
        MockReply::text("ok")
    }
}

/// The server process as the campaign measures it.
struct Watch {
    pid: u32,
    rss_start: u64,
    db_start: u64,
}

/// Resident memory of `pid`, in bytes.
fn rss(pid: u32) -> u64 {
    rtc_testkit::rss_kib(pid) * 1024
}

fn alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

impl Watch {
    async fn start(srv: &Server) -> anyhow::Result<Self> {
        let pid = srv.process.pid().expect("the server runs");
        let limit = format!("--data={MEMORY_LIMIT}:{MEMORY_LIMIT}");
        let out = std::process::Command::new("prlimit")
            .args(["--pid", &pid.to_string(), &limit])
            .output()?;
        anyhow::ensure!(out.status.success(), "prlimit: {out:?}");
        Ok(Self {
            pid,
            rss_start: rss(pid),
            db_start: srv.db.size_bytes().await?,
        })
    }

    /// The process is up and within its bounds; prints the figures.
    async fn check(&self, srv: &Server, step: &str, started: Instant) -> anyhow::Result<()> {
        assert!(
            alive(self.pid),
            "{step}: the server died\n{}",
            srv.process.log()
        );
        let health = srv.anonymous().get("/healthz").await?;
        assert_eq!(health.status, 200, "{step}: {}", health.text);
        let rss_now = rss(self.pid);
        let db_now = srv.db.size_bytes().await?;
        eprintln!(
            "campaign {:?} {step}: {:.1} s, RSS {} -> {} MB, database {} -> {} MB",
            srv.db.engine,
            started.elapsed().as_secs_f64(),
            self.rss_start >> 20,
            rss_now >> 20,
            self.db_start >> 20,
            db_now >> 20,
        );
        assert!(
            rss_now.saturating_sub(self.rss_start) < RSS_GROWTH,
            "{step}: RSS grew from {} to {} bytes",
            self.rss_start,
            rss_now
        );
        assert!(
            db_now.saturating_sub(self.db_start) < DB_GROWTH,
            "{step}: the database grew from {} to {} bytes",
            self.db_start,
            db_now
        );
        Ok(())
    }
}

/// Every event of `session` up to the first `done` accepts.
async fn events_to(
    srv: &Server,
    token: &str,
    session: &str,
    done: impl Fn(&Value) -> bool,
) -> anyhow::Result<Vec<Value>> {
    events_until(srv, token, session, 0, done).await
}

fn is_error(code: &'static str) -> impl Fn(&Value) -> bool {
    move |e| e["type"] == "error" && e["code"] == code
}

/// `s = concat(s, s, …)` with `copies` arguments.
fn doubling(copies: usize) -> Value {
    json!({"variable": "s", "expression": {"type": "concat",
        "args": vec![json!({"type": "variable", "name": "s"}); copies]}})
}

/// Finding 1 and 5: the variable bomb runs into the value bound; too many
/// rules or `llm` leaves are refused at save.
async fn variable_bomb(srv: &Server, ws: &Api) -> anyhow::Result<()> {
    let bomb = ws
        .create(
            "/v1/workflows",
            json!({"specVersion": 4, "name": "bomb", "startNodeId": "grow",
                "dynamicVariables": [{"name": "s", "type": "string", "default": "ab"}],
                "nodes": [
                    {"id": "grow", "type": "updateState", "rules": vec![doubling(500); 4]},
                    {"id": "wait", "type": "agent", "prompt": "Talk.", "entryBehavior": "wait"}],
                "edges": [{"id": "on", "from": "grow", "to": "wait", "condition": {"type": "always"}}]}),
        )
        .await?;
    let (sid, token) = open(ws, json!({"workflowId": bomb["id"]})).await?;
    let events = events_to(srv, &token, &sid, is_error("update_state_failed")).await?;
    let failed = events.last().unwrap();
    assert!(
        failed["message"]
            .as_str()
            .unwrap()
            .contains("value_too_large"),
        "{failed}"
    );
    let session = ws.get(&format!("/v1/sessions/{sid}")).await?;
    let value = session.assert_status(200)["variables"]["s"]
        .as_str()
        .unwrap()
        .len();
    assert!(value <= 16 * 1024, "s holds {value} bytes");

    let leaf = json!({"type": "llm", "prompt": "Name?", "outputType": "string"});
    let leafy = json!({"variable": "s", "expression": {"type": "concat", "args": vec![leaf; 9]}});
    for (rules, code) in [
        (vec![doubling(2); 51], "too_many_rules"),
        (vec![leafy], "too_many_llm_leaves"),
    ] {
        ws.post(
            "/v1/workflows",
            json!({"specVersion": 4, "name": "many", "startNodeId": "u",
                "dynamicVariables": [{"name": "s", "type": "string", "default": "a"}],
                "nodes": [{"id": "u", "type": "updateState", "rules": rules},
                    {"id": "done", "type": "end", "reason": "done"}],
                "edges": [{"id": "e", "from": "u", "to": "done", "condition": {"type": "always"}}]}),
        )
        .await?
        .assert_error(400, code, None);
    }
    Ok(())
}

/// Finding 3: an always-true cycle is cut by the walk bound; a failing
/// condition is reported once.
async fn workflow_cycle(srv: &Server, ws: &Api) -> anyhow::Result<()> {
    let always_true =
        json!({"type": "expression", "expression": {"type": "constant", "value": true}});
    let failing = json!({"type": "expression", "expression": {"type": "eq",
        "left": {"type": "div", "left": {"type": "constant", "value": 1}, "right": {"type": "constant", "value": 0}},
        "right": {"type": "constant", "value": 1}}});
    let spin = ws
        .create(
            "/v1/workflows",
            json!({"specVersion": 4, "name": "spin", "startNodeId": "a",
                "limits": {"maxVisitsPerNode": 1000, "maxHopsPerTurn": 1000},
                "nodes": [
                    {"id": "a", "type": "updateState", "rules": []},
                    {"id": "b", "type": "updateState", "rules": []},
                    {"id": "out", "type": "end", "reason": "never"}],
                "edges": [
                    {"id": "bad", "from": "a", "to": "out", "condition": failing},
                    {"id": "ab", "from": "a", "to": "b", "condition": always_true},
                    {"id": "a_out", "from": "a", "to": "out", "condition": {"type": "always"}},
                    {"id": "ba", "from": "b", "to": "a", "condition": always_true},
                    {"id": "b_out", "from": "b", "to": "out", "condition": {"type": "always"}}]}),
        )
        .await?;
    let started = Instant::now();
    let (sid, token) = open(ws, json!({"workflowId": spin["id"]})).await?;
    let events = events_to(srv, &token, &sid, |e| e["type"] == "session.ended").await?;
    let errors: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "error")
        .filter_map(|e| e["code"].as_str())
        .collect();
    assert_eq!(
        errors,
        ["workflow_condition_failed", "workflow_walk_limit"],
        "reported once each"
    );
    assert!(events.len() < 1_000, "{} events", events.len());
    eprintln!(
        "campaign: the always-true cycle wrote {} events in {:.2} s",
        events.len(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Finding 3, the bytes: a cycle flipping a flag beside 45 KB of other
/// variables records the whole snapshot at each change; the walk is cut
/// by the bytes it recorded (`RTC_MAX_WALK_STATE_BYTES`, 2 MiB), after
/// some twenty updates instead of the hundred its hops allow.
async fn workflow_snapshots(srv: &Server, ws: &Api) -> anyhow::Result<()> {
    let always_true =
        json!({"type": "expression", "expression": {"type": "constant", "value": true}});
    let big = "x".repeat(15_000);
    let flag = |v: bool| json!([{"variable": "f", "expression": {"type": "constant", "value": v}}]);
    let flip = ws
        .create(
            "/v1/workflows",
            json!({"specVersion": 4, "name": "flip", "startNodeId": "a",
                "limits": {"maxVisitsPerNode": 1000, "maxHopsPerTurn": 1000},
                "dynamicVariables": [
                    {"name": "b1", "type": "string", "default": big},
                    {"name": "b2", "type": "string", "default": big},
                    {"name": "b3", "type": "string", "default": big},
                    {"name": "f", "type": "boolean", "default": false}],
                "nodes": [
                    {"id": "a", "type": "updateState", "rules": flag(true)},
                    {"id": "b", "type": "updateState", "rules": flag(false)},
                    {"id": "out", "type": "end", "reason": "never"}],
                "edges": [
                    {"id": "ab", "from": "a", "to": "b", "condition": always_true},
                    {"id": "a_out", "from": "a", "to": "out", "condition": {"type": "always"}},
                    {"id": "ba", "from": "b", "to": "a", "condition": always_true},
                    {"id": "b_out", "from": "b", "to": "out", "condition": {"type": "always"}}]}),
        )
        .await?;
    let (sid, token) = open(ws, json!({"workflowId": flip["id"]})).await?;
    let events = events_to(srv, &token, &sid, |e| e["type"] == "session.ended").await?;
    let updates = events
        .iter()
        .filter(|e| e["type"] == "state.updated")
        .count();
    let bytes: usize = events.iter().map(|e| e.to_string().len()).sum();
    assert!(
        events.iter().any(is_error("workflow_walk_limit")),
        "cut by the walk bound"
    );
    assert!(updates < 40, "{updates} snapshots recorded");
    eprintln!("campaign: the snapshot cycle recorded {updates} updates, {bytes} bytes of events");
    Ok(())
}

/// Finding 6: a session's history has a budget.
async fn history_budget(srv: &Server, ws: &Api, assistant: &str) -> anyhow::Result<()> {
    let (sid, token) = open(ws, json!({"assistantId": assistant})).await?;
    let big = "x".repeat(90_000);
    let mut after = 0;
    for _ in 0..2 {
        ws.post(
            &format!("/v1/sessions/{sid}/messages"),
            json!({"text": big}),
        )
        .await?
        .assert_status(202);
        let events = events_until(srv, &token, &sid, after, turn_done).await?;
        after = events.last().unwrap()["seq"].as_i64().unwrap();
    }
    ws.post(
        &format!("/v1/sessions/{sid}/messages"),
        json!({"text": big}),
    )
    .await?
    .assert_error(409, "history_full", None);
    Ok(())
}

/// Finding 7: subscribers per session are bounded.
async fn subscribers(srv: &Server, ws: &Api, assistant: &str) -> anyhow::Result<()> {
    let (sid, token) = open(ws, json!({"assistantId": assistant})).await?;
    let url = format!(
        "{}/v1/sessions/{sid}/events?token={token}",
        srv.process.base_url
    );
    let mut held = Vec::new();
    for _ in 0..4 {
        let stream = srv.client.get(&url).send().await?;
        assert_eq!(stream.status(), 200);
        held.push(stream);
    }
    let refused = srv.client.get(&url).send().await?;
    assert_eq!(refused.status(), 429);
    let body: Value = refused.json().await?;
    assert_eq!(body["error"]["code"], "too_many_subscribers", "{body}");
    held.pop();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let again = srv.client.get(&url).send().await?;
    assert_eq!(again.status(), 200, "a place was freed");
    Ok(())
}

/// Finding 10: parallel creates never pass the session cap.
async fn session_cap(srv: &Server) -> anyhow::Result<()> {
    let (_, ws) = srv.workspace("Cap").await?;
    let assistant = ws
        .create(
            "/v1/assistants",
            json!({"name": "A", "systemPrompt": "Help."}),
        )
        .await?;
    let creates = (0..32).map(|_| {
        let ws = ws.clone();
        let body = json!({"assistantId": assistant["id"]});
        async move { ws.post("/v1/sessions", body).await }
    });
    let mut created = 0;
    for reply in futures::future::join_all(creates).await {
        let reply = reply?;
        match reply.status.as_u16() {
            201 => created += 1,
            _ => reply.assert_error(429, "too_many_sessions", None),
        }
    }
    assert_eq!(created, 12, "32 parallel creates against a cap of 12");
    Ok(())
}

/// Finding 2: a task backend at a hostile server costs a bounded read.
async fn hostile_opencode(srv: &Server, ws: &Api) -> anyhow::Result<()> {
    let base = hostile_http(Hostile::EndlessBody).await?;
    ws.create(
        "/v1/task-backends",
        json!({"id": "tb_hostile", "name": "Hostile", "type": "opencode",
               "opencode": {"baseUrl": base, "model": {"providerID": "p", "modelID": "m"}},
               "timeoutSeconds": 60, "maxConcurrentTasks": 4}),
    )
    .await?;
    let desk = ws
        .create(
            "/v1/assistants",
            json!({"name": "Desk", "systemPrompt": "Front desk.", "taskBackendId": "tb_hostile"}),
        )
        .await?;
    for _ in 0..4 {
        let (sid, token) = open(ws, json!({"assistantId": desk["id"]})).await?;
        ws.post(
            &format!("/v1/sessions/{sid}/messages"),
            json!({"text": "please delegate"}),
        )
        .await?
        .assert_status(202);
        let events = events_until(srv, &token, &sid, 0, turn_done).await?;
        let result = events
            .iter()
            .find(|e| e["type"] == "tool.completed" && e["name"] == "delegate_task")
            .expect("the delegation answered");
        assert!(
            result.to_string().contains("larger than"),
            "refused at the bound: {result}"
        );
    }
    Ok(())
}

/// Finding 8: reopening a realtime socket does not open a provider
/// connection each time.
async fn realtime_churn(srv: &Server, ws: &Api) -> anyhow::Result<()> {
    let mock = RealtimeMock::start(RealtimeFlavor::OpenaiGa, MOCK_KEY, json!({})).await?;
    seed_key(ws).await?;
    ws.create(
        "/v1/realtime-interfaces",
        interface("rt", "openai", &mock.url()),
    )
    .await?;
    let voice = ws
        .create(
            "/v1/assistants",
            json!({"name": "Voice", "runMode": "realtime", "realtimeInterfaceId": "rt",
                "systemPrompt": "You are a voice assistant."}),
        )
        .await?;
    let (sid, token) = open(ws, json!({"assistantId": voice["id"]})).await?;
    let mut last = None;
    for _ in 0..30 {
        last = Some(Host::connect(srv, &sid, &token).await?);
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
    events_to(srv, &token, &sid, is_error("realtime_connect_limited")).await?;
    drop(last);
    let opened = mock.connections().len();
    eprintln!("campaign: 30 socket opens made {opened} provider connections");
    assert!(opened <= 4, "{opened} provider connections");
    Ok(())
}

/// Finding 4: one workspace's abandoned slow test runs neither starve
/// another's nor queue without bound.
async fn test_fairness(srv: &Server) -> anyhow::Result<()> {
    let (_, slow) = srv.workspace("Slow").await?;
    let (_, quick) = srv.workspace("Quick").await?;
    let tests_of = |ws: &Api, prompt: &'static str| {
        let ws = ws.clone();
        async move {
            let a = ws
                .create(
                    "/v1/assistants",
                    json!({"name": "T", "systemPrompt": prompt}),
                )
                .await?;
            let tests = format!("/v1/assistants/{}/tests", a["id"].as_str().unwrap());
            let t = ws
                .create(&tests, json!({"name": "t", "turns": ["hi"]}))
                .await?;
            anyhow::Ok(format!("{tests}/{}/run", t["id"].as_str().unwrap()))
        }
    };
    let slow_run = tests_of(&slow, "You are slow.").await?;
    let quick_run = tests_of(&quick, "You are quick.").await?;
    // Twelve runs started (each answered at once): ten are admitted, two
    // refused.
    let (mut admitted, mut refused) = (0, 0);
    for _ in 0..12 {
        let r = slow.post(&slow_run, json!({})).await?;
        if r.status == 429 {
            r.assert_error(429, "too_many_test_runs", None);
            refused += 1;
        } else {
            assert_eq!(r.assert_status(202)["status"], "running");
            admitted += 1;
        }
    }
    assert_eq!((admitted, refused), (10, 2));
    let started = Instant::now();
    let (quick_tests, _) = quick_run.rsplit_once('/').unwrap();
    let (quick_tests, _) = quick_tests.rsplit_once('/').unwrap();
    let run = quick.post(&quick_run, json!({})).await?;
    let run = crate::test_mode::until_finished(&quick, quick_tests, run.assert_status(202)).await?;
    assert_eq!(run["status"], "finished", "{run:#}");
    let waited = started.elapsed();
    eprintln!(
        "campaign: another workspace's test ran in {:.2} s behind 10 queued slow runs",
        waited.as_secs_f64()
    );
    assert!(waited < Duration::from_secs(3), "waited {waited:?}");
    Ok(())
}

/// Provider checks are rate-limited (3 a minute on this server, 2 of them
/// for one caller, so one workspace cannot spend another's); metrics may
/// need a token.
async fn operator_endpoints(srv: &Server, ws: &Api) -> anyhow::Result<()> {
    let check = "/v1/providers/default/check";
    for _ in 0..2 {
        ws.post(check, json!({})).await?.assert_status(200);
    }
    let own = ws.post(check, json!({})).await?;
    own.assert_error(429, "too_many_provider_checks", None);
    srv.admin().post(check, json!({})).await?.assert_status(200);
    srv.admin()
        .post(check, json!({}))
        .await?
        .assert_error(429, "too_many_provider_checks", None);
    srv.anonymous()
        .get("/metrics")
        .await?
        .assert_error(401, "unauthorized", None);
    let metrics = Api {
        token: Some("metrics-token-campaign".into()),
        ..srv.anonymous()
    };
    assert_eq!(metrics.get("/metrics").await?.status, 200);
    Ok(())
}

async fn campaign(engine: Engine) -> anyhow::Result<()> {
    let mock = MockLlm::with_recorded_responder(model).await?;
    let mut env = HashMap::from([
        ("RTC_LLM_BASE_URL".to_owned(), mock.base_url.clone()),
        ("RTC_LLM_MODEL".to_owned(), "mock-model".to_owned()),
        ("RTC_ALLOW_PRIVATE_NETWORK".to_owned(), "1".to_owned()),
    ]);
    for (k, v) in LIMITS {
        env.insert((*k).to_owned(), (*v).to_owned());
    }
    let Some(srv) = start(engine, env).await? else {
        return Ok(());
    };
    let watch = Watch::start(&srv).await?;
    let started = Instant::now();
    let (_, ws) = srv.workspace("Campaign").await?;
    let assistant = ws
        .create(
            "/v1/assistants",
            json!({"name": "A", "systemPrompt": "Help."}),
        )
        .await?;
    let assistant = assistant["id"].as_str().unwrap();

    variable_bomb(&srv, &ws).await?;
    watch.check(&srv, "variable bomb", started).await?;
    workflow_cycle(&srv, &ws).await?;
    workflow_snapshots(&srv, &ws).await?;
    watch.check(&srv, "workflow cycle", started).await?;
    history_budget(&srv, &ws, assistant).await?;
    watch.check(&srv, "history budget", started).await?;
    subscribers(&srv, &ws, assistant).await?;
    watch.check(&srv, "subscribers", started).await?;
    session_cap(&srv).await?;
    watch.check(&srv, "session cap", started).await?;
    let (_, tasks) = srv.workspace("Tasks").await?;
    hostile_opencode(&srv, &tasks).await?;
    watch.check(&srv, "hostile OpenCode", started).await?;
    let (_, voice) = srv.workspace("Voice").await?;
    realtime_churn(&srv, &voice).await?;
    watch.check(&srv, "realtime churn", started).await?;
    test_fairness(&srv).await?;
    watch.check(&srv, "test fairness", started).await?;
    operator_endpoints(&srv, &ws).await?;
    watch.check(&srv, "operator endpoints", started).await?;
    Ok(())
}

both!(campaign);

/// Finding 6 on a realtime session: speech stops being stored when the
/// history is full; the bridge stops with `history_full`.
async fn realtime_history(engine: Engine) -> anyhow::Result<()> {
    let script = json!({"userTranscripts": ["where is my order", "and the other one"],
        "responses": [{"steps": [{"transcript": {"text": "Let me look."}}, "done"]},
                      {"steps": [{"transcript": {"text": "Never said."}}, "done"]}]});
    let Some(st) = stage_with(
        engine,
        RealtimeFlavor::Qwen,
        script,
        &[("RTC_MAX_HISTORY_BYTES", "300")],
    )
    .await?
    else {
        return Ok(());
    };
    let id = st.assistant(json!({})).await?;
    let (sid, mut host) = st.open(&id, json!({}), json!([])).await?;
    host.until_type("session.realtime_ready").await?;
    host.speak(&utterance(1000)).await?;
    host.until(Duration::from_secs(20), |v| {
        v["type"] == "message.completed" && v["role"] == "assistant"
    })
    .await?;
    host.speak(&utterance(1000)).await?;
    let full = host
        .until(Duration::from_secs(20), |v| {
            v["type"] == "error" && v["code"] == "history_full"
        })
        .await;
    let full = match full {
        Ok(f) => f,
        Err(e) => {
            let seen: Vec<_> = host
                .seen
                .iter()
                .filter(|v| v["type"] != "audio.delta")
                .collect();
            panic!("{e}: {seen:#?}");
        }
    };
    assert!(full["message"].as_str().unwrap().contains("300"), "{full}");
    let contents: Vec<String> = st
        .messages(&sid)
        .await?
        .iter()
        .filter_map(|m| m["content"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(
        contents,
        ["where is my order", "Let me look."],
        "nothing past the bound"
    );
    Ok(())
}

both!(realtime_history);

/// Finding 9: backups are signed with the master key and written 0600;
/// an edited one, another server's, or an unsigned one (without the
/// flag) is refused; the SQLite database file is 0600.
async fn backups(engine: Engine) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let Some(srv) = start(engine, HashMap::new()).await? else {
        return Ok(());
    };
    srv.workspace("Victim").await?;
    let Server {
        process,
        db,
        data_dir,
        ..
    } = srv;
    process.terminate(Duration::from_secs(20)).await?;
    if let Some(path) = db.url.strip_prefix("sqlite://") {
        let mode = std::fs::metadata(path)?.permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "the database file");
    }
    let files = tempfile::tempdir()?;
    let cli = |args: Vec<String>, data: std::path::PathBuf| {
        let url = db.url.clone();
        async move {
            let out = tokio::process::Command::new(crate::harness::binary())
                .args(&args)
                .arg("--database-url")
                .arg(url)
                .arg("--data-dir")
                .arg(data)
                .env("RUST_LOG", "warn")
                .output()
                .await?;
            anyhow::Ok((
                out.status.code().unwrap_or(-1),
                String::from_utf8_lossy(&out.stderr).into_owned(),
            ))
        }
    };
    let data = data_dir.path().to_path_buf();
    let path = files.path().join("all.backup");
    let arg = |p: &std::path::Path| p.to_string_lossy().into_owned();
    let (code, err) = cli(
        vec!["backup".into(), "--out".into(), arg(&path)],
        data.clone(),
    )
    .await?;
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        std::fs::metadata(&path)?.permissions().mode() & 0o777,
        0o600
    );
    let leftovers: Vec<_> = std::fs::read_dir(files.path())?.collect();
    assert_eq!(leftovers.len(), 1, "no temporary file is left");
    let mut backup: Value = serde_json::from_slice(&std::fs::read(&path)?)?;
    assert_eq!(backup["version"], 2);
    assert!(
        backup["manifest"]["signature"]
            .as_str()
            .unwrap()
            .starts_with("hmac-sha256:")
    );

    // The attack of the review: a workspace key hash replaced and the
    // checksum recomputed.
    let table = &mut backup["content"]["tables"]["workspaces"];
    let at = table["columns"]
        .as_array()
        .unwrap()
        .iter()
        .position(|c| c == "api_key_hash")
        .unwrap();
    table["rows"][0][at] = json!(rtc_store::hash_token("attacker-key"));
    let checksum = rtc_store::Backup::new(serde_json::from_value(backup["content"].clone())?)?
        .manifest
        .checksum;
    backup["manifest"]["checksum"] = json!(checksum);
    let edited = files.path().join("edited.backup");
    std::fs::write(&edited, serde_json::to_vec(&backup)?)?;
    for allow in [false, true] {
        let mut args = vec!["restore".to_owned(), arg(&edited)];
        if allow {
            args.push("--allow-unsigned".into());
        }
        let (code, err) = cli(args, data.clone()).await?;
        assert_eq!(code, 2, "an edited backup is refused: {err}");
        assert!(err.contains("signature does not match"), "{err}");
    }

    // Another server's master key cannot restore it.
    let other = tempfile::tempdir()?;
    let (code, err) = cli(
        vec!["restore".into(), arg(&path)],
        other.path().to_path_buf(),
    )
    .await?;
    assert_eq!(code, 2, "{err}");

    // A version 1 file restores only with --allow-unsigned.
    let mut old: Value = serde_json::from_slice(&std::fs::read(&path)?)?;
    old["version"] = json!(1);
    old["manifest"].as_object_mut().unwrap().remove("signature");
    let old_path = files.path().join("v1.backup");
    std::fs::write(&old_path, serde_json::to_vec(&old)?)?;
    let (code, err) = cli(vec!["restore".into(), arg(&old_path)], data.clone()).await?;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--allow-unsigned"), "{err}");
    let (code, err) = cli(
        vec!["restore".into(), arg(&old_path), "--allow-unsigned".into()],
        data.clone(),
    )
    .await?;
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("unsigned"), "it warns: {err}");
    let (code, err) = cli(vec!["restore".into(), arg(&path)], data).await?;
    assert_eq!(code, 0, "the genuine backup restores: {err}");
    Ok(())
}

both!(backups);
