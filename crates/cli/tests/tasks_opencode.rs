//! Tasks on a real OpenCode server end to end (R-TK, design §5): a prompt
//! pipeline assistant delegates to an `opencode` task backend pointing at
//! a real `opencode serve` (npm `opencode-ai`, pinned; `RTC_TEST_OPENCODE`)
//! wired to the scripted mock LLM, which also plays the speaking model.
//! Delegation answers at once; one `[Task report]` carries OpenCode's
//! answer; status, cancel (abort), a server that is down or refuses the
//! password, a server that dies or whose model is unreachable mid-task, an
//! OpenCode error, and two tasks at once that keep to their sessions.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use rtc_testkit::{
    Engine, MockLlm, MockReply, OpencodeServer, opencode_binary, opencode_reply, twenty_words,
};
use serde_json::{Value, json};

use crate::conversation::{assistant, open, server};
use crate::harness::{Api, Server};
use crate::tasks_support::{answers, history, messages, reports, say};

/// The speaking model's answer to its `n`-th call of a conversation.
type Script = dyn Fn(&Value, usize) -> MockReply + Send + Sync;

/// The task id the speaking model was given (from `delegate_task`).
fn task_of(req: &Value) -> String {
    messages(req)
        .iter()
        .filter(|m| m["role"] == "tool")
        .filter_map(|m| serde_json::from_str::<Value>(m["content"].as_str()?).ok())
        .find_map(|v| v["task_id"].as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// One mock for OpenCode's model ids and the speaking model.
async fn mock(speaker: Arc<Script>) -> anyhow::Result<MockLlm> {
    MockLlm::with_recorded_responder(move |req| {
        opencode_reply(req).unwrap_or_else(|| speaker(req, answers(req)))
    })
    .await
}

fn delegate(title: &str) -> MockReply {
    MockReply::call(
        "delegate_task",
        json!({"title": title, "instruction": "Fix the failing build."}),
    )
}

/// The platform and a real OpenCode server wired to the same mock, or
/// None when the test is skipped.
async fn stand(engine: Engine, mock: &MockLlm) -> anyhow::Result<Option<(Server, OpencodeServer)>> {
    let Some(binary) = opencode_binary() else {
        return Ok(None);
    };
    let Some(srv) = server(engine, mock).await? else {
        return Ok(None);
    };
    let opencode = OpencodeServer::start(&binary, &mock.base_url).await?;
    Ok(Some((srv, opencode)))
}

/// An `opencode` backend `id` at `base_url` (its password in a secret) and
/// an assistant delegating to it.
async fn setup(
    ws: &Api,
    id: &str,
    base_url: &str,
    password: &str,
    model: &str,
    timeout: u32,
) -> anyhow::Result<String> {
    let secret = format!("secret__{id}_pw");
    ws.put(&format!("/v1/secrets/{secret}"), json!({"value": password}))
        .await?
        .assert_status(201);
    ws.create(
        "/v1/task-backends",
        json!({"id": id, "name": "Coder", "type": "opencode",
               "opencode": {"baseUrl": base_url, "password": format!("{{{{{secret}}}}}"),
                            "model": {"providerID": "mock", "modelID": model}},
               "timeoutSeconds": timeout, "maxConcurrentTasks": 4}),
    )
    .await?;
    assistant(
        ws,
        json!({"name": "Desk", "systemPrompt": "You are the front desk.", "taskBackendId": id}),
    )
    .await
}

/// Wait (40 s at most) until the history holds a task report and the
/// session answered it.
async fn report(ws: &Api, sid: &str) -> anyhow::Result<(String, Vec<Value>)> {
    for _ in 0..400 {
        let h = history(ws, sid).await?;
        let r = reports(&h);
        if let Some(first) = r.first()
            && h.last().is_some_and(|m| m["role"] == "assistant")
        {
            return Ok((first.clone(), h));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    anyhow::bail!("no task report: {:?}", history(ws, sid).await?)
}

/// Wait until the session has `n` non-empty assistant answers.
async fn answered(ws: &Api, sid: &str, n: usize) -> anyhow::Result<Vec<Value>> {
    for _ in 0..300 {
        let h = history(ws, sid).await?;
        if h.iter()
            .filter(|m| m["role"] == "assistant" && m["content"] != "")
            .count()
            >= n
        {
            return Ok(h);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    anyhow::bail!("no answer {n}: {:?}", history(ws, sid).await?)
}

/// The session's only task.
async fn the_task(ws: &Api, sid: &str) -> anyhow::Result<Value> {
    let list = ws.get(&format!("/v1/sessions/{sid}/tasks")).await?.body;
    let tasks = list["data"].as_array().cloned().unwrap_or_default();
    anyhow::ensure!(tasks.len() == 1, "one task: {list}");
    Ok(tasks[0].clone())
}

/// A tool's results the session holds, newest last.
fn tool_results(h: &[Value], name: &str) -> Vec<String> {
    h.iter()
        .filter(|m| m["role"] == "tool" && m["name"] == name)
        .filter_map(|m| m["content"].as_str().map(str::to_owned))
        .collect()
}

/// GET on the OpenCode server itself.
async fn opencode_get(oc: &OpencodeServer, path: &str) -> anyhow::Result<Value> {
    rtc_testkit::init_tls();
    let reply = reqwest::Client::new()
        .get(format!("{}{path}", oc.base_url))
        .basic_auth("opencode", Some(&oc.password))
        .send()
        .await?
        .error_for_status()?;
    Ok(reply.json().await?)
}

fn speaker_delegating(title: &'static str) -> Arc<Script> {
    Arc::new(move |_, n| match n {
        0 => delegate(title),
        1 => MockReply::text("I handed it to the coder."),
        _ => MockReply::text("The coder is done."),
    })
}

/// §5.1: delegate → one report with OpenCode's answer, the OpenCode
/// session titled like the task with one user and a finished assistant
/// message.
async fn delegate_and_report(engine: Engine) -> anyhow::Result<()> {
    let mock = mock(speaker_delegating("Fix the build")).await?;
    let Some((srv, oc)) = stand(engine, &mock).await? else {
        return Ok(());
    };
    let (_, ws) = srv.workspace("A").await?;
    let id = setup(
        &ws,
        "tb_code",
        &oc.base_url,
        &oc.password,
        "tools-0-words-20",
        120,
    )
    .await?;
    let (sid, _) = open(&ws, json!({"assistantId": id})).await?;
    say(&ws, &sid, "The build is red.").await?;
    let (text, h) = report(&ws, &sid).await?;
    let started: Value = serde_json::from_str(&tool_results(&h, "delegate_task")[0])?;
    assert_eq!(started["status"], "running", "answered at once: {started}");
    let task_id = started["task_id"].as_str().unwrap_or_default().to_owned();
    assert_eq!(
        text,
        format!(
            "[Task report] \"Fix the build\" ({task_id}) completed:\n{}",
            twenty_words()
        )
    );
    assert_eq!(reports(&h).len(), 1, "one report");
    assert_eq!(h.last().unwrap()["content"], "The coder is done.");

    let task = the_task(&ws, &sid).await?;
    assert_eq!(task["status"], "completed");
    assert_eq!(task["backendType"], "opencode");
    assert_eq!(task["result"], twenty_words());
    let external = task["externalId"].as_str().unwrap_or_default().to_owned();
    assert!(external.starts_with("ses_"), "{task}");
    let session = opencode_get(&oc, &format!("/session/{external}")).await?;
    assert_eq!(session["title"], "Fix the build");
    let msgs = opencode_get(&oc, &format!("/session/{external}/message")).await?;
    let msgs = msgs.as_array().cloned().unwrap_or_default();
    let users = msgs.iter().filter(|m| m["info"]["role"] == "user").count();
    assert_eq!(users, 1);
    assert!(
        msgs.iter()
            .any(|m| m["info"]["role"] == "assistant" && m["info"]["finish"] == "stop")
    );
    assert!(
        !serde_json::to_string(&h)?.contains(&oc.password),
        "the password reaches no message"
    );
    oc.stop().await;
    Ok(())
}

#[tokio::test]
async fn opencode_delegate_and_report_sqlite() -> anyhow::Result<()> {
    delegate_and_report(Engine::Sqlite).await
}

#[tokio::test]
async fn opencode_delegate_and_report_postgres() -> anyhow::Result<()> {
    delegate_and_report(Engine::Postgres).await
}

/// §5.2 and §5.3: running while OpenCode works, an unknown id, cancel →
/// abort (MessageAbortedError, no status entry), no completion report.
async fn status_and_cancel(engine: Engine) -> anyhow::Result<()> {
    let speaker: Arc<Script> = Arc::new(|req, n| match n {
        0 => delegate("Slow job"),
        1 => MockReply::text("Started."),
        2 => MockReply::call("get_task_status", json!({"task_id": task_of(req)})),
        3 => MockReply::text("Still running."),
        4 => MockReply::call("get_task_status", json!({"task_id": "task_made_up"})),
        5 => MockReply::text("No such task."),
        6 => MockReply::call("cancel_task", json!({"task_id": task_of(req)})),
        _ => MockReply::text("Cancelled."),
    });
    let mock = mock(speaker).await?;
    let Some((srv, oc)) = stand(engine, &mock).await? else {
        return Ok(());
    };
    let (_, ws) = srv.workspace("A").await?;
    let id = setup(
        &ws,
        "tb_code",
        &oc.base_url,
        &oc.password,
        "tools-0-delay-30s",
        120,
    )
    .await?;
    let (sid, _) = open(&ws, json!({"assistantId": id})).await?;
    say(&ws, &sid, "Start it.").await?;
    answered(&ws, &sid, 1).await?;
    say(&ws, &sid, "Status?").await?;
    let h = answered(&ws, &sid, 2).await?;
    let status: Value = serde_json::from_str(tool_results(&h, "get_task_status").last().unwrap())?;
    assert_eq!(status["status"], "running", "{status}");
    assert_eq!(status["title"], "Slow job");
    let external = the_task(&ws, &sid).await?["externalId"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let busy = opencode_get(&oc, "/session/status").await?;
    assert!(
        busy.get(&external).is_some(),
        "OpenCode works on it: {busy}"
    );

    say(&ws, &sid, "And task_made_up?").await?;
    let h = answered(&ws, &sid, 3).await?;
    let unknown = tool_results(&h, "get_task_status")
        .last()
        .cloned()
        .unwrap_or_default();
    assert!(unknown.contains("not found"), "{unknown}");

    // Cancel while the model call runs (an abort before OpenCode wrote its
    // assistant message leaves none to mark aborted).
    let mut calling = false;
    // OpenCode starts slowly on a loaded machine: up to 30 s.
    for _ in 0..300 {
        let msgs = opencode_get(&oc, &format!("/session/{external}/message")).await?;
        calling = msgs
            .as_array()
            .is_some_and(|m| m.iter().any(|m| m["info"]["role"] == "assistant"));
        if calling {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(calling, "OpenCode calls its model");
    say(&ws, &sid, "Cancel it.").await?;
    answered(&ws, &sid, 4).await?;
    let cancelled_at = std::time::Instant::now();
    let mut task = the_task(&ws, &sid).await?;
    while task["status"] == "running" && cancelled_at.elapsed() < Duration::from_secs(5) {
        tokio::time::sleep(Duration::from_millis(100)).await;
        task = the_task(&ws, &sid).await?;
    }
    assert_eq!(task["status"], "cancelled", "{task}");
    // OpenCode was told: the message is aborted and the session idle.
    let mut aborted = false;
    for _ in 0..50 {
        let msgs = opencode_get(&oc, &format!("/session/{external}/message")).await?;
        aborted = msgs.as_array().is_some_and(|m| {
            m.iter()
                .any(|m| m["info"]["error"]["name"] == "MessageAbortedError")
        });
        if aborted {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(aborted, "the OpenCode session was aborted");
    assert!(
        opencode_get(&oc, "/session/status")
            .await?
            .get(&external)
            .is_none()
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    let r = reports(&history(&ws, &sid).await?);
    assert!(
        r.len() <= 1 && r.iter().all(|r| r.contains("cancelled")),
        "no result report after a cancel: {r:?}"
    );
    oc.stop().await;
    Ok(())
}

#[tokio::test]
async fn opencode_status_and_cancel_sqlite() -> anyhow::Result<()> {
    status_and_cancel(Engine::Sqlite).await
}

#[tokio::test]
async fn opencode_status_and_cancel_postgres() -> anyhow::Result<()> {
    status_and_cancel(Engine::Postgres).await
}

/// §5.4: a closed port and a wrong password are told apart, at once, and
/// leave no running task; the conversation goes on.
#[tokio::test]
async fn opencode_down_or_refusing_is_a_clear_tool_error() -> anyhow::Result<()> {
    let mock = mock(speaker_delegating("Fix the build")).await?;
    let Some((srv, oc)) = stand(Engine::Sqlite, &mock).await? else {
        return Ok(());
    };
    let (_, ws) = srv.workspace("A").await?;
    let port = rtc_testkit::free_port()?;
    let closed = format!("http://127.0.0.1:{port}");
    for (backend, url, password, expected) in [
        (
            "tb_down",
            closed.clone(),
            "some-password-1",
            format!("task backend \"opencode\" unreachable at {closed}: connection refused"),
        ),
        (
            "tb_refused",
            oc.base_url.clone(),
            "wrong-password-1",
            "authentication failed".to_owned(),
        ),
    ] {
        let id = setup(&ws, backend, &url, password, "tools-0", 60).await?;
        let (sid, _) = open(&ws, json!({"assistantId": id})).await?;
        let asked = std::time::Instant::now();
        say(&ws, &sid, "The build is red.").await?;
        let h = answered(&ws, &sid, 1).await?;
        assert!(asked.elapsed() < Duration::from_secs(8), "no hang");
        let result = tool_results(&h, "delegate_task").pop().unwrap_or_default();
        assert!(result.contains(&expected), "{backend}: {result}");
        assert!(!result.contains(password), "{result}");
        assert_eq!(h.last().unwrap()["content"], "I handed it to the coder.");
        let list = ws.get(&format!("/v1/sessions/{sid}/tasks")).await?.body;
        let running = list["data"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["status"] == "running"));
        assert!(!running, "no task left running: {list}");
    }
    oc.stop().await;
    Ok(())
}

/// §5.5a: the server dies mid-task → failed, reported, within the budget.
#[tokio::test]
async fn opencode_dying_mid_task_fails_the_task() -> anyhow::Result<()> {
    let mock = mock(speaker_delegating("Slow job")).await?;
    let Some((srv, mut oc)) = stand(Engine::Sqlite, &mock).await? else {
        return Ok(());
    };
    let (_, ws) = srv.workspace("A").await?;
    let id = setup(
        &ws,
        "tb_code",
        &oc.base_url,
        &oc.password,
        "tools-0-delay-30s",
        300,
    )
    .await?;
    let (sid, _) = open(&ws, json!({"assistantId": id})).await?;
    say(&ws, &sid, "Start it.").await?;
    answered(&ws, &sid, 1).await?;
    let _closed = oc.kill().await;
    let killed = std::time::Instant::now();
    let (text, _) = report(&ws, &sid).await?;
    assert!(
        killed.elapsed() < Duration::from_secs(25),
        "{:?}",
        killed.elapsed()
    );
    assert!(text.contains("failed:"), "{text}");
    assert!(text.contains("unreachable"), "{text}");
    assert_eq!(the_task(&ws, &sid).await?["status"], "failed");
    Ok(())
}

/// §5.5b: the model endpoint is down, OpenCode retries forever; at the
/// backend's timeout the session is aborted and the report quotes the
/// retry message. The timeout leaves OpenCode room for its first retry on
/// a loaded machine (at 6 s it often had not retried yet under load).
#[tokio::test]
async fn opencode_retrying_model_fails_at_the_timeout() -> anyhow::Result<()> {
    let mock = mock(speaker_delegating("Doomed job")).await?;
    let Some(binary) = opencode_binary() else {
        return Ok(());
    };
    let Some(srv) = server(Engine::Sqlite, &mock).await? else {
        return Ok(());
    };
    // Refused for the whole test: a port merely free now could be taken by
    // another test's server (which would answer "Unauthorized").
    let closed = rtc_testkit::ClosedPort::new()?;
    let dead_llm = format!("http://127.0.0.1:{}/v1", closed.port);
    let oc = OpencodeServer::start(&binary, &dead_llm).await?;
    let (_, ws) = srv.workspace("A").await?;
    let id = setup(&ws, "tb_code", &oc.base_url, &oc.password, "tools-0", 12).await?;
    let (sid, _) = open(&ws, json!({"assistantId": id})).await?;
    say(&ws, &sid, "Start it.").await?;
    let (text, _) = report(&ws, &sid).await?;
    assert!(text.contains("failed:"), "{text}");
    assert!(text.contains("Cannot connect to API"), "{text}");
    let task = the_task(&ws, &sid).await?;
    assert_eq!(task["status"], "failed");
    let external = task["externalId"].as_str().unwrap_or_default().to_owned();
    let mut idle = false;
    for _ in 0..50 {
        idle = opencode_get(&oc, "/session/status")
            .await?
            .get(&external)
            .is_none();
        if idle {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(idle, "the retrying session was aborted");
    oc.stop().await;
    Ok(())
}

/// §5.6: an OpenCode error (unknown model) fails the task with its
/// message; two tasks at once from two conversations keep to their own,
/// one of them with a tool step that needs no approval.
#[tokio::test]
async fn opencode_errors_surface_and_tasks_stay_apart() -> anyhow::Result<()> {
    let mock = mock(speaker_delegating("Job")).await?;
    let Some((srv, oc)) = stand(Engine::Sqlite, &mock).await? else {
        return Ok(());
    };
    let (_, ws) = srv.workspace("A").await?;
    let nope = setup(&ws, "tb_nope", &oc.base_url, &oc.password, "nope", 60).await?;
    let tool = setup(&ws, "tb_tool", &oc.base_url, &oc.password, "tools-1", 60).await?;
    let words = setup(
        &ws,
        "tb_words",
        &oc.base_url,
        &oc.password,
        "tools-0-words-20",
        60,
    )
    .await?;
    let (s_nope, _) = open(&ws, json!({"assistantId": nope})).await?;
    let (s_tool, _) = open(&ws, json!({"assistantId": tool})).await?;
    let (s_words, _) = open(&ws, json!({"assistantId": words})).await?;
    for sid in [&s_nope, &s_tool, &s_words] {
        say(&ws, sid, "Go.").await?;
    }
    let (text, _) = report(&ws, &s_nope).await?;
    assert!(
        text.contains("failed:\nModel not found: mock/nope.")
            || text.contains("Model not found: mock/nope."),
        "{text}"
    );
    assert_eq!(the_task(&ws, &s_nope).await?["status"], "failed");
    let (text, _) = report(&ws, &s_tool).await?;
    assert!(text.ends_with("completed:\ndone"), "{text}");
    let (text, _) = report(&ws, &s_words).await?;
    assert!(
        text.ends_with(&format!("completed:\n{}", twenty_words())),
        "{text}"
    );
    for sid in [&s_nope, &s_tool, &s_words] {
        assert_eq!(
            reports(&history(&ws, sid).await?).len(),
            1,
            "one report each"
        );
    }
    oc.stop().await;
    Ok(())
}

/// §0.2: a server the platform starts itself (`opencode.command`, admin
/// only): its configuration's secrets rendered, its HOME under the data
/// folder, a task run on it, and the server stopped with the platform.
#[tokio::test]
async fn opencode_started_by_the_platform_runs_tasks() -> anyhow::Result<()> {
    let mock = mock(speaker_delegating("Local job")).await?;
    let Some(binary) = opencode_binary() else {
        return Ok(());
    };
    let Some(srv) = server(Engine::Sqlite, &mock).await? else {
        return Ok(());
    };
    let (ws_id, ws) = srv.workspace("A").await?;
    ws.put(
        "/v1/secrets/secret__llm_key",
        json!({"value": "sk-mock-0123456789"}),
    )
    .await?
    .assert_status(201);
    let mut config = rtc_testkit::opencode_test_config(&mock.base_url);
    config["provider"]["mock"]["options"]["apiKey"] = json!("{{secret__llm_key}}");
    // A started backend, an assistant on it, one task run to its report.
    let run_one = |desk: &'static str| {
        let (srv, ws, ws_id, binary, config) = (&srv, &ws, &ws_id, &binary, &config);
        async move {
            srv.admin_in(ws_id)
                .create(
                    "/v1/task-backends",
                    json!({"id": "tb_local", "name": "Local coder", "type": "opencode",
                           "opencode": {"command": binary.display().to_string(), "config": config,
                                        "model": {"providerID": "mock", "modelID": "tools-0"}},
                           "timeoutSeconds": 120}),
                )
                .await?;
            let id = assistant(
                ws,
                json!({"name": desk, "systemPrompt": "You are the front desk.", "taskBackendId": "tb_local"}),
            )
            .await?;
            let (sid, _) = open(ws, json!({"assistantId": id})).await?;
            say(ws, &sid, "Go.").await?;
            let (text, _) = report(ws, &sid).await?;
            assert!(text.ends_with("completed:\ndone"), "{text}");
            anyhow::Ok(id)
        }
    };
    let id = run_one("Desk").await?;
    let homes = srv.data_dir.path().join("opencode");
    let home = std::fs::read_dir(&homes)?
        .filter_map(Result::ok)
        .next()
        .map(|e| e.path())
        .expect("a HOME under the data folder");
    let marker = format!("HOME={}", home.display());
    assert_eq!(rtc_testkit::processes_with(&marker), 1, "one server runs");
    // Deleting the backend stops its server.
    ws.delete(&format!("/v1/assistants/{id}")).await?;
    let gone = srv
        .admin_in(&ws_id)
        .delete("/v1/task-backends/tb_local")
        .await?;
    assert!(gone.status.is_success(), "{:?}", gone.body);
    assert_eq!(
        rtc_testkit::processes_with(&marker),
        0,
        "the deleted backend's server stopped"
    );
    // A backend started again runs a task again, and stops with the platform.
    run_one("Desk 2").await?;
    assert_eq!(rtc_testkit::processes_with(&marker), 1, "one server runs");
    let Server { process, .. } = srv;
    process.terminate(Duration::from_secs(20)).await?;
    assert_eq!(
        rtc_testkit::processes_with(&marker),
        0,
        "the server stops with the platform"
    );
    Ok(())
}

/// The platform is killed (`kill -9`) while OpenCode works on a task;
/// after the restart the task is re-attached by its OpenCode session id
/// (not started again) and reported once.
async fn reattached_after_restart(engine: Engine) -> anyhow::Result<()> {
    let mock = mock(speaker_delegating("Long job")).await?;
    let Some(binary) = opencode_binary() else {
        return Ok(());
    };
    let env = HashMap::from([
        ("RTC_LLM_BASE_URL".to_owned(), mock.base_url.clone()),
        ("RTC_LLM_MODEL".to_owned(), "mock-model".to_owned()),
        ("RTC_ALLOW_PRIVATE_NETWORK".to_owned(), "1".to_owned()),
        ("RTC_INSTANCE_ID".to_owned(), "inst-one".to_owned()),
        // Shown if the report goes unanswered (seen once in CI, 1 of ~40
        // runs, never here): what the restarted server did.
        (
            "RUST_LOG".to_owned(),
            "info,rtc_session=debug,rtc_runtime=debug".to_owned(),
        ),
    ]);
    let Some(srv) = crate::harness::start(engine, env.clone()).await? else {
        return Ok(());
    };
    let oc = OpencodeServer::start(&binary, &mock.base_url).await?;
    let (_, ws) = srv.workspace("A").await?;
    let id = setup(
        &ws,
        "tb_code",
        &oc.base_url,
        &oc.password,
        "tools-0-delay-8s",
        120,
    )
    .await?;
    let (sid, _) = open(&ws, json!({"assistantId": id})).await?;
    say(&ws, &sid, "Start it.").await?;
    answered(&ws, &sid, 1).await?;
    let external = the_task(&ws, &sid).await?["externalId"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(external.starts_with("ses_"), "{external}");
    let srv = srv.kill_and_restart(&env).await?;
    let ws = Api {
        base: srv.process.base_url.clone(),
        ..ws
    };
    let (text, _) = match report(&ws, &sid).await {
        Ok(found) => found,
        Err(e) => anyhow::bail!("{e}\nthe restarted server's log:\n{}", srv.process.log()),
    };
    assert!(text.ends_with("completed:\ndone"), "{text}");
    let task = the_task(&ws, &sid).await?;
    assert_eq!(task["status"], "completed");
    assert_eq!(
        task["externalId"],
        external.as_str(),
        "the same OpenCode session"
    );
    let messages = opencode_get(&oc, &format!("/session/{external}/message")).await?;
    let users = messages.as_array().map_or(0, |m| {
        m.iter().filter(|m| m["info"]["role"] == "user").count()
    });
    assert_eq!(users, 1, "the instruction was sent once");
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(reports(&history(&ws, &sid).await?).len(), 1);
    Ok(())
}

#[tokio::test]
async fn opencode_task_reattached_after_restart_sqlite() -> anyhow::Result<()> {
    reattached_after_restart(Engine::Sqlite).await
}

#[tokio::test]
async fn opencode_task_reattached_after_restart_postgres() -> anyhow::Result<()> {
    reattached_after_restart(Engine::Postgres).await
}
