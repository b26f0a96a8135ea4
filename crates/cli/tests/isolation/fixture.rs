//! What workspace A owns for the isolation campaign (one of everything the
//! API has, interaction resources made by a scripted model), and B's own
//! assistant and session.

use std::collections::BTreeMap;
use std::time::Duration;

use rtc_testkit::MockReply;
use serde_json::{Value, json};

use super::echo::Echo;
use crate::conversation::events_until;
use crate::harness::{Api, Server};
/// What A owns: ids per path segment, and texts only A's data holds.
pub(super) struct Fixture {
    pub(super) a: Api,
    pub(super) b: Api,
    pub(super) ids: BTreeMap<String, Vec<String>>,
    pub(super) markers: Vec<String>,
    /// The end user of A's sessions (memories are per user).
    pub(super) user: String,
    /// B's own session (for the client token and mixed-id probes).
    pub(super) b_session: String,
    pub(super) client_token: String,
}

impl Fixture {
    pub(super) fn all_ids(&self) -> impl Iterator<Item = &String> {
        self.ids.values().flatten()
    }

    /// The first text of A found in `text`, ids included or not.
    pub(super) fn holds_a(&self, text: &str, with_ids: bool) -> Option<String> {
        let ids: Vec<&String> = if with_ids {
            self.all_ids().collect()
        } else {
            Vec::new()
        };
        self.markers
            .iter()
            .chain(ids)
            .find(|m| text.contains(m.as_str()))
            .cloned()
    }
}

pub(super) fn judge_no() -> MockReply {
    MockReply::text(&json!({"satisfied": false, "reason": "not yet"}).to_string())
}

/// The system prompt of A's reasoner backend.
const REASONER_PROMPT: &str = "a-only-reasoner-marker";

/// The model of A's sessions: the first session's setup message makes one
/// of each interaction resource (and, later, delegates a task to A's
/// reasoner, which answers at once), the second one asks a question; judge
/// calls keep the goal going until it is exhausted; anything else is "ok".
pub(super) fn model(req: &Value) -> MockReply {
    if req.get("response_format").is_some() {
        return judge_no();
    }
    let first = req["messages"]
        .as_array()
        .and_then(|m| m.first())
        .cloned()
        .unwrap_or_default();
    if first["content"] == REASONER_PROMPT {
        return MockReply::text("a-only task result marker");
    }
    let last = req["messages"]
        .as_array()
        .and_then(|m| m.last())
        .cloned()
        .unwrap_or_default();
    let said =
        |t: &str| last["role"] == "user" && last["content"].as_str().is_some_and(|c| c.contains(t));
    if said("setup-one") {
        MockReply::ToolCalls(vec![
            (
                "todoWrite".into(),
                json!({"todos": [{"content": "a-only todo marker", "status": "pending"}]}),
            ),
            (
                "saveMemory".into(),
                json!({"content": "a-only memory marker"}),
            ),
            (
                "createGoal".into(),
                json!({"condition": "a-only goal marker", "max_turns": 1}),
            ),
            (
                "createLoop".into(),
                json!({"prompt": "a-only loop marker", "interval_seconds": 7 * 24 * 3600, "max_turns": 2}),
            ),
        ])
    } else if said("setup-three") {
        MockReply::call(
            "delegate_task",
            json!({"title": "a-only task marker", "instruction": "a-only instruction marker"}),
        )
    } else if said("setup-two") {
        MockReply::call(
            "askUser",
            json!({"questions": [{"question": "a-only question marker?", "header": "Pick", "multiSelect": false,
            "options": [{"label": "one", "description": "first"}, {"label": "two", "description": "second"}]}]}),
        )
    } else {
        MockReply::text("ok")
    }
}

