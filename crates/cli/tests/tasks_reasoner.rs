//! Tasks on the built-in reasoner end to end (R-TK, design §0/§0.1): the
//! speaking model delegates, the answer comes at once, the reasoner works
//! with its own prompt and model through a bound HTTP tool (its secret in
//! the header only, scrubbed from what comes back), and one `[Task report]`
//! message starts a turn; status, cancel, the step and time limits, and a
//! task that survives a `kill -9` of the server.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rtc_testkit::{Engine, MockLlm, MockReply};
use serde_json::{Value, json};

use crate::conversation::{assistant, events_until, open, server};
use crate::harness::{Api, Server};
use crate::tasks_support::{answers, history, messages, reports, say};

const SPEAKER: &str = "You are the front desk.";
const REASONER: &str = "You research orders.";
const SECRET: &str = "sk-orders-0123456789";

/// What the scripted model does in one request: the reasoner's or the
/// speaking model's conversation, told apart by the system prompt.
type Script = dyn Fn(&Value, usize) -> MockReply + Send + Sync;

fn is_reasoner(req: &Value) -> bool {
    messages(req)
        .first()
        .is_some_and(|m| m["content"] == REASONER)
}

/// A mock whose reasoner and speaker follow their own scripts.
async fn mock(reasoner: Arc<Script>, speaker: Arc<Script>) -> anyhow::Result<MockLlm> {
    MockLlm::with_recorded_responder(move |req| {
        let n = answers(req);
        if is_reasoner(req) {
            reasoner(req, n)
        } else {
            speaker(req, n)
        }
    })
    .await
}

