//! Two `rtc-agent serve` processes on one PostgreSQL (R-ST-2, R-LP-3,
//! R-BX-1): a loop's ticks are claimed once across instances, and when the
//! instance running a tick is killed, the other takes the loop over once
//! the lease has expired.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use rtc_store::{MasterKey, SecretBox, Store};
use rtc_testkit::{Engine, MockLlm, MockReply, ServerProcess};
use serde_json::{Value, json};

use crate::conversation::{assistant, open};
use crate::harness::{Api, Server, binary, start};

const LEASE_SECS: u64 = 2;

/// Ticks take a while (so one is running when the instance dies); the
/// first message creates the loop.
fn model(req: &Value) -> MockReply {
    let messages = req["messages"].as_array().cloned().unwrap_or_default();
    let last_user = messages.iter().rev().find(|m| m["role"] == "user");
    let text = last_user.and_then(|m| m["content"].as_str()).unwrap_or("");
    let answered = messages
        .iter()
        .rev()
        .take_while(|m| m["role"] != "user")
        .any(|m| m["role"] == "tool");
    if text.starts_with("[Loop") {
        MockReply::Delayed(
            Duration::from_millis(700),
            Box::new(MockReply::text("tick done")),
        )
    } else if answered {
        MockReply::text("Loop started.")
    } else {
        MockReply::call(
            "createLoop",
            json!({"prompt": "tick", "interval_seconds": 1, "max_turns": 8}),
        )
    }
}

/// Instance A (holding the throwaway PostgreSQL) and instance B on the
/// same database, each with `env` plus its own settings, and workspace "A"
/// as each one serves it.
pub(crate) struct Pair {
    pub a: Server,
    pub b: ServerProcess,
    pub ws_a: Api,
    pub ws_b: Api,
}

pub(crate) async fn two_instances(
    env: HashMap<String, String>,
    only_a: &[(&str, &str)],
    only_b: &[(&str, &str)],
) -> anyhow::Result<Option<Pair>> {
    let with = |extra: &[(&str, &str)]| {
        let mut e = env.clone();
        e.extend(
            extra
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
        );
        e
    };
    let Some(a) = start(Engine::Postgres, with(only_a)).await? else {
        return Ok(None);
    };
    let b = ServerProcess::start(&binary(), &a.db.url, a.data_dir.path(), &with(only_b)).await?;
    let (_, ws_a) = a.workspace("A").await?;
    let ws_b = Api {
        base: b.base_url.clone(),
        ..ws_a.clone()
    };
    Ok(Some(Pair { a, b, ws_a, ws_b }))
}

async fn loop_state(api: &Api, sid: &str) -> anyhow::Result<Value> {
    let listed = api.get(&format!("/v1/sessions/{sid}/loops")).await?;
    Ok(listed.assert_status(200)["data"][0].clone())
}

