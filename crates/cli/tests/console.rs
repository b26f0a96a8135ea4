//! The web console in a real browser (R-API-8): `console/console.spec.mjs`
//! drives Debian's Chromium through playwright-core against the real binary
//! and the scripted model — forms with a validation error at its field, a
//! compatibility problem cleaned up, a playground chat with a tool card, a
//! todo list and an askUser question answered with chips. Screenshots land
//! in `target/test-output/console/`.

use std::collections::HashMap;
use std::time::Duration;

use rtc_testkit::{Engine, MockLlm, MockReply};
use serde_json::{Value, json};

use crate::harness::start;

/// The Support assistant's conversation, by how many answers it has given.
fn script(req: &Value) -> MockReply {
    let msgs = req["messages"].as_array().cloned().unwrap_or_default();
    let answers = msgs.iter().filter(|m| m["role"] == "assistant").count();
    let todo = |first: &str, second: &str| {
        MockReply::call(
            "todoWrite",
            json!({"todos": [
                {"content": "Check the service", "status": first, "active_form": "Checking the service"},
                {"content": "Report the result", "status": second, "active_form": "Reporting"}]}),
        )
    };
    match answers {
        0 => todo("in_progress", "pending"),
        1 => MockReply::call("check_health", json!({})),
        2 => MockReply::call(
            "askUser",
            json!({"questions": [{"question": "Which report format do you want?", "header": "Format",
                "options": [{"label": "Short", "description": "One line"},
                            {"label": "Detailed", "description": "Every check"}]}]}),
        ),
        3 => todo("completed", "completed"),
        _ => MockReply::text("The service is healthy. Detailed report: all checks passed."),
    }
}

#[tokio::test]
async fn console_in_a_real_browser() -> anyhow::Result<()> {
    let mock = MockLlm::with_recorded_responder(script).await?;
    let env = HashMap::from([
        ("RTC_LLM_BASE_URL".to_owned(), mock.base_url.clone()),
        ("RTC_ALLOW_PRIVATE_NETWORK".to_owned(), "1".to_owned()),
    ]);
    let Some(srv) = start(Engine::Sqlite, env).await? else {
        return Ok(());
    };
    let (_, ws) = srv.workspace("Console").await?;
    let root = rtc_testkit::repo_root();
    let out_dir = root.join("target/test-output/console");
    let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    anyhow::ensure!(
        std::path::Path::new(&chromium).exists(),
        "Chromium is needed for the console test: apt-get install chromium (or set CHROMIUM)"
    );
    let run = tokio::process::Command::new("node")
        .arg(root.join("crates/cli/tests/console/console.spec.mjs"))
        .current_dir(&root)
        .env("BASE_URL", &srv.process.base_url)
        .env("API_KEY", ws.token.as_deref().unwrap_or_default())
        .env("OUT_DIR", &out_dir)
        .env("CHROMIUM", &chromium)
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(180), run).await??;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the browser flows failed (screenshots in {}):\n{stdout}\n{stderr}",
        out_dir.display()
    );

    // What the forms saved is what the API holds.
    let tools = ws.get("/v1/tools").await?;
    let tool = &tools.assert_status(200)["data"][0];
    assert_eq!(
        (
            tool["name"].as_str(),
            tool["type"].as_str(),
            tool["http"]["method"].as_str()
        ),
        (Some("check_health"), Some("http"), Some("GET"))
    );
    let assistants = ws.get("/v1/assistants").await?;
    let list = assistants.assert_status(200)["data"]
        .as_array()
        .unwrap()
        .clone();
    let support = list.iter().find(|a| a["name"] == "Support").unwrap();
    assert_eq!(support["features"]["askUser"], true);
    assert_eq!(support["toolBindings"][0]["toolId"], tool["id"]);
    assert_eq!(support["dynamicVariables"][0]["default"], "Acme");
    let voice = list.iter().find(|a| a["name"] == "Voice").unwrap();
    assert_eq!(
        voice["toolBindings"],
        json!([]),
        "cleaned up in the console"
    );
    // The model read the answer given with a chip.
    let answered = mock.requests().iter().any(|r| {
        r["messages"].as_array().is_some_and(|m| {
            m.iter().any(|m| {
                m["role"] == "tool"
                    && m["content"].as_str().is_some_and(|c| {
                        c.contains("\"Which report format do you want?\"=\"Detailed\"")
                    })
            })
        })
    });
    assert!(answered, "the chip's answer reached the model");
    Ok(())
}
