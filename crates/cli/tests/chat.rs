//! `rtc-agent chat` against a running server: a terminal conversation that
//! shows tool calls, state changes and the end of the session.

use std::process::Stdio;
use std::time::Duration;

use rtc_testkit::{Engine, MockLlm, MockReply};
use serde_json::json;
use tokio::io::AsyncWriteExt;

use crate::conversation::{assistant, server};
use crate::harness::binary;

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
    let mut child = tokio::process::Command::new(binary())
        .args([
            "chat",
            "--assistant",
            &id,
            "--url",
            &srv.process.base_url,
            "--var",
            "who=Ann",
        ])
        .env("RTC_API_KEY", ws.token.clone().unwrap())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"hi\n").await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    stdin.write_all(b"bye\n").await?;
    drop(stdin);
    let output = tokio::time::timeout(Duration::from_secs(20), child.wait_with_output()).await??;
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    for expected in [
        "assistant> Welcome, Ann!",
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
