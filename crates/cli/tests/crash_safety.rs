//! Crash safety (issue 12): `kill -9` at random moments while turns call
//! an HTTP tool and a loop ticks, then a restart on the same database, on
//! SQLite and on PostgreSQL.
//!
//! One database and two loop sessions (a loop ticking every second each)
//! serve the whole run; each trial opens two chat sessions, posts user
//! messages to them and to the loop sessions at random intervals, kills the server at a random moment,
//! notes what the kill cut short (a turn, a tool call, a loop tick), and
//! restarts the binary. Then, for every session the trial touched:
//! (a) every acknowledged user message is in the history exactly once
//! (one in flight at the kill at most once); (b) the session answers a
//! new message, through a tool call, and the model never got a history it
//! would refuse (a call without its result); (c) its events, replayed
//! over SSE, are numbered 1..n, and turns never overlap; (d) no loop tick
//! ran twice (`checks::ticks`); (e) nothing is stuck: no turn stays
//! running and the loop ticks again after the restart. At the end every
//! session of the run is checked once more.
//!
//! `RTC_CRASH_TRIALS` sets the trials per engine (default
//! [`DEFAULT_TRIALS`]), `RTC_CRASH_SEED` replays a run (the seed places the
//! kills and the traffic; timing still varies). The last line is a
//! `crash-campaign …` summary that `scripts/campaign-crash` adds up.

mod checks;
mod traffic;
mod world;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rtc_core::time::rfc3339_from_millis;
use rtc_store::{MasterKey, SecretBox, Store, now_millis};
use rtc_testkit::{Engine, MockLlm, ServerProcess, TestDatabase};
use serde_json::json;

use crate::harness::{Api, binary};
use checks::Tracked;
use traffic::{poll, post_messages, replay};
use world::{Rng, ToolService};

/// Trials per engine when `RTC_CRASH_TRIALS` is not set.
const DEFAULT_TRIALS: usize = 8;
/// A kill comes this many milliseconds after a trial's traffic begins.
const KILL_AFTER_MS: (u64, u64) = (30, 1500);
/// Pause between two user messages of a trial, in milliseconds.
const PAUSE_MS: (u64, u64) = (20, 300);
/// Sessions with a loop ticking every second, and chat sessions per trial.
const LOOP_SESSIONS: usize = 2;
const CHAT_SESSIONS: usize = 2;
/// How long anything that should happen may take.
const PATIENCE: Duration = Duration::from_secs(30);

#[tokio::test]
async fn sqlite() -> anyhow::Result<()> {
    campaign(Engine::Sqlite).await
}

#[tokio::test]
async fn postgres() -> anyhow::Result<()> {
    campaign(Engine::Postgres).await
}

/// What the kills landed in, and what was checked.
#[derive(Debug, Default)]
struct Tally {
    trials: usize,
    /// Kills while a turn of a trial's session was running (recovery
    /// marks it interrupted).
    in_turn: usize,
    /// Kills while the HTTP tool was answering a call.
    in_tool_call: usize,
    /// Kills while a loop tick was claimed and not yet recorded.
    in_tick: usize,
    /// Ticks cut short (of either loop) whose input was already in the
    /// history.
    in_tick_after_input: usize,
    /// Kills that found none of the above running.
    idle: usize,
    interrupted_turns: usize,
    acked: usize,
    unacked: usize,
    tool_calls: u64,
}

enum Posted {
    Acked,
    /// No answer: the server died with the request in flight.
    Unacked,
    /// An answer that is not 2xx.
    Refused(String),
}

struct Campaign {
    engine: Engine,
    seed: u64,
    rng: Rng,
    db: TestDatabase,
    data: tempfile::TempDir,
    env: HashMap<String, String>,
    process: Option<ServerProcess>,
    client: reqwest::Client,
    key: String,
    assistant: String,
    store: Store,
    tools: ToolService,
    violations: Arc<Mutex<Vec<String>>>,
    _model: MockLlm,
    sessions: Vec<Tracked>,
    /// The sessions whose loops tick now.
    loop_sessions: Vec<usize>,
    /// Ticks cut short by earlier kills (`(loop, seq)`); they stay unfinished.
    orphaned: HashSet<(String, i64)>,
    tally: Tally,
    failures: Vec<String>,
    seen: HashSet<String>,
    trial: usize,
}