/// An order service that echoes the Authorization header it was sent.
async fn orders() -> anyhow::Result<(String, Arc<Mutex<Vec<String>>>)> {
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let log = seen.clone();
    let app = axum::Router::new().route(
        "/orders/{id}",
        axum::routing::get(
            move |axum::extract::Path(id): axum::extract::Path<String>,
                  headers: axum::http::HeaderMap| async move {
                let auth = headers
                    .get("authorization")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("")
                    .to_owned();
                log.lock().unwrap().push(id.clone());
                axum::Json(json!({"order": id, "status": "shipped Monday", "echo": auth}))
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok((format!("http://{addr}"), seen))
}

/// A reasoner backend over the order tool, and an assistant using it.
async fn setup(ws: &Api, base: &str, backend: Value) -> anyhow::Result<String> {
    ws.put("/v1/secrets/secret__orders_key", json!({"value": SECRET}))
        .await?
        .assert_status(201);
    ws.create("/v1/tools", json!({"id": "lookup_order", "name": "lookup_order", "type": "http",
        "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]},
        "http": {"method": "GET", "url": format!("{base}/orders/{{{{order_id}}}}"),
                 "headers": {"Authorization": "Bearer {{secret__orders_key}}"}}}))
        .await?;
    let mut body = json!({"id": "tb_research", "name": "Research", "type": "reasoner",
        "reasoner": {"systemPrompt": REASONER, "llm": {"model": "reasoner-model"}, "maxSteps": 5,
            "toolBindings": [{"toolId": "lookup_order", "argumentBindings": {"order_id": {"source": "model"}}}]},
        "timeoutSeconds": 60, "maxConcurrentTasks": 2});
    if let (Some(b), Some(over)) = (body.as_object_mut(), backend.as_object()) {
        for (k, v) in over {
            b.insert(k.clone(), v.clone());
        }
    }
    ws.create("/v1/task-backends", body).await?;
    assistant(
        ws,
        json!({"name": "Desk", "systemPrompt": SPEAKER, "taskBackendId": "tb_research"}),
    )
    .await
}

fn delegate() -> MockReply {
    MockReply::call(
        "delegate_task",
        json!({"title": "Order lookup", "instruction": "Find out when order A-7 ships."}),
    )
}

/// The session's tasks, once `done` holds for them (10 s at most).
async fn tasks_when(
    ws: &Api,
    sid: &str,
    done: impl Fn(&[Value]) -> bool,
) -> anyhow::Result<Vec<Value>> {
    for _ in 0..200 {
        let list = ws.get(&format!("/v1/sessions/{sid}/tasks")).await?.body["data"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if done(&list) {
            return Ok(list);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    anyhow::bail!("the tasks never got there")
}

/// Wait until the history holds `n` task reports and the session is idle.
async fn reports_when(ws: &Api, sid: &str, n: usize) -> anyhow::Result<Vec<Value>> {
    for _ in 0..200 {
        let h = history(ws, sid).await?;
        if reports(&h).len() >= n && h.last().is_some_and(|m| m["role"] == "assistant") {
            return Ok(h);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    anyhow::bail!(
        "no {n} task reports: {:?}",
        reports(&history(ws, sid).await?)
    )
}

async fn delegate_and_report(engine: Engine) -> anyhow::Result<()> {
    let reasoner: Arc<Script> = Arc::new(|_, n| match n {
        0 => MockReply::call("lookup_order", json!({"order_id": "A-7"})),
        _ => MockReply::text("Order A-7 ships Monday."),
    });
    let speaker: Arc<Script> = Arc::new(|_, n| match n {
        0 => delegate(),
        1 => MockReply::text("I asked a colleague to look it up."),
        _ => MockReply::text("Good news: A-7 ships Monday."),
    });
    let mock = mock(reasoner, speaker).await?;
    let Some(srv) = server(engine, &mock).await? else {
        return Ok(());
    };
    let (base, seen) = orders().await?;
    let (_, ws) = srv.workspace("A").await?;
    let id = setup(&ws, &base, json!({})).await?;
    let (sid, token) = open(&ws, json!({"assistantId": id})).await?;
    say(&ws, &sid, "When does A-7 ship?").await?;
    let h = reports_when(&ws, &sid, 1).await?;
    let tool_result = h
        .iter()
        .find(|m| m["role"] == "tool" && m["name"] == "delegate_task")
        .and_then(|m| m["content"].as_str())
        .map(serde_json::from_str::<Value>)
        .transpose()?
        .unwrap_or_default();
    assert_eq!(
        tool_result["status"], "running",
        "answered at once: {tool_result}"
    );
    let task_id = tool_result["task_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(task_id.starts_with("task_"));
    let r = reports(&h);
    assert_eq!(
        r,
        [format!(
            "[Task report] \"Order lookup\" ({task_id}) completed:\nOrder A-7 ships Monday."
        )],
        "one report, once"
    );
    assert_eq!(
        h.last().unwrap()["content"],
        "Good news: A-7 ships Monday.",
        "the report started a turn"
    );
    assert_eq!(seen.lock().unwrap().clone(), ["A-7"]);

    // The reasoner ran its own model and prompt with only its bound tool,
    // and never saw the conversation.
    let reqs: Vec<Value> = mock.requests().into_iter().filter(is_reasoner).collect();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0]["model"], "reasoner-model");
    let names: Vec<&str> = reqs[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert_eq!(names, ["lookup_order"]);
    assert_eq!(
        messages(&reqs[0])[1]["content"],
        "Find out when order A-7 ships."
    );
    assert!(!serde_json::to_string(&reqs)?.contains("When does A-7 ship?"));
    // The speaking model has the three task tools without configuring them.
    let speaker_tools = serde_json::to_string(&mock.requests()[0]["tools"])?;
    for name in ["delegate_task", "get_task_status", "cancel_task"] {
        assert!(speaker_tools.contains(name), "{name} offered");
    }

    let task = ws
        .get(&format!("/v1/sessions/{sid}/tasks/{task_id}"))
        .await?;
    let task = task.assert_status(200).clone();
    assert_eq!(task["status"], "completed");
    assert_eq!(task["result"], "Order A-7 ships Monday.");
    assert_eq!(task["backendType"], "reasoner");
    assert_eq!(task["steps"], 2);
    let roles: Vec<&str> = task["transcript"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["role"].as_str())
        .collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool", "assistant"]);
    let everything = format!("{task}{}", serde_json::to_string(&reqs)?);
    assert!(everything.contains("shipped Monday"));
    assert!(
        !everything.contains(SECRET),
        "the secret is scrubbed from what the tool answered"
    );
    let list = ws.get(&format!("/v1/sessions/{sid}/tasks")).await?.body;
    assert_eq!(list["data"].as_array().map(Vec::len), Some(1));
    assert!(list["data"][0].get("transcript").is_none());

    let events = events_until(&srv, &token, &sid, 0, |e| {
        e["type"] == "message.completed" && e["content"] == "Good news: A-7 ships Monday."
    })
    .await?;
    let kinds: Vec<&str> = events
        .iter()
        .filter_map(|e| e["type"].as_str())
        .filter(|k| k.starts_with("task."))
        .collect();
    assert_eq!(kinds.first(), Some(&"task.started"));
    assert_eq!(kinds.last(), Some(&"task.completed"));
    assert!(kinds.contains(&"task.updated"));
    assert!(!serde_json::to_string(&events)?.contains(SECRET));

    // Another session's task id is not found, and no other session sees it.
    let (other, other_token) = open(&ws, json!({"assistantId": id})).await?;
    let by_token = |t: &str| {
        srv.client.get(format!(
            "{}/v1/sessions/{sid}/tasks/{task_id}?token={t}",
            srv.process.base_url
        ))
    };
    assert_eq!(
        by_token(&token).send().await?.status(),
        200,
        "the session's own client token reads its task"
    );
    assert_eq!(
        by_token(&other_token).send().await?.status(),
        401,
        "another session's token does not"
    );
    ws.get(&format!("/v1/sessions/{other}/tasks/{task_id}"))
        .await?
        .assert_error(404, "not_found", None);
    Ok(())
}

#[tokio::test]
async fn delegate_and_report_sqlite() -> anyhow::Result<()> {
    delegate_and_report(Engine::Sqlite).await
}

#[tokio::test]
async fn delegate_and_report_postgres() -> anyhow::Result<()> {
    delegate_and_report(Engine::Postgres).await
}

/// The last tool result the speaking model saw, parsed.
fn last_tool_result(mock: &MockLlm, name: &str) -> Value {
    mock.requests()
        .iter()
        .rev()
        .filter(|r| !is_reasoner(r))
        .flat_map(|r| messages(r).into_iter().rev())
        .find(|m| m["role"] == "tool" && m["name"].as_str().is_none_or(|n| n == name))
        .and_then(|m| serde_json::from_str(m["content"].as_str()?).ok())
        .unwrap_or(Value::Null)
}

/// Status while running, an unknown id, cancel (no report), and a task id
/// the model made up.
async fn status_and_cancel(engine: Engine) -> anyhow::Result<()> {
    let reasoner: Arc<Script> = Arc::new(|_, _| {
        MockReply::Delayed(Duration::from_secs(30), Box::new(MockReply::text("late")))
    });
    let task_of = |req: &Value| -> String {
        messages(req)
            .iter()
            .filter(|m| m["role"] == "tool")
            .filter_map(|m| serde_json::from_str::<Value>(m["content"].as_str()?).ok())
            .find_map(|v| v["task_id"].as_str().map(str::to_owned))
            .unwrap_or_default()
    };
    let speaker: Arc<Script> = Arc::new(move |req, n| match n {
        0 => delegate(),
        1 => MockReply::text("Started."),
        2 => MockReply::call("get_task_status", json!({"task_id": task_of(req)})),
        3 => MockReply::text("Still running."),
        4 => MockReply::call("get_task_status", json!({"task_id": "task_made_up"})),
        5 => MockReply::text("No such task."),
        6 => MockReply::call("cancel_task", json!({"task_id": task_of(req)})),
        7 => MockReply::text("Cancelled."),
        8 => MockReply::call("cancel_task", json!({"task_id": task_of(req)})),
        _ => MockReply::text("Nothing to cancel."),
    });
    let mock = mock(reasoner, speaker).await?;
    let Some(srv) = server(engine, &mock).await? else {
        return Ok(());
    };
    let (base, _) = orders().await?;
    let (_, ws) = srv.workspace("A").await?;
    let id = setup(&ws, &base, json!({})).await?;
    let (sid, _) = open(&ws, json!({"assistantId": id})).await?;
    let idle = |n: usize| {
        let ws = ws.clone();
        let sid = sid.clone();
        async move {
            for _ in 0..200 {
                let h = history(&ws, &sid).await?;
                if h.iter()
                    .filter(|m| m["role"] == "assistant" && m["content"] != "")
                    .count()
                    >= n
                {
                    return anyhow::Ok(());
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            anyhow::bail!("no answer {n}")
        }
    };
    say(&ws, &sid, "Look up A-7.").await?;
    idle(1).await?;
    say(&ws, &sid, "Status?").await?;
    idle(2).await?;
    let status = last_tool_result(&mock, "get_task_status");
    assert_eq!(status["status"], "running", "{status}");
    assert_eq!(status["title"], "Order lookup");
    assert!(status["started_at"].is_string() && status.get("finished_at").is_none());
    say(&ws, &sid, "And task_made_up?").await?;
    idle(3).await?;
    let h = history(&ws, &sid).await?;
    let unknown = h.iter().rev().find(|m| m["role"] == "tool").unwrap();
    assert!(
        unknown["content"]
            .as_str()
            .unwrap()
            .contains("task `task_made_up` not found"),
        "{unknown}"
    );
    say(&ws, &sid, "Cancel it.").await?;
    idle(4).await?;
    let tasks = tasks_when(&ws, &sid, |t| {
        t.first().is_some_and(|t| t["status"] == "cancelled")
    })
    .await?;
    assert!(tasks[0]["finishedAt"].is_string());
    say(&ws, &sid, "Cancel it again.").await?;
    idle(5).await?;
    let again = last_tool_result(&mock, "cancel_task");
    assert_eq!(again["status"], "cancelled");
    assert!(
        again["note"]
            .as_str()
            .unwrap_or("")
            .contains("nothing was cancelled"),
        "{again}"
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        reports(&history(&ws, &sid).await?).is_empty(),
        "a cancelled task sends no report"
    );
    Ok(())
}

#[tokio::test]
async fn status_and_cancel_sqlite() -> anyhow::Result<()> {
    status_and_cancel(Engine::Sqlite).await
}

#[tokio::test]
async fn status_and_cancel_postgres() -> anyhow::Result<()> {
    status_and_cancel(Engine::Postgres).await
}

/// Three slow tasks delegated in one answer against a limit of two: one
/// is refused, the two others fail at the time limit; then a reasoner
/// that never stops calling tools fails at its step limit. Each failure
/// is one report.
#[tokio::test]
async fn limits_end_tasks_with_a_failure_report() -> anyhow::Result<()> {
    let reasoner: Arc<Script> = Arc::new(|req, _| {
        let instruction = messages(req)[1]["content"]
            .as_str()
            .unwrap_or("")
            .to_owned();
        if instruction.contains("slow") {
            MockReply::Delayed(Duration::from_secs(30), Box::new(MockReply::text("late")))
        } else {
            MockReply::call("lookup_order", json!({"order_id": "A-7"}))
        }
    });
    let slow = |title: &str| {
        (
            "delegate_task".to_owned(),
            json!({"title": title, "instruction": "A slow one."}),
        )
    };
    let speaker: Arc<Script> = Arc::new(move |_, n| match n {
        0 => MockReply::ToolCalls(vec![slow("Slow 1"), slow("Slow 2"), slow("Slow 3")]),
        2 => MockReply::call(
            "delegate_task",
            json!({"title": "Loop", "instruction": "Keep looking."}),
        ),
        _ => MockReply::text("Noted."),
    });
    let mock = mock(reasoner, speaker).await?;
    let Some(srv) = server(Engine::Sqlite, &mock).await? else {
        return Ok(());
    };
    let (base, _) = orders().await?;
    let (_, ws) = srv.workspace("A").await?;
    let backend = json!({"timeoutSeconds": 2, "maxConcurrentTasks": 2,
        "reasoner": {"systemPrompt": REASONER, "maxSteps": 2,
            "toolBindings": [{"toolId": "lookup_order", "argumentBindings": {"order_id": {"source": "model"}}}]}});
    let id = setup(&ws, &base, backend).await?;
    let (sid, _) = open(&ws, json!({"assistantId": id})).await?;
    say(&ws, &sid, "Go.").await?;
    let h = reports_when(&ws, &sid, 3).await?;
    let refused = h
        .iter()
        .filter(|m| {
            m["role"] == "tool"
                && m["content"]
                    .as_str()
                    .is_some_and(|c| c.contains("already runs 2 tasks (its limit)"))
        })
        .count();
    assert_eq!(refused, 1, "one of the three is refused: {h:?}");
    let r = reports(&h);
    assert_eq!(r.len(), 3, "{r:?}");
    let timed_out = r
        .iter()
        .filter(|t| {
            t.starts_with("[Task report] \"Slow ")
                && t.contains("failed: the task timed out after 2 s")
        })
        .count();
    assert_eq!(timed_out, 2, "{r:?}");
    assert!(
        r.iter().any(|t| t.starts_with("[Task report] \"Loop\"")
            && t.contains("failed: the reasoner reached its limit of 2 model calls")),
        "{r:?}"
    );
    let tasks = tasks_when(&ws, &sid, |t| t.len() == 3).await?;
    let statuses: Vec<&str> = tasks.iter().filter_map(|t| t["status"].as_str()).collect();
    assert_eq!(
        statuses,
        ["failed", "failed", "failed"],
        "the refused one never ran; none is left running"
    );
    Ok(())
}

/// A mock whose reasoner looks the order up, then hangs on its first
/// second model call (the moment the test kills the instance driving
/// it) and answers the next one.
async fn cut_off_mid_task() -> anyhow::Result<MockLlm> {
    let first = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let reasoner: Arc<Script> = Arc::new(move |_, n| match n {
        0 => MockReply::call("lookup_order", json!({"order_id": "A-7"})),
        _ if first.swap(false, std::sync::atomic::Ordering::SeqCst) => {
            MockReply::Delayed(Duration::from_secs(60), Box::new(MockReply::text("never")))
        }
        _ => MockReply::text("Order A-7 ships Monday."),
    });
    let speaker: Arc<Script> = Arc::new(|_, n| match n {
        0 => delegate(),
        1 => MockReply::text("On it."),
        _ => MockReply::text("Done."),
    });
    mock(reasoner, speaker).await
}

/// `kill -9` while the reasoner waits on its model: after the restart the
/// task resumes from its transcript and reports exactly once.
async fn survives_restart(engine: Engine) -> anyhow::Result<()> {
    let mock = cut_off_mid_task().await?;
    let env = HashMap::from([
        ("RTC_LLM_BASE_URL".to_owned(), mock.base_url.clone()),
        ("RTC_LLM_MODEL".to_owned(), "mock-model".to_owned()),
        ("RTC_ALLOW_PRIVATE_NETWORK".to_owned(), "1".to_owned()),
        ("RTC_INSTANCE_ID".to_owned(), "inst-one".to_owned()),
        ("RTC_LOOP_LEASE_SECS".to_owned(), "3".to_owned()),
    ]);
    let Some(srv) = crate::harness::start(engine, env.clone()).await? else {
        return Ok(());
    };
    let (base, seen) = orders().await?;
    let (_, ws) = srv.workspace("A").await?;
    let id = setup(&ws, &base, json!({})).await?;
    let (sid, _) = open(&ws, json!({"assistantId": id})).await?;
    say(&ws, &sid, "Look up A-7.").await?;
    tasks_when(&ws, &sid, |t| t.first().is_some_and(|t| t["steps"] == 1)).await?;
    // The second model call hangs: the task is mid-flight.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let srv: Server = srv.kill_and_restart(&env).await?;
    let ws = Api {
        base: srv.process.base_url.clone(),
        ..ws
    };
    let h = reports_when(&ws, &sid, 1).await?;
    assert_eq!(
        reports(&h).len(),
        1,
        "reported exactly once after the restart"
    );
    assert!(reports(&h)[0].ends_with("completed:\nOrder A-7 ships Monday."));
    assert_eq!(
        seen.lock().unwrap().len(),
        1,
        "the finished tool call is not run again"
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(reports(&history(&ws, &sid).await?).len(), 1);
    Ok(())
}

#[tokio::test]
async fn survives_restart_sqlite() -> anyhow::Result<()> {
    survives_restart(Engine::Sqlite).await
}

#[tokio::test]
async fn survives_restart_postgres() -> anyhow::Result<()> {
    survives_restart(Engine::Postgres).await
}

/// Two instances on one PostgreSQL: the instance driving a task dies
/// mid-task; the other takes it over after the lease and reports once.
#[tokio::test]
async fn a_dead_instances_task_is_taken_over_once() -> anyhow::Result<()> {
    let mock = cut_off_mid_task().await?;
    let env = |instance: &str| {
        HashMap::from([
            ("RTC_LLM_BASE_URL".to_owned(), mock.base_url.clone()),
            ("RTC_LLM_MODEL".to_owned(), "mock-model".to_owned()),
            ("RTC_ALLOW_PRIVATE_NETWORK".to_owned(), "1".to_owned()),
            ("RTC_INSTANCE_ID".to_owned(), instance.to_owned()),
            ("RTC_LOOP_LEASE_SECS".to_owned(), "2".to_owned()),
        ])
    };
    let Some(a) = crate::harness::start(Engine::Postgres, env("inst-a")).await? else {
        return Ok(());
    };
    let b = rtc_testkit::ServerProcess::start(
        &crate::harness::binary(),
        &a.db.url,
        a.data_dir.path(),
        &env("inst-b"),
    )
    .await?;
    let (base, seen) = orders().await?;
    let (_, ws_a) = a.workspace("A").await?;
    let ws_b = Api {
        base: b.base_url.clone(),
        ..ws_a.clone()
    };
    let id = setup(&ws_a, &base, json!({})).await?;
    let (sid, _) = open(&ws_a, json!({"assistantId": id})).await?;
    say(&ws_a, &sid, "Look up A-7.").await?;
    tasks_when(&ws_a, &sid, |t| t.first().is_some_and(|t| t["steps"] == 1)).await?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let Server {
        process,
        db,
        data_dir,
        ..
    } = a;
    process.kill().await;
    let h = reports_when(&ws_b, &sid, 1).await?;
    assert!(
        reports(&h)[0].ends_with("completed:\nOrder A-7 ships Monday."),
        "{:?}",
        reports(&h)
    );
    assert_eq!(
        seen.lock().unwrap().len(),
        1,
        "the finished tool call is not run again"
    );
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        reports(&history(&ws_b, &sid).await?).len(),
        1,
        "reported exactly once"
    );
    b.kill().await;
    drop((db, data_dir));
    Ok(())
}
