//! The OpenCode client, event hub and supervisor against a real
//! `opencode serve` (npm `opencode-ai`, pinned; `RTC_TEST_OPENCODE`) wired
//! to the scripted mock LLM. One server serves all the client scenarios
//! (design §4 budget); tasks are isolated by session.

use std::time::Duration;

use rtc_protocol::OpencodeModel;
use rtc_testkit::{
    MockLlm, MockReply, OpencodeServer, opencode_binary, opencode_reply, opencode_test_config,
    twenty_words,
};
use rtc_tools::net_guard::AddressPolicy;
use rtc_tools::opencode::{
    EventHub, HubEvent, OpencodeClient, OpencodeError, OpencodeEvent, PINNED_VERSION, Password,
    SessionState, SupervisedServer, SupervisorSettings, TaskOutcome, TaskPrompt, task_outcome,
};
use serde_json::Value;
use tokio::sync::broadcast;

async fn mock_llm() -> anyhow::Result<MockLlm> {
    MockLlm::with_recorded_responder(|request| {
        opencode_reply(request).unwrap_or_else(|| MockReply::Error(500, "unexpected model".into()))
    })
    .await
}

fn model(id: &str) -> OpencodeModel {
    OpencodeModel {
        provider_id: "mock".into(),
        model_id: id.into(),
    }
}

/// Wait for the first event `pick` accepts.
async fn wait_event<T>(
    events: &mut broadcast::Receiver<HubEvent>,
    within: Duration,
    mut pick: impl FnMut(&OpencodeEvent) -> Option<T>,
) -> anyhow::Result<T> {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let event = tokio::time::timeout_at(deadline, events.recv())
            .await
            .map_err(|_| anyhow::anyhow!("no such event within {within:?}"))?;
        if let Ok(HubEvent::Event(event)) = event
            && let Some(found) = pick(&event)
        {
            return Ok(found);
        }
    }
}

/// Wait until the event stream is (again) live: events of a prompt sent
/// before would be missed.
async fn connected(events: &mut broadcast::Receiver<HubEvent>) -> anyhow::Result<()> {
    wait_event(events, Duration::from_secs(30), |e| {
        matches!(e, OpencodeEvent::Connected).then_some(())
    })
    .await
}

async fn wait_idle(
    events: &mut broadcast::Receiver<HubEvent>,
    session: &str,
) -> anyhow::Result<()> {
    wait_event(events, Duration::from_secs(60), |e| {
        matches!(e, OpencodeEvent::Idle { session: s } if s == session).then_some(())
    })
    .await
}

/// Create a session, prompt it, wait for `session.idle`: the messages.
async fn run_task(
    client: &OpencodeClient,
    events: &mut broadcast::Receiver<HubEvent>,
    model_id: &str,
) -> anyhow::Result<(String, Vec<Value>)> {
    let model = model(model_id);
    let session = client.create_session("rtc-agent task", &model).await?;
    assert!(session.starts_with("ses_"), "{session}");
    let prompt = TaskPrompt {
        text: "Do the task.",
        model: &model,
        agent: None,
    };
    client.prompt_async(&session, &prompt).await?;
    wait_idle(events, &session).await?;
    let messages = client.messages(&session).await?;
    Ok((session, messages))
}