/// Poll until `done` holds for the session's loop.
async fn wait_for(
    api: &Api,
    sid: &str,
    what: &str,
    done: impl Fn(&Value) -> bool,
) -> anyhow::Result<Value> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let l = loop_state(api, sid).await?;
        if done(&l) {
            return Ok(l);
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "timed out waiting for {what}: {l}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// How many loop inputs the session's history holds.
async fn loop_inputs(api: &Api, sid: &str) -> anyhow::Result<usize> {
    let history = api.get(&format!("/v1/sessions/{sid}/messages")).await?;
    Ok(history.assert_status(200)["data"]
        .as_array()
        .map_or(0, |messages| {
            messages
                .iter()
                .filter(|m| {
                    m["content"]
                        .as_str()
                        .is_some_and(|c| c.starts_with("[Loop"))
                })
                .count()
        }))
}

#[tokio::test]
async fn loop_ticks_run_once_across_instances_and_survive_one_dying() -> anyhow::Result<()> {
    let mock = MockLlm::with_responder(model).await?;
    let env = HashMap::from([
        ("RTC_LLM_BASE_URL".to_owned(), mock.base_url.clone()),
        ("RTC_ALLOW_PRIVATE_NETWORK".to_owned(), "1".to_owned()),
        ("RTC_LOOP_LEASE_SECS".to_owned(), LEASE_SECS.to_string()),
    ]);
    // A polls faster, so it usually wins the claims until it dies.
    let Some(Pair { a, b, ws_a, ws_b }) = two_instances(
        env,
        &[("RTC_INSTANCE_ID", "inst_a"), ("RTC_LOOP_POLL_MS", "20")],
        &[("RTC_INSTANCE_ID", "inst_b"), ("RTC_LOOP_POLL_MS", "100")],
    )
    .await?
    else {
        return Ok(());
    };
    let id = assistant(
        &ws_a,
        json!({"name": "Ticker", "systemPrompt": "Tick.", "features": {"loops": true}}),
    )
    .await?;
    let (sid, _) = open(&ws_a, json!({"assistantId": id})).await?;
    ws_a.post(
        &format!("/v1/sessions/{sid}/messages"),
        json!({"text": "start ticking"}),
    )
    .await?
    .assert_status(202);
    let l = wait_for(&ws_b, &sid, "the loop", |l| l["id"].is_string()).await?;
    let loop_id = l["id"].as_str().unwrap().to_owned();

    // Kill the instance that holds a running tick: usually A (it polls
    // faster), but on a loaded machine B may win every claim.
    let store = Store::connect(&a.db.url, SecretBox::new(&MasterKey::generate())).await?;
    let deadline = Instant::now() + Duration::from_secs(60);
    let orphan = loop {
        let ticks = store.loop_ticks(&loop_id).await?;
        if let Some(t) = ticks.iter().find(|t| t.finished_at.is_none()) {
            break t.clone();
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "no instance ever held a running tick: {ticks:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    // ...once its input is recorded (the model is answering it).
    let ran_before = store
        .loop_ticks(&loop_id)
        .await?
        .iter()
        .filter(|t| t.seq < orphan.seq && t.outcome.as_deref() == Some("ran"))
        .count();
    let a_dies = orphan.instance == "inst_a";
    let (survivor, survivor_id) = if a_dies {
        (&ws_b, "inst_b")
    } else {
        (&ws_a, "inst_a")
    };
    while loop_inputs(survivor, &sid).await? <= ran_before {
        anyhow::ensure!(Instant::now() < deadline, "the tick's input never appeared");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let Server {
        process: a_process,
        db: _db,
        data_dir: _data_dir,
        ..
    } = a;
    let survivor_process = if a_dies {
        a_process.kill().await;
        b
    } else {
        b.kill().await;
        a_process
    };

    let done = wait_for(
        survivor,
        &sid,
        "the loop to finish on the other instance",
        |l| l["status"] == "exhausted",
    )
    .await?;
    assert_eq!(done["turnsDone"], 8, "{done}");
    let ticks = store.loop_ticks(&loop_id).await?;
    let seqs: Vec<i64> = ticks.iter().map(|t| t.seq).collect();
    assert_eq!(
        seqs,
        (1..=seqs.len() as i64).collect::<Vec<_>>(),
        "one row per tick, none twice"
    );
    let later: Vec<_> = ticks.iter().filter(|t| t.seq > orphan.seq).collect();
    assert!(
        later.iter().all(|t| t.instance == survivor_id),
        "only the survivor ticks after the other died: {later:?}"
    );
    let next = later.first().expect("B took over");
    assert!(
        next.started_at >= orphan.started_at + (LEASE_SECS as i64) * 1000,
        "taken over only after the lease expired: {orphan:?} then {next:?}"
    );
    let ran = ticks
        .iter()
        .filter(|t| t.outcome.as_deref() == Some("ran"))
        .count();
    assert_eq!(ran, 8, "eight ticks ran to the end: {ticks:?}");
    let loop_inputs = loop_inputs(survivor, &sid).await?;
    assert_eq!(
        loop_inputs, 9,
        "each tick's input once, plus the one cut short by the kill"
    );
    survivor_process.kill().await;
    Ok(())
}

/// A subscriber on one instance sees, live, the turn another instance runs
/// (PostgreSQL notifications).
#[tokio::test]
async fn events_written_by_another_instance_reach_live_subscribers() -> anyhow::Result<()> {
    let mock = MockLlm::start(vec![MockReply::text("Answered by the other instance.")]).await?;
    let env = HashMap::from([
        ("RTC_LLM_BASE_URL".to_owned(), mock.base_url.clone()),
        ("RTC_ALLOW_PRIVATE_NETWORK".to_owned(), "1".to_owned()),
    ]);
    let Some(Pair { a, b, ws_a, ws_b }) = two_instances(env, &[], &[]).await? else {
        return Ok(());
    };
    let id = assistant(&ws_a, json!({"name": "Plain", "systemPrompt": "Hi."})).await?;
    let (sid, token) = open(&ws_a, json!({"assistantId": id})).await?;
    let created =
        crate::conversation::events_until(&a, &token, &sid, 0, |e| e["type"] == "session.started")
            .await?;
    let after = created.last().unwrap()["seq"].as_i64().unwrap();
    // Subscribe on A, then talk through B.
    let watch = tokio::spawn({
        let (token, sid) = (token.clone(), sid.clone());
        async move {
            crate::conversation::events_until(
                &a,
                &token,
                &sid,
                after,
                crate::conversation::turn_done,
            )
            .await
        }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    ws_b.post(
        &format!("/v1/sessions/{sid}/messages"),
        json!({"text": "hello"}),
    )
    .await?
    .assert_status(202);
    let seen = tokio::time::timeout(Duration::from_secs(15), watch).await???;
    assert!(
        seen.iter().any(|e| e["type"] == "message.completed"
            && e["content"] == "Answered by the other instance."),
        "{seen:?}"
    );
    let seqs: Vec<i64> = seen.iter().map(|e| e["seq"].as_i64().unwrap()).collect();
    assert!(
        seqs.windows(2).all(|w| w[1] == w[0] + 1),
        "in order, none missing: {seqs:?}"
    );
    b.kill().await;
    Ok(())
}

/// The model for the goal test: a goal whose continuation turns take a
/// while, judged done after four continuations.
fn goal_model(req: &Value) -> MockReply {
    let messages = req["messages"].as_array().cloned().unwrap_or_default();
    if req["response_format"]["type"] == "json_object" {
        let transcript = messages
            .last()
            .and_then(|m| m["content"].as_str())
            .unwrap_or("");
        let continuations = transcript.matches("Continue working toward").count();
        let satisfied = continuations >= 4;
        return MockReply::text(&json!({"satisfied": satisfied, "reason": "counted"}).to_string());
    }
    let last = messages.last().cloned().unwrap_or_default();
    match last["role"].as_str() {
        Some("tool") => MockReply::text("Goal set."),
        Some("user")
            if last["content"]
                .as_str()
                .is_some_and(|c| c.starts_with("[Goal")) =>
        {
            MockReply::Delayed(
                Duration::from_millis(700),
                Box::new(MockReply::text("step done")),
            )
        }
        _ => MockReply::call(
            "createGoal",
            json!({"condition": "four steps are done", "max_turns": 10}),
        ),
    }
}

/// The goal's continuation inputs in order: when (RFC 3339, which orders
/// as text) and which turn they give.
async fn continuations(api: &Api, sid: &str) -> anyhow::Result<Vec<(String, String)>> {
    let history = api.get(&format!("/v1/sessions/{sid}/messages")).await?;
    Ok(history.assert_status(200)["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| {
            let c = m["content"].as_str()?;
            let turn = c
                .split("This is turn ")
                .nth(1)?
                .split(' ')
                .next()?
                .to_owned();
            c.starts_with("[Goal")
                .then(|| (m["createdAt"].as_str().unwrap_or("").to_owned(), turn))
        })
        .collect())
}

#[tokio::test]
async fn goal_continuations_run_once_and_move_to_the_surviving_instance() -> anyhow::Result<()> {
    let mock = MockLlm::with_responder(goal_model).await?;
    let env = HashMap::from([
        ("RTC_LLM_BASE_URL".to_owned(), mock.base_url.clone()),
        ("RTC_LOOP_LEASE_SECS".to_owned(), LEASE_SECS.to_string()),
    ]);
    let Some(Pair { a, b, ws_a, ws_b }) = two_instances(
        env,
        &[("RTC_INSTANCE_ID", "inst_a")],
        &[("RTC_INSTANCE_ID", "inst_b")],
    )
    .await?
    else {
        return Ok(());
    };
    let id = assistant(
        &ws_a,
        json!({"name": "Worker", "systemPrompt": "Work.", "features": {"goals": true}}),
    )
    .await?;
    let (sid, _) = open(&ws_a, json!({"assistantId": id})).await?;
    ws_a.post(
        &format!("/v1/sessions/{sid}/messages"),
        json!({"text": "do four steps"}),
    )
    .await?
    .assert_status(202);

    // Both instances alive: A drives the goal, B never steps in (each
    // continuation once). Kill A while its second continuation runs.
    let deadline = Instant::now() + Duration::from_secs(60);
    while continuations(&ws_b, &sid).await?.len() < 2 {
        anyhow::ensure!(
            Instant::now() < deadline,
            "A never continued the goal twice"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let before = continuations(&ws_b, &sid).await?;
    let turns: Vec<&str> = before.iter().map(|(_, t)| t.as_str()).collect();
    assert_eq!(
        turns,
        ["2", "3"],
        "one continuation per turn while both run"
    );
    a.process.kill().await;
    let killed_at = rtc_store::now_millis();

    let goal = loop {
        let listed = ws_b.get(&format!("/v1/sessions/{sid}/goals")).await?;
        let goal = listed.assert_status(200)["data"][0].clone();
        if goal["status"] != "active" {
            break goal;
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "B never finished the goal: {goal}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(goal["status"], "completed", "{goal}");
    let after = continuations(&ws_b, &sid).await?;
    let turns: Vec<&str> = after.iter().map(|(_, t)| t.as_str()).collect();
    // Turn 3 was cut short by the kill and is given again by B, once.
    assert_eq!(turns, ["2", "3", "3", "4"], "{after:?}");
    let taken_over = &after[2].0;
    let lease_out = rtc_core::time::rfc3339_from_millis(killed_at + 1_000);
    assert!(
        *taken_over >= lease_out,
        "B waited for A's lease to run out: killed at {killed_at}, continued at {taken_over}"
    );
    b.kill().await;
    Ok(())
}