async fn campaign(engine: Engine) -> anyhow::Result<()> {
    let trials = std::env::var("RTC_CRASH_TRIALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_TRIALS);
    let seed = std::env::var("RTC_CRASH_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        });
    let started = Instant::now();
    let Some(mut c) = Campaign::setup(engine, seed).await? else {
        return Ok(());
    };
    eprintln!(
        "crash campaign on {engine:?}: {trials} trials, seed {seed} (replay with RTC_CRASH_SEED={seed})"
    );
    let mut errors = 0;
    for t in 1..=trials {
        c.trial = t;
        if let Err(e) = c.run_trial().await {
            c.fail(format!("the trial stopped: {e:#}"));
            errors += 1;
            anyhow::ensure!(
                errors < 3,
                "giving up after 3 broken trials: {:#?}",
                c.failures
            );
        }
        c.tally.trials += 1;
    }
    c.trial = 0;
    if let Err(e) = c.final_check().await {
        c.fail(format!("the final check stopped: {e:#}"));
    }
    c.tally.tool_calls = c.tools.calls();
    let t = &c.tally;
    eprintln!(
        "crash-campaign engine={} trials={} kills_in_turn={} kills_in_tool_call={} kills_in_tick={} ticks_cut_after_input={} kills_idle={} interrupted_turns={} acked_messages={} unacked_messages={} tool_calls={} failures={} secs={:.1} seed={seed}",
        match engine {
            Engine::Sqlite => "sqlite",
            Engine::Postgres => "postgres",
        },
        t.trials,
        t.in_turn,
        t.in_tool_call,
        t.in_tick,
        t.in_tick_after_input,
        t.idle,
        t.interrupted_turns,
        t.acked,
        t.unacked,
        t.tool_calls,
        c.failures.len(),
        started.elapsed().as_secs_f64(),
    );
    if let Some(p) = c.process.take() {
        p.kill().await;
    }
    anyhow::ensure!(
        c.failures.is_empty(),
        "{} failures (replay with RTC_CRASH_SEED={seed}):\n{}",
        c.failures.len(),
        c.failures.join("\n")
    );
    Ok(())
}

impl Campaign {
    async fn setup(engine: Engine, seed: u64) -> anyhow::Result<Option<Self>> {
        let Some(db) = TestDatabase::new(engine).await? else {
            return Ok(None);
        };
        let violations = Arc::new(Mutex::new(Vec::new()));
        let model = MockLlm::with_responder(world::model(violations.clone())).await?;
        let tools = ToolService::start().await?;
        let data = tempfile::tempdir()?;
        let env = HashMap::from(
            [
                ("RTC_LLM_BASE_URL", model.base_url.as_str()),
                ("RTC_LLM_MODEL", "mock-model"),
                ("RTC_ALLOW_PRIVATE_NETWORK", "1"),
                ("RTC_LOOP_LEASE_SECS", "1"),
                ("RTC_LOOP_POLL_MS", "50"),
            ]
            .map(|(k, v)| (k.to_owned(), v.to_owned())),
        );
        let process = ServerProcess::start(&binary(), &db.url, data.path(), &env).await?;
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(20))
            .build()?;
        let admin = Api {
            base: process.base_url.clone(),
            token: Some(process.admin_token.clone()),
            workspace_header: None,
            client: client.clone(),
        };
        let ws = admin
            .create("/v1/workspaces", json!({"name": "Crash"}))
            .await?;
        let key = ws["apiKey"].as_str().unwrap_or_default().to_owned();
        let store = Store::connect(&db.url, SecretBox::new(&MasterKey::generate())).await?;
        let mut c = Self {
            engine,
            seed,
            rng: Rng::new(seed),
            db,
            data,
            env,
            process: Some(process),
            client,
            key,
            assistant: String::new(),
            store,
            tools,
            violations,
            _model: model,
            sessions: Vec::new(),
            loop_sessions: Vec::new(),
            orphaned: HashSet::new(),
            tally: Tally::default(),
            failures: Vec::new(),
            seen: HashSet::new(),
            trial: 0,
        };
        let api = c.api()?;
        api.create("/v1/tools", json!({"id": world::TOOL, "name": world::TOOL, "type": "http",
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
            "http": {"method": "GET", "url": format!("{}/lookup/{{{{q}}}}", c.tools.base)}}))
            .await?;
        let assistant = api
            .create(
                "/v1/assistants",
                json!({"name": "Crash", "systemPrompt": "Look things up.", "features": {"loops": true},
                    "toolBindings": [{"toolId": world::TOOL, "argumentBindings": {"q": {"source": "model"}}}]}),
            )
            .await?;
        c.assistant = assistant["id"].as_str().unwrap_or_default().to_owned();
        for _ in 0..LOOP_SESSIONS {
            let idx = c.open_loop_session().await?;
            c.loop_sessions.push(idx);
        }
        Ok(Some(c))
    }

    fn api(&self) -> anyhow::Result<Api> {
        let process = self
            .process
            .as_ref()
            .ok_or_else(|| anyhow::anyhow!("the server is not running"))?;
        Ok(Api {
            base: process.base_url.clone(),
            token: Some(self.key.clone()),
            workspace_header: None,
            client: self.client.clone(),
        })
    }

    /// Record a problem once (later trials see the same history again).
    fn fail(&mut self, problem: String) {
        if !self.seen.insert(problem.clone()) {
            return;
        }
        let line = format!(
            "[{:?} seed={} trial={}] {problem}",
            self.engine, self.seed, self.trial
        );
        eprintln!("crash campaign FAILURE {line}");
        self.failures.push(line);
    }

    async fn open_session(&mut self) -> anyhow::Result<usize> {
        let s = self
            .api()?
            .create("/v1/sessions", json!({"assistantId": self.assistant}))
            .await?;
        self.sessions.push(Tracked {
            id: s["id"].as_str().unwrap_or_default().to_owned(),
            ..Tracked::default()
        });
        Ok(self.sessions.len() - 1)
    }

    /// A session whose first message creates a loop ticking every second.
    async fn open_loop_session(&mut self) -> anyhow::Result<usize> {
        let idx = self.open_session().await?;
        let api = self.api()?;
        let sid = self.sessions[idx].id.clone();
        api.post(
            &format!("/v1/sessions/{sid}/messages"),
            json!({"text": world::START_LOOP}),
        )
        .await?
        .assert_status(202);
        self.sessions[idx].acked.push(world::START_LOOP.to_owned());
        let (api, sid) = (&api, &sid);
        let listed = poll("the loop to be created", || async move {
            let l = api.get(&format!("/v1/sessions/{sid}/loops")).await?;
            Ok(l.body["data"][0]["id"].as_str().map(str::to_owned))
        })
        .await?;
        self.sessions[idx].loop_id = Some(listed);
        Ok(idx)
    }

    async fn restart(&mut self) -> anyhow::Result<()> {
        let p = ServerProcess::start(&binary(), &self.db.url, self.data.path(), &self.env).await?;
        self.process = Some(p);
        Ok(())
    }

    async fn run_trial(&mut self) -> anyhow::Result<()> {
        let t = self.trial;
        if self.process.is_none() {
            self.restart().await?;
        }
        for k in 0..self.loop_sessions.len() {
            let sid = self.sessions[self.loop_sessions[k]].id.clone();
            let listed = self
                .api()?
                .get(&format!("/v1/sessions/{sid}/loops"))
                .await?;
            if listed.body["data"][0]["status"] != "active" {
                self.loop_sessions[k] = self.open_loop_session().await?;
            }
        }
        let mut chats = Vec::new();
        for _ in 0..CHAT_SESSIONS {
            chats.push(self.open_session().await?);
        }
        // Most messages go to the chat sessions, so the loops mostly tick.
        let plan: Vec<(u64, usize, String)> = (0..60)
            .map(|_| {
                let pool = if self.rng.range(0, 10) < 7 {
                    &chats
                } else {
                    &self.loop_sessions
                };
                let idx = pool[self.rng.range(0, pool.len() as u64) as usize];
                (
                    self.rng.range(PAUSE_MS.0, PAUSE_MS.1),
                    idx,
                    self.sessions[idx].id.clone(),
                )
            })
            .collect();
        let kill_after = self.rng.range(KILL_AFTER_MS.0, KILL_AFTER_MS.1);
        let targets: Vec<usize> = self.loop_sessions.iter().chain(&chats).copied().collect();
        let stop = Arc::new(AtomicBool::new(false));
        let poster = tokio::spawn(post_messages(
            self.api()?,
            self.key.clone(),
            plan,
            t,
            stop.clone(),
        ));
        tokio::time::sleep(Duration::from_millis(kill_after)).await;

        stop.store(true, Ordering::SeqCst);
        let tool_calls_flying = self.tools.in_flight();
        if let Some(p) = self.process.take() {
            p.kill().await;
        }
        for (idx, text, outcome) in poster.await? {
            match outcome {
                Posted::Acked => {
                    self.tally.acked += 1;
                    self.sessions[idx].acked.push(text);
                }
                Posted::Unacked => {
                    self.tally.unacked += 1;
                    self.sessions[idx].unacked.push(text);
                }
                Posted::Refused(why) => self.fail(format!("`{text}` was refused: {why}")),
            }
        }
        self.note_what_the_kill_cut_short(&targets, tool_calls_flying)
            .await?;

        self.restart().await?;
        let restarted_at = now_millis();
        self.probe(&targets).await?;
        self.loops_tick_after(restarted_at).await?;
        for idx in targets {
            let problems = self.verify(idx).await?;
            for p in problems {
                self.fail(p);
            }
        }
        let violations: Vec<String> = self
            .violations
            .lock()
            .map(|mut v| v.drain(..).collect())
            .unwrap_or_default();
        for v in violations {
            self.fail(format!("the model got a history it would refuse: {v}"));
        }
        Ok(())
    }

    /// Read the store of the dead server: which turns were running (the
    /// ones recovery will mark interrupted) and which tick was claimed.
    async fn note_what_the_kill_cut_short(
        &mut self,
        targets: &[usize],
        tool_calls_flying: usize,
    ) -> anyhow::Result<()> {
        let running: HashSet<String> = self
            .store
            .sessions_with_running_turn()
            .await?
            .into_iter()
            .collect();
        let in_turn = targets
            .iter()
            .filter(|i| running.contains(&self.sessions[**i].id))
            .count();
        let mut cut = 0;
        for idx in self.loop_sessions.clone() {
            let session = &self.sessions[idx];
            let loop_id = session.loop_id.clone().unwrap_or_default();
            let ticks = self.store.loop_ticks(&loop_id).await?;
            let history = self.store.messages(&session.id).await?;
            for tick in ticks {
                if tick.finished_at.is_some() || !self.orphaned.insert((loop_id.clone(), tick.seq))
                {
                    continue;
                }
                cut += 1;
                let since = rfc3339_from_millis(tick.started_at);
                if history
                    .iter()
                    .any(|m| m.name.as_deref() == Some("loop") && m.created_at >= since)
                {
                    self.tally.in_tick_after_input += 1;
                }
            }
        }
        let t = &mut self.tally;
        t.interrupted_turns += in_turn;
        t.in_turn += usize::from(in_turn > 0);
        t.in_tool_call += usize::from(tool_calls_flying > 0);
        t.in_tick += usize::from(cut > 0);
        t.idle += usize::from(in_turn == 0 && tool_calls_flying == 0 && cut == 0);
        eprintln!(
            "crash campaign trial {}: killed with {in_turn} turns, {tool_calls_flying} tool calls, {cut} ticks running",
            self.trial,
        );
        Ok(())
    }

    /// (b) A new message to each session is answered, through the tool;
    /// then no turn of a chat session is left running.
    async fn probe(&mut self, targets: &[usize]) -> anyhow::Result<()> {
        let api = self.api()?;
        let mut waiting = Vec::new();
        for (k, idx) in targets.iter().enumerate() {
            let text = format!("probe-t{}-{k}", self.trial);
            let sid = self.sessions[*idx].id.clone();
            let r = api
                .post(
                    &format!("/v1/sessions/{sid}/messages"),
                    json!({"text": text}),
                )
                .await?;
            anyhow::ensure!(
                r.status.as_u16() == 202,
                "probe of {sid} answered {}",
                r.text
            );
            self.sessions[*idx].acked.push(text.clone());
            waiting.push((sid, world::answer_to(&text)));
        }
        let api = &api;
        for (sid, answer) in &waiting {
            poll(&format!("{sid} to answer `{answer}`"), || async move {
                let h = api.get(&format!("/v1/sessions/{sid}/messages")).await?;
                let answered = h.body["data"].as_array().is_some_and(|m| {
                    m.iter()
                        .any(|m| m["role"] == "assistant" && m["content"] == answer.as_str())
                });
                Ok(answered.then_some(()))
            })
            .await?;
        }
        // (e) The sessions come to rest; loop sessions between ticks.
        for (sid, _) in &waiting {
            let store = &self.store;
            poll(&format!("{sid} to have no turn running"), || async move {
                let s = store.session_by_id(sid).await?;
                Ok(s.filter(|s| !s.turn_running).map(|_| ()))
            })
            .await?;
        }
        Ok(())
    }

    /// (e) The loops tick again after the restart (once a lease the dead
    /// server held has run out).
    async fn loops_tick_after(&self, restarted_at: i64) -> anyhow::Result<()> {
        for idx in &self.loop_sessions {
            let loop_id = self.sessions[*idx].loop_id.clone().unwrap_or_default();
            let (store, loop_id) = (&self.store, &loop_id);
            poll(
                &format!("{loop_id} to tick after the restart"),
                || async move {
                    let ticks = store.loop_ticks(loop_id).await?;
                    Ok(ticks
                        .iter()
                        .any(|t| t.started_at >= restarted_at && t.outcome.is_some())
                        .then_some(()))
                },
            )
            .await?;
        }
        Ok(())
    }

    /// (a), (c), (d) for one session.
    async fn verify(&self, idx: usize) -> anyhow::Result<Vec<String>> {
        let s = &self.sessions[idx];
        let api = self.api()?;
        // A consistent snapshot of the loop's ticks and its listing; loop
        // inputs recorded after `snapshot_at` may belong to ticks it misses.
        let snapshot = match &s.loop_id {
            Some(loop_id) => {
                let snapshot_at = rfc3339_from_millis(now_millis());
                let mut tries = 0;
                loop {
                    let before = self.store.loop_ticks(loop_id).await?;
                    let listed = api.get(&format!("/v1/sessions/{}/loops", s.id)).await?;
                    let listed = listed.body["data"]
                        .as_array()
                        .and_then(|l| l.iter().find(|l| l["id"] == loop_id.as_str()))
                        .cloned()
                        .unwrap_or_default();
                    if before == self.store.loop_ticks(loop_id).await? || tries > 20 {
                        break Some((loop_id, snapshot_at, before, listed));
                    }
                    tries += 1;
                }
            }
            None => None,
        };
        // Reading the history flushes what the server has queued.
        let history = api.get(&format!("/v1/sessions/{}/messages", s.id)).await?;
        let messages = history.body["data"].as_array().cloned().unwrap_or_default();
        let mut problems = checks::history(s, &messages);
        let upto = self.store.last_event_seq(&s.id).await?;
        let events = replay(&api, &s.id, upto).await?;
        problems.extend(checks::events(&s.id, &events, s.loop_id.is_some()));
        if let Some((loop_id, snapshot_at, ticks, listed)) = snapshot {
            let inputs: Vec<(&str, &str)> = checks::loop_inputs(&events, loop_id)
                .into_iter()
                .filter(|(at, _)| *at < snapshot_at.as_str())
                .collect();
            problems.extend(checks::ticks(loop_id, &ticks, &inputs, &listed));
        }
        Ok(problems)
    }

    /// Every session of the run, once more, on the last server.
    async fn final_check(&mut self) -> anyhow::Result<()> {
        if self.process.is_none() {
            self.restart().await?;
        }
        for idx in 0..self.sessions.len() {
            for p in self.verify(idx).await? {
                self.fail(p);
            }
        }
        Ok(())
    }
}