pub(super) async fn until<F, Fut>(what: &str, mut done: F) -> anyhow::Result<()>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<bool>>,
{
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !done().await? {
        anyhow::ensure!(std::time::Instant::now() < deadline, "{what} within 20 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}

pub(super) fn id(v: &Value) -> String {
    v["id"].as_str().unwrap_or_default().to_owned()
}

/// One of everything in A; B with an assistant and a session of its own.
pub(super) async fn fixture(srv: &Server, echo: &Echo) -> anyhow::Result<Fixture> {
    let (ws_a, a) = srv.workspace("A-only workspace").await?;
    let (_, b) = srv.workspace("B").await?;
    a.put(
        "/v1/secrets/secret__a_only",
        json!({"value": "a-only-secret-value"}),
    )
    .await?
    .assert_status(201);
    let mcp = a
        .create("/v1/mcp-servers", json!({"name": "a-only-mcp", "transport": {"type": "streamableHttp", "url": format!("{}/mcp", echo.base), "headers": {"Authorization": "Bearer {{secret__a_only}}"}}}))
        .await?;
    let http = a
        .create("/v1/tools", json!({"id": "tool-chosen-by-a", "name": "a_only_http", "type": "http", "http": {"method": "GET", "url": format!("{}/echo", echo.base), "headers": {"X-Key": "{{secret__a_only}}"}}}))
        .await?;
    let mcp_tool = a
        .create("/v1/tools", json!({"name": "a_only_mcp", "type": "mcp", "mcp": {"serverId": id(&mcp), "remoteToolName": "echo_headers"}}))
        .await?;
    let client = a
        .create("/v1/tools", json!({"name": "a_only_client", "type": "client", "client": {"functionName": "aOnlyFn"}}))
        .await?;
    let iface = a
        .create("/v1/realtime-interfaces", json!({"name": "a-only-iface"}))
        .await?;
    let speech = a
        .create("/v1/speech-interfaces", json!({"name": "a-only-speech", "kind": "tts",
            "connection": {"dialect": "openai", "url": "https://api.openai.com/v1", "model": "tts-1",
                "voice": "alloy", "apiKey": "{{secret__a_only}}"}}))
        .await?;
    let reasoner = a
        .create("/v1/task-backends", json!({"name": "a-only-reasoner", "type": "reasoner",
            "reasoner": {"systemPrompt": REASONER_PROMPT, "toolBindings": [{"toolId": id(&http)}]}}))
        .await?;
    let opencode = a
        .create("/v1/task-backends", json!({"name": "a-only-opencode", "type": "opencode",
            "opencode": {"baseUrl": "http://127.0.0.1:9", "password": "{{secret__a_only}}", "model": {"providerID": "mock", "modelID": "tools-0"}}}))
        .await?;
    let asst = a
        .create("/v1/assistants", json!({"name": "A-only assistant", "systemPrompt": "a-only-prompt-marker",
            "taskBackendId": id(&reasoner),
            "toolBindings": [{"toolId": id(&http)}, {"toolId": id(&mcp_tool), "argumentBindings": {"mode": {"source": "model"}}}, {"toolId": id(&client)}]}))
        .await?;
    let workflow = a
        .create("/v1/workflows", json!({"specVersion": 4, "name": "A-only workflow", "startNodeId": "greet",
            "systemPrompt": "a-only-workflow-marker",
            "nodes": [{"id": "greet", "type": "agent", "prompt": "Hello"},
                {"id": "lookup", "type": "action", "binding": {"toolId": id(&http)}},
                {"id": "handover", "type": "transfer", "target": {"type": "assistant", "assistantId": id(&asst)}}],
            "edges": [{"id": "go", "from": "greet", "to": "lookup", "condition": {"type": "llm", "condition": "The user wants it"}},
                {"id": "next", "from": "lookup", "to": "handover", "condition": {"type": "always"}}]}))
        .await?;
    let user = format!("a-only-user-{}", ws_a);
    let s1 = a
        .create(
            "/v1/sessions",
            json!({"assistantId": id(&asst), "userId": user}),
        )
        .await?;
    let s2 = a
        .create(
            "/v1/sessions",
            json!({"assistantId": id(&asst), "userId": user}),
        )
        .await?;
    let (sid1, sid2) = (id(&s1), id(&s2));
    a.post(
        &format!("/v1/sessions/{sid1}/messages"),
        json!({"text": "setup-one"}),
    )
    .await?
    .assert_status(202);
    let goals = format!("/v1/sessions/{sid1}/goals");
    let loops = format!("/v1/sessions/{sid1}/loops");
    let (api, goals_path, loops_path) = (&a, &goals, &loops);
    until("A's goal is exhausted and the loop exists", || async move {
        let g = api.get(goals_path).await?.body;
        let l = api.get(loops_path).await?.body;
        Ok(g["data"][0]["status"]
            .as_str()
            .is_some_and(|s| s != "active")
            && l["data"][0].is_object())
    })
    .await?;
    // A task, delegated and reported back (the report's turn ended, so
    // nothing of A changes while B probes).
    a.post(
        &format!("/v1/sessions/{sid1}/messages"),
        json!({"text": "setup-three"}),
    )
    .await?
    .assert_status(202);
    let token1 = s1["clientToken"].as_str().unwrap_or_default();
    let reported = std::cell::Cell::new(false);
    events_until(srv, token1, &sid1, 0, |e| {
        if e["type"] == "message.completed"
            && e["content"]
                .as_str()
                .is_some_and(|c| c.starts_with("[Task report]"))
        {
            reported.set(true);
        }
        reported.get() && e["type"] == "turn.completed"
    })
    .await?;
    let tasks = a.get(&format!("/v1/sessions/{sid1}/tasks")).await?;
    let task = &tasks.assert_status(200)["data"][0];
    anyhow::ensure!(task["status"] == "completed", "A's task: {task}");
    let task = id(task);
    a.post(
        &format!("/v1/sessions/{sid2}/messages"),
        json!({"text": "setup-two"}),
    )
    .await?
    .assert_status(202);
    let token2 = s2["clientToken"].as_str().unwrap_or_default();
    events_until(srv, token2, &sid2, 0, |e| e["type"] == "ask_user.question").await?;
    let goal = id(&a.get(&goals).await?.body["data"][0]);
    let memories = a.get(&format!("/v1/memories?userId={user}")).await?;
    let memory = id(&memories.assert_status(200)["data"][0]);
    anyhow::ensure!(
        !memory.is_empty() && !goal.is_empty(),
        "A has a memory and a goal"
    );

    // A conversation test of each family, and a run of the assistant's.
    let test_body = json!({"name": "a-only test marker", "turns": ["a-only test turn marker"], "timeoutSeconds": 20});
    let asst_test = id(&a
        .create(
            &format!("/v1/assistants/{}/tests", id(&asst)),
            test_body.clone(),
        )
        .await?);
    let wf_test = id(&a
        .create(&format!("/v1/workflows/{}/tests", id(&workflow)), test_body)
        .await?);
    let asst_tests = format!("/v1/assistants/{}/tests", id(&asst));
    let started = a
        .post(&format!("{asst_tests}/{asst_test}/run"), json!({}))
        .await?;
    let suite =
        crate::test_mode::until_finished(&a, &asst_tests, started.assert_status(202)).await?;
    let (suite_run, run) = (id(&suite), id(&suite["runs"][0]));

    let b_asst = b
        .create("/v1/assistants", json!({"name": "b-asst"}))
        .await?;
    let b_session = id(&b
        .create("/v1/sessions", json!({"assistantId": id(&b_asst)}))
        .await?);

    let ids = BTreeMap::from([
        ("workspaces".to_owned(), vec![ws_a.clone()]),
        ("secrets".to_owned(), vec!["secret__a_only".to_owned()]),
        ("mcp-servers".to_owned(), vec![id(&mcp)]),
        (
            "tools".to_owned(),
            vec![id(&http), id(&mcp_tool), id(&client)],
        ),
        ("realtime-interfaces".to_owned(), vec![id(&iface)]),
        ("speech-interfaces".to_owned(), vec![id(&speech)]),
        (
            "task-backends".to_owned(),
            vec![id(&reasoner), id(&opencode)],
        ),
        ("assistants".to_owned(), vec![id(&asst)]),
        ("workflows".to_owned(), vec![id(&workflow)]),
        ("sessions".to_owned(), vec![sid1, sid2]),
        ("goals".to_owned(), vec![goal]),
        ("tasks".to_owned(), vec![task]),
        ("memories".to_owned(), vec![memory]),
        ("tests".to_owned(), vec![asst_test, wf_test]),
        ("runs".to_owned(), vec![run, suite_run]),
    ]);
    let markers = [
        "A-only",
        "a-only-mcp",
        "a_only_http",
        "a_only_mcp",
        "a_only_client",
        "aOnlyFn",
        "a-only-iface",
        "a-only-speech",
        "a-only-reasoner",
        "a-only-opencode",
        "a-only-prompt-marker",
        "a-only-workflow-marker",
        "a-only todo marker",
        "a-only memory marker",
        "a-only goal marker",
        "a-only loop marker",
        "a-only question marker",
        "setup-one",
        "setup-two",
        "setup-three",
        "a-only task marker",
        "a-only instruction marker",
        "a-only task result marker",
        "a-only-secret-value",
        "a-only test marker",
        "a-only test turn marker",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .chain([user.clone()])
    .collect();
    Ok(Fixture {
        a,
        b,
        ids,
        markers,
        user,
        b_session,
        client_token: s1["clientToken"].as_str().unwrap_or_default().to_owned(),
    })
}
