//! `rtc-agent chat` against a running server, its stdin piped: a terminal
//! conversation that shows tool calls, state changes, todos, goals, loops
//! and sub-agents; answers askUser by number, several numbers, "Other"
//! text or free text through the answers API; names client tools it
//! cannot run; ends the session on `/quit` and at the end of input; and
//! takes its key from `RTC_API_KEY`, never showing it.

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rtc_testkit::{Engine, MockLlm, MockReply};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStdin};

use crate::conversation::{assistant, server};
use crate::harness::{Api, Server, binary};

/// A running `rtc-agent chat` whose output is read as it comes.
struct Chat {
    child: Child,
    stdin: Option<ChildStdin>,
    out: Arc<Mutex<String>>,
}

impl Chat {
    /// `chat --assistant ID` with the workspace key in `RTC_API_KEY` only.
    fn start(srv: &Server, ws: &Api, id: &str, extra: &[&str]) -> anyhow::Result<Self> {
        let mut child = tokio::process::Command::new(binary())
            .args(["chat", "--assistant", id, "--url", &srv.process.base_url])
            .args(extra)
            .env("RTC_API_KEY", ws.token.clone().unwrap())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let mut stdout = child.stdout.take().unwrap();
        let out = Arc::new(Mutex::new(String::new()));
        let sink = out.clone();
        tokio::spawn(async move {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stdout.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        Ok(Self {
            stdin: child.stdin.take(),
            child,
            out,
        })
    }

    fn output(&self) -> String {
        self.out.lock().unwrap().clone()
    }

    /// Wait until the output holds every one of `texts`.
    async fn expect(&self, texts: &[&str]) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            let out = self.output();
            let missing: Vec<&&str> = texts.iter().filter(|t| !out.contains(**t)).collect();
            if missing.is_empty() {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{missing:?} missing from:\n{out}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    async fn send(&mut self, line: &str) -> anyhow::Result<()> {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(format!("{line}\n").as_bytes()).await?;
        stdin.flush().await?;
        Ok(())
    }

    /// The session's id, from the first line.
    fn session(&self) -> String {
        let out = self.output();
        out.strip_prefix("session ")
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or_else(|| panic!("no session line in:\n{out}"))
            .to_owned()
    }

    /// Close stdin (end of input), wait for a successful exit; the output.
    async fn finish(mut self) -> anyhow::Result<String> {
        drop(self.stdin.take());
        self.exited().await
    }

    /// Wait for a successful exit, stdin still open; the output.
    async fn exited(mut self) -> anyhow::Result<String> {
        let mut stderr = self.child.stderr.take().unwrap();
        let status = tokio::time::timeout(Duration::from_secs(20), self.child.wait()).await??;
        let mut err = String::new();
        stderr.read_to_string(&mut err).await?;
        // The reader has seen the end of stdout once the process is gone.
        tokio::time::sleep(Duration::from_millis(100)).await;
        let out = self.output();
        assert!(status.success(), "{out}\n{err}");
        Ok(out)
    }
}

/// The session's status, through the API.
async fn status(ws: &Api, session: &str) -> anyhow::Result<Value> {
    let s = ws.get(&format!("/v1/sessions/{session}")).await?;
    Ok(s.assert_status(200)["status"].clone())
}

fn question(q: &str, multi: bool) -> Value {
    json!({"question": q, "header": "Pick", "multiSelect": multi, "options": [
        {"label": "date-fns", "description": "Light, tree-shakable"},
        {"label": "dayjs", "description": "Moment-compatible, 2 KB"}]})
}

/// The tool result the model read for its last askUser call.
fn ask_result(mock: &MockLlm) -> String {
    let last = mock.requests().last().cloned().unwrap();
    last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "tool")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn terminal_conversation() -> anyhow::Result<()> {
    let mock = MockLlm::start(vec![
        MockReply::call("updateState", json!({})),
        MockReply::text("Hello from the assistant."),
        MockReply::call("endConversation", json!({"reason": "user left"})),
    ])
    .await?;
    let srv = server(Engine::Sqlite, &mock).await?.unwrap();
    let (_, ws) = srv.workspace("A").await?;
    let id = assistant(&ws, json!({"name": "T", "firstMessage": "Welcome, {{who}}!",
        "dynamicVariables": [{"name": "who", "type": "string"}, {"name": "greeted", "type": "boolean", "default": false}],
        "builtInTools": {"updateState": {"rules": [{"variable": "greeted", "expression": {"type": "constant", "value": true}}]},
                         "endConversation": {"messageType": "none", "captureReason": true}}})).await?;
    let mut chat = Chat::start(&srv, &ws, &id, &["--var", "who=Ann"])?;
    // Piped lines are taken one per turn: no waiting needed in between.
    chat.send("hi").await?;
    chat.send("bye").await?;
    // The model ends the session: the chat leaves without more input.
    let text = chat.exited().await?;
    for expected in [
        "assistant> Welcome, Ann!",
        "you> hi",
        "→ updateState",
        "state {\"greeted\":true}",
        "assistant> Hello from the assistant.",
        "→ endConversation",
        "[session ended: user left]",
    ] {
        assert!(
            text.contains(expected),
            "`{expected}` missing from:\n{text}"
        );
    }
    Ok(())
}

/// A question with options answered by number (after a refused one);
/// `/quit` ends the session. askUser is on without being configured.
#[tokio::test]
async fn ask_user_by_number_then_quit() -> anyhow::Result<()> {
    let mock = MockLlm::start(vec![
        MockReply::call(
            "askUser",
            json!({"questions": [question("Which library?", false)]}),
        ),
        MockReply::text("dayjs it is."),
    ])
    .await?;
    let srv = server(Engine::Sqlite, &mock).await?.unwrap();
    let (_, ws) = srv.workspace("A").await?;
    let id = assistant(&ws, json!({"name": "Helper", "systemPrompt": "Help."})).await?;
    let mut chat = Chat::start(&srv, &ws, &id, &[])?;
    chat.send("set up dates").await?;
    chat.expect(&[
        "? [Pick] Which library?\n  1. date-fns — Light, tree-shakable\n  2. dayjs — Moment-compatible, 2 KB\n  3. Other — type your own answer\n  (a number 1–3, or your own answer)",
        "answer> ",
    ])
    .await;
    chat.send("5").await?;
    chat.expect(&["5 is not one of the choices"]).await;
    let session = chat.session();
    let waiting = ws.get(&format!("/v1/sessions/{session}/question")).await?;
    assert_eq!(
        waiting.assert_status(200)["pending"]["questions"][0]["question"],
        "Which library?",
        "the question stays open"
    );
    chat.send("2").await?;
    chat.expect(&["answered: dayjs", "assistant> dayjs it is."])
        .await;
    assert!(ask_result(&mock).contains("dayjs"), "{}", ask_result(&mock));
    chat.send("/quit").await?;
    let text = chat.finish().await?;
    assert!(
        text.contains(&format!("[session {session} ended]")),
        "{text}"
    );
    assert_eq!(status(&ws, &session).await?, "ended");
    Ok(())
}

/// Two questions asked one by one ("Other" with its text, then several
/// numbers of a multi-select), then free text, then a sub-agent's
/// question; the end of input ends the session.
#[tokio::test]
async fn ask_user_other_multi_select_and_free_text() -> anyhow::Result<()> {
    let mock = MockLlm::start(vec![
        MockReply::call(
            "askUser",
            json!({"questions": [question("Which library?", false), question("Which formats?", true)]}),
        ),
        MockReply::text("Noted."),
        MockReply::call(
            "askUser",
            json!({"questions": [question("Tabs or spaces?", false)]}),
        ),
        MockReply::text("Fine."),
        MockReply::call(
            "subAgent",
            json!({"title": "Flight search", "instruction": "Find a flight to Lisbon.", "mode": "sync"}),
        ),
        MockReply::call(
            "askUser",
            json!({"questions": [{"question": "Which airline do you prefer?", "header": "Airline",
                "options": [{"label": "Lufthansa", "description": "Via Frankfurt"},
                            {"label": "TAP", "description": "Direct"}]}]}),
        ),
        MockReply::text("TAP, direct."),
        MockReply::text("Booked TAP."),
    ])
    .await?;
    let srv = server(Engine::Sqlite, &mock).await?.unwrap();
    let (_, ws) = srv.workspace("A").await?;
    let id = assistant(&ws, json!({"name": "Helper", "systemPrompt": "Help."})).await?;
    let mut chat = Chat::start(&srv, &ws, &id, &[])?;
    chat.send("dates").await?;
    chat.expect(&["? (1 of 2) [Pick] Which library?"]).await;
    chat.send("3").await?;
    chat.expect(&["answer> 3\nyour answer> "]).await;
    chat.send("luxon").await?;
    chat.expect(&[
        "? (2 of 2) [Pick] Which formats?",
        "(one or more numbers, like 1,3 — or your own answer)",
    ])
    .await;
    chat.send("2, 1").await?;
    chat.expect(&["answered: luxon · dayjs, date-fns", "assistant> Noted."])
        .await;
    chat.send("style").await?;
    chat.expect(&["[Pick] Tabs or spaces?"]).await;
    chat.send("tabs, obviously").await?;
    chat.expect(&["answered: tabs, obviously", "assistant> Fine."])
        .await;
    // A sub-agent's question reaches this user while the parent waits.
    chat.send("book a flight").await?;
    chat.expect(&["? [sub-agent \"Flight search\" asks] [Airline] Which airline do you prefer?"])
        .await;
    chat.send("2").await?;
    chat.expect(&[
        "sub-agent \"Flight search\" completed: TAP, direct.",
        "assistant> Booked TAP.",
    ])
    .await;
    let session = chat.session();
    let text = chat.finish().await?;
    assert!(
        text.contains(&format!("[session {session} ended]")),
        "{text}"
    );
    assert_eq!(status(&ws, &session).await?, "ended");
    Ok(())
}

fn judge(satisfied: bool) -> MockReply {
    MockReply::text(
        &json!({"satisfied": satisfied, "reason": if satisfied { "done" } else { "not yet" }})
            .to_string(),
    )
}

/// The todo list, a goal driving turns, a loop's tick and a sub-agent's
/// start and report show as they arrive.
#[tokio::test]
async fn todos_goals_loops_and_sub_agents() -> anyhow::Result<()> {
    let mock = MockLlm::start(vec![
        MockReply::call("todoWrite", json!({"todos": [
            {"content": "Pick a date library", "status": "in_progress", "active_form": "Picking a library"},
            {"content": "Write the code", "status": "pending"}]})),
        MockReply::text("Planned."),
        MockReply::call(
            "createGoal",
            json!({"condition": "three laptops compared", "max_turns": 3}),
        ),
        MockReply::text("Working on it."),
        judge(false),
        MockReply::text("Laptops compared."),
        judge(true),
        MockReply::call(
            "createLoop",
            json!({"prompt": "check the build", "interval_seconds": 1, "max_turns": 1}),
        ),
        MockReply::text("Watching."),
        MockReply::text("Build is green."),
        MockReply::call(
            "subAgent",
            json!({"title": "Flight search", "instruction": "Find a morning flight to Lisbon.", "mode": "sync"}),
        ),
        MockReply::text("TAP at 8:05."),
        MockReply::text("Your flight leaves at 8:05."),
    ])
    .await?;
    let srv = server(Engine::Sqlite, &mock).await?.unwrap();
    let (_, ws) = srv.workspace("A").await?;
    let id = assistant(&ws, json!({"name": "Planner", "systemPrompt": "Plan."})).await?;
    let mut chat = Chat::start(&srv, &ws, &id, &[])?;
    chat.send("plan it").await?;
    chat.expect(&[
        "  todos (0/2 done):\n    [>] Pick a date library (Picking a library)\n    [ ] Write the code",
        "assistant> Planned.",
    ])
    .await;
    // The goal's turns run before the next line is read.
    chat.send("compare three laptops").await?;
    chat.send("watch the build").await?;
    chat.expect(&[
        "goal active: three laptops compared (0/3 turns)",
        "↻ the goal continues",
        "assistant> Laptops compared.",
        "goal completed: three laptops compared (2/3 turns) — done",
        "loop active: \"check the build\" every 1 s (0/1 turns)",
        "↻ loop tick",
        "assistant> Build is green.",
        "loop exhausted",
    ])
    .await;
    let out = chat.output();
    let (goal_done, loop_asked) = (
        out.find("goal completed").unwrap(),
        out.find("you> watch the build").unwrap(),
    );
    assert!(goal_done < loop_asked, "{out}");
    chat.send("find a flight").await?;
    chat.expect(&[
        "you> find a flight",
        "sub-agent \"Flight search\" started (sync)",
        "sub-agent \"Flight search\" completed: TAP at 8:05.",
        "assistant> Your flight leaves at 8:05.",
    ])
    .await;
    chat.send("/quit").await?;
    chat.finish().await?;
    Ok(())
}

/// Client tools only an app can run are named at the start, and a call to
/// one says so instead of waiting; Ctrl-C ends the session.
#[tokio::test]
async fn client_tools_are_named_and_ctrl_c_ends() -> anyhow::Result<()> {
    let mock = MockLlm::start(vec![
        MockReply::call("show_map", json!({"city": "Lisbon"})),
        MockReply::text("I cannot show the map here."),
    ])
    .await?;
    let srv = server(Engine::Sqlite, &mock).await?.unwrap();
    let (_, ws) = srv.workspace("A").await?;
    let tool = ws
        .create(
            "/v1/tools",
            json!({"name": "show_map", "type": "client", "description": "Shows a map in the app.",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
                "client": {"functionName": "show_map"}}),
        )
        .await?;
    let id = assistant(
        &ws,
        json!({"name": "Maps", "systemPrompt": "Map.",
            "toolBindings": [{"toolId": tool["id"], "argumentBindings": {"city": {"source": "model"}}}]}),
    )
    .await?;
    let mut chat = Chat::start(&srv, &ws, &id, &[])?;
    chat.send("show me Lisbon").await?;
    chat.expect(&[
        "note: this assistant's client tools (show_map) run only in an app connected over the WebSocket",
        "✗ show_map: a client tool — only an app connected over the WebSocket can run it",
        "assistant> I cannot show the map here.",
        "you> ",
    ])
    .await;
    // Ctrl-C at the prompt ends the session too.
    let session = chat.session();
    let pid = chat.child.id().unwrap().to_string();
    let kill = tokio::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .await?;
    assert!(kill.success());
    let text = chat.exited().await?;
    assert!(
        text.contains(&format!("[session {session} ended]")),
        "{text}"
    );
    assert_eq!(status(&ws, &session).await?, "ended");
    Ok(())
}

/// The key is read from `RTC_API_KEY`; `--help` names the variable but
/// never shows its value.
#[tokio::test]
async fn the_key_comes_from_the_environment() -> anyhow::Result<()> {
    let help = tokio::process::Command::new(binary())
        .args(["chat", "--help"])
        .env("RTC_API_KEY", "canary-key-4711")
        .output()
        .await?;
    let text = String::from_utf8_lossy(&help.stdout);
    assert!(help.status.success(), "{text}");
    assert!(text.contains("RTC_API_KEY"), "{text}");
    assert!(!text.contains("canary-key-4711"), "{text}");
    let refused = tokio::process::Command::new(binary())
        .args(["chat", "--assistant", "a", "--url", "http://127.0.0.1:9"])
        .env_remove("RTC_API_KEY")
        .stdin(Stdio::null())
        .output()
        .await?;
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success());
    assert!(err.contains("--key"), "{err}");
    Ok(())
}