fn roles(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .map(|m| m["info"]["role"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn a_real_server_runs_tasks_to_their_outcome() -> anyhow::Result<()> {
    let Some(binary) = opencode_binary() else {
        return Ok(());
    };
    let llm = mock_llm().await?;
    let server = OpencodeServer::start(&binary, &llm.base_url).await?;
    let password = Password::new(server.password.clone());
    let client = OpencodeClient::new(
        &server.base_url,
        Some(&password),
        None,
        AddressPolicy::AllowPrivate,
    )?;
    assert!(!format!("{client:?}").contains(&server.password));
    assert_eq!(client.health(Duration::from_secs(1)).await?, PINNED_VERSION);
    let hub = EventHub::new(client.clone());
    let mut events = hub.subscribe();
    connected(&mut events).await?;

    // tools-0: one user message, one finished assistant message, "done".
    let (_, messages) = run_task(&client, &mut events, "tools-0").await?;
    assert_eq!(
        task_outcome(&messages),
        TaskOutcome::Completed("done".into())
    );
    assert_eq!(roles(&messages), ["user", "assistant"]);
    assert_eq!(messages[1]["info"]["finish"], "stop");

    // Streaming: the 20 words.
    let (_, messages) = run_task(&client, &mut events, "tools-0-words-20").await?;
    assert_eq!(
        task_outcome(&messages),
        TaskOutcome::Completed(twenty_words())
    );

    // A tool step needs no approval: a tool-calls step, then "done".
    let (_, messages) = run_task(&client, &mut events, "tools-1").await?;
    assert_eq!(
        task_outcome(&messages),
        TaskOutcome::Completed("done".into())
    );
    assert!(
        messages.iter().any(|m| m["info"]["finish"] == "tool-calls"),
        "{messages:?}"
    );

    // A long task is busy until aborted; then MessageAbortedError, no status.
    let slow = model("tools-0-delay-30s");
    let session = client.create_session("slow task", &slow).await?;
    let prompt = TaskPrompt {
        text: "Take your time.",
        model: &slow,
        agent: Some("build"),
    };
    client.prompt_async(&session, &prompt).await?;
    let mut busy = false;
    for _ in 0..100 {
        if client.status().await?.get(&session) == Some(&SessionState::Busy) {
            busy = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(busy, "the slow task never showed busy");
    assert!(client.abort(&session).await?);
    wait_idle(&mut events, &session).await?;
    assert!(!client.status().await?.contains_key(&session));
    let messages = client.messages(&session).await?;
    assert_eq!(
        task_outcome(&messages),
        TaskOutcome::Aborted,
        "{messages:?}"
    );

    // An unknown model: 204, then session.error, and no assistant message.
    let nope = model("nope");
    let session = client.create_session("bad model", &nope).await?;
    let prompt = TaskPrompt {
        text: "Anything.",
        model: &nope,
        agent: None,
    };
    client.prompt_async(&session, &prompt).await?;
    let message = wait_event(&mut events, Duration::from_secs(30), |e| match e {
        OpencodeEvent::Error {
            session: Some(s),
            message,
            ..
        } if *s == session => Some(message.clone()),
        _ => None,
    })
    .await?;
    assert_eq!(message, "Model not found: mock/nope.");
    wait_idle(&mut events, &session).await?;
    assert_eq!(
        task_outcome(&client.messages(&session).await?),
        TaskOutcome::NoReply
    );

    // Unknown sessions are "not found".
    let err = client.messages("ses_nope").await.unwrap_err();
    assert!(matches!(err, OpencodeError::NotFound { .. }), "{err}");
    assert!(
        err.to_string().contains("Session not found: ses_nope"),
        "{err}"
    );

    // A wrong password is an authentication failure, not "down", and the
    // password shows nowhere.
    let wrong = Password::new("wrong-password-123");
    let bad = OpencodeClient::new(
        &server.base_url,
        Some(&wrong),
        None,
        AddressPolicy::AllowPrivate,
    )?;
    let err = bad
        .create_session("x", &model("tools-0"))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        OpencodeError::AuthenticationFailed {
            url: server.base_url.clone()
        }
    );
    let text = format!("{err} {err:?} {bad:?} {wrong:?}");
    assert!(text.contains("authentication failed"), "{text}");
    assert!(!text.contains("wrong-password-123"), "{text}");

    // Loopback is refused unless the policy allows private networks.
    let err = OpencodeClient::new(
        &server.base_url,
        Some(&password),
        None,
        AddressPolicy::PublicOnly,
    )
    .unwrap_err();
    assert!(matches!(err, OpencodeError::Blocked { .. }), "{err}");

    server.stop().await;
    Ok(())
}

#[tokio::test]
async fn a_closed_port_is_unreachable_within_the_connect_timeout() -> anyhow::Result<()> {
    let port = rtc_testkit::free_port()?;
    let url = format!("http://127.0.0.1:{port}");
    let password = Password::new("some-password");
    let client = OpencodeClient::new(&url, Some(&password), None, AddressPolicy::AllowPrivate)?;
    let started = std::time::Instant::now();
    let err = client
        .create_session("t", &model("tools-0"))
        .await
        .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(3));
    assert!(err.is_unreachable());
    assert_eq!(
        err.to_string(),
        format!("task backend \"opencode\" unreachable at {url}: connection refused")
    );
    Ok(())
}

/// The environment of a running process.
fn environ(pid: u32) -> Vec<String> {
    std::fs::read(format!("/proc/{pid}/environ"))
        .unwrap_or_default()
        .split(|b| *b == 0)
        .map(|v| String::from_utf8_lossy(v).into_owned())
        .collect()
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'))
    })
}

#[tokio::test]
async fn the_supervisor_starts_restarts_and_stops_its_server() -> anyhow::Result<()> {
    let Some(binary) = opencode_binary() else {
        return Ok(());
    };
    let llm = mock_llm().await?;
    let home = tempfile::tempdir()?;
    let mut config = opencode_test_config(&llm.base_url);
    config["share"] = "manual".into();
    let settings = SupervisorSettings {
        command: binary.display().to_string(),
        config,
        home: home.path().to_owned(),
        secrets: Vec::new(),
    };
    let server = SupervisedServer::start(settings.clone()).await?;
    let pid = server.pid().await.expect("running");

    // A cleared environment with the hermetic variables only.
    let env = environ(pid);
    let home_var = format!("HOME={}", home.path().display());
    assert!(env.contains(&home_var), "{env:?}");
    for flag in [
        "OPENCODE_DISABLE_MODELS_FETCH=1",
        "OPENCODE_DISABLE_AUTOUPDATE=1",
        "npm_config_registry=http://127.0.0.1:9/",
    ] {
        assert!(env.iter().any(|v| v == flag), "{flag} missing: {env:?}");
    }
    assert!(!env.iter().any(|v| v.starts_with("CARGO")), "{env:?}");
    let content = env
        .iter()
        .find_map(|v| v.strip_prefix("OPENCODE_CONFIG_CONTENT="))
        .expect("config");
    let content: Value = serde_json::from_str(content)?;
    assert_eq!(content["share"], "disabled");
    assert_eq!(content["autoupdate"], false);
    assert!(
        env.iter()
            .any(|v| v.starts_with("OPENCODE_SERVER_PASSWORD=") && v.len() > 40)
    );

    let client = server.client(None).await?;
    let hub = EventHub::new(server.client_unchecked(None)?);
    let mut events = hub.subscribe();
    connected(&mut events).await?;
    let (session, messages) = run_task(&client, &mut events, "tools-0").await?;
    assert_eq!(
        task_outcome(&messages),
        TaskOutcome::Completed("done".into())
    );

    // It died: the next client restarts it, on the same port and HOME (the
    // session survives), and the event stream reconnects by itself.
    std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()?;
    for _ in 0..50 {
        if !alive(pid) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let err = client.health(Duration::from_secs(1)).await.unwrap_err();
    assert!(err.is_unreachable(), "{err}");
    // (The kernel may report the death a moment after the port closed.)
    let mut restarted = pid;
    let mut client = server.client(None).await?;
    for _ in 0..50 {
        restarted = server.pid().await.expect("running");
        if restarted != pid {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        client = server.client(None).await?;
    }
    assert_ne!(restarted, pid, "not restarted");
    assert_eq!(
        task_outcome(&client.messages(&session).await?),
        TaskOutcome::Completed("done".into())
    );
    connected(&mut events).await?;
    let (_, messages) = run_task(&client, &mut events, "tools-0-words-20").await?;
    assert_eq!(
        task_outcome(&messages),
        TaskOutcome::Completed(twenty_words())
    );

    // A server left on this HOME (its platform process was killed) is
    // ended when a new one starts there.
    let successor = SupervisedServer::start(settings).await?;
    let mut ended = false;
    for _ in 0..50 {
        ended = !alive(restarted);
        if ended {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(ended, "the leftover server was ended");
    drop(server);

    // Stopped: SIGTERM, gone.
    let last = successor.pid().await.expect("running");
    successor.stop().await;
    assert!(!alive(last));
    Ok(())
}
