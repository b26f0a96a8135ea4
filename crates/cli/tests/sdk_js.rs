//! The host SDK (`sdk/js`): its own Node tests, the files the binary
//! serves at `/sdk/`, its version (the server's), and the SDK against the
//! real binary (`sdk/js/e2e/host.mjs`): client tools, resume after a
//! dropped connection, askUser answers.

use std::time::Duration;

use rtc_testkit::{Engine, MockLlm, MockReply};
use serde_json::{Value, json};

use crate::conversation::server;

fn sdk_dir() -> std::path::PathBuf {
    rtc_testkit::repo_root().join("sdk/js")
}

async fn node(args: &[&str], env: &[(&str, String)]) -> anyhow::Result<String> {
    let run = tokio::process::Command::new("node")
        .args(args)
        .current_dir(sdk_dir())
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(90), run).await??;
    anyhow::ensure!(
        out.status.success(),
        "node {args:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[tokio::test]
async fn the_sdks_own_tests_pass() -> anyhow::Result<()> {
    let out = node(&["--test", "test/"], &[]).await?;
    assert!(
        out.contains("# fail 0") && !out.contains("# pass 0"),
        "{out}"
    );
    Ok(())
}

/// Node 20 has a WebSocket only behind a flag; later versions have it.
fn websocket_flag() -> Vec<&'static str> {
    let version = std::process::Command::new("node").arg("--version").output();
    let major: u32 = version
        .ok()
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .trim_start_matches('v')
                .split('.')
                .next()
                .and_then(|m| m.parse().ok())
        })
        .unwrap_or(22);
    if major < 22 {
        vec!["--experimental-websocket"]
    } else {
        vec![]
    }
}

fn replies(req: &Value) -> MockReply {
    let messages = req["messages"].as_array().cloned().unwrap_or_default();
    let last = messages.last().cloned().unwrap_or_default();
    let last_user = messages
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .map(|m| m["content"].clone());
    match (
        last["role"].as_str(),
        last_user.as_ref().and_then(Value::as_str),
    ) {
        (Some("user"), Some("first")) => MockReply::call("show_card", json!({"title": "A"})),
        (Some("user"), Some("second")) => MockReply::call(
            "askUser",
            json!({"questions": [{"question": "Proceed?", "header": "Go",
            "options": [{"label": "Yes", "description": "go on"}, {"label": "No", "description": "stop"}]}]}),
        ),
        (Some("tool"), Some("second")) => MockReply::text("ok then"),
        _ => MockReply::text("shown"),
    }
}

#[tokio::test]
async fn the_sdk_drives_a_real_session() -> anyhow::Result<()> {
    let mock = MockLlm::with_recorded_responder(replies).await?;
    let Some(srv) = server(Engine::Sqlite, &mock).await? else {
        return Ok(());
    };
    // The served SDK is the repository's, at the server's version.
    let js = srv
        .client
        .get(format!("{}/sdk/rtc-agent.js", srv.process.base_url))
        .send()
        .await?;
    assert!(
        js.headers()["content-type"]
            .to_str()?
            .starts_with("text/javascript")
    );
    assert_eq!(
        js.text().await?,
        std::fs::read_to_string(sdk_dir().join("rtc-agent.js"))?
    );
    let types = srv
        .client
        .get(format!("{}/sdk/rtc-agent.d.ts", srv.process.base_url))
        .send()
        .await?;
    assert_eq!(
        types.text().await?,
        std::fs::read_to_string(sdk_dir().join("rtc-agent.d.ts"))?
    );
    let package: Value =
        serde_json::from_str(&std::fs::read_to_string(sdk_dir().join("package.json"))?)?;
    assert_eq!(
        package["version"],
        env!("CARGO_PKG_VERSION"),
        "the SDK's version is the server's"
    );

    let (_, ws) = srv.workspace("Sdk").await?;
    let schema = json!({"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]});
    let tool = ws
        .create(
            "/v1/tools",
            json!({"name": "show_card", "type": "client", "parameters": schema,
            "client": {"functionName": "showCard"}}),
        )
        .await?;
    let asst = ws
        .create("/v1/assistants", json!({"name": "Host", "toolBindings": [{"toolId": tool["id"], "argumentBindings": {"title": {"source": "model"}}}]}))
        .await?;
    let s = ws
        .create("/v1/sessions", json!({"assistantId": asst["id"]}))
        .await?;
    let mut args = websocket_flag();
    args.push("e2e/host.mjs");
    let out = node(
        &args,
        &[
            ("BASE_URL", srv.process.base_url.clone()),
            (
                "SESSION_ID",
                s["id"].as_str().unwrap_or_default().to_owned(),
            ),
            (
                "TOKEN",
                s["clientToken"].as_str().unwrap_or_default().to_owned(),
            ),
            ("SCHEMA", schema.to_string()),
        ],
    )
    .await?;
    assert!(out.contains("sdk e2e: passed"), "{out}");
    Ok(())
}

/// A preflight from `origin` for a host page's `POST …/messages`.
async fn preflight(srv: &crate::harness::Server, origin: &str) -> anyhow::Result<Option<String>> {
    let resp = srv
        .client
        .request(
            reqwest::Method::OPTIONS,
            format!("{}/v1/sessions/sess_x/messages", srv.process.base_url),
        )
        .header("Origin", origin)
        .header("Access-Control-Request-Method", "POST")
        .header(
            "Access-Control-Request-Headers",
            "authorization,content-type",
        )
        .send()
        .await?;
    Ok(resp
        .headers()
        .get("access-control-allow-origin")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned))
}

#[tokio::test]
async fn host_pages_of_the_configured_origins_may_call_the_api() -> anyhow::Result<()> {
    let env = std::collections::HashMap::from([(
        "RTC_CORS_ORIGINS".to_owned(),
        "https://shop.example, http://localhost:3000".to_owned(),
    )]);
    let srv = crate::harness::start(Engine::Sqlite, env).await?.unwrap();
    assert_eq!(
        preflight(&srv, "https://shop.example").await?.as_deref(),
        Some("https://shop.example")
    );
    assert_eq!(
        preflight(&srv, "http://localhost:3000").await?.as_deref(),
        Some("http://localhost:3000")
    );
    assert_eq!(preflight(&srv, "https://evil.example").await?, None);
    let plain = crate::harness::start(Engine::Sqlite, Default::default())
        .await?
        .unwrap();
    assert_eq!(
        preflight(&plain, "https://shop.example").await?,
        None,
        "none unless configured"
    );
    Ok(())
}
