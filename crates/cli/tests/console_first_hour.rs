//! The console's first hour in a real browser (issue 39, point 3), the
//! scenarios in `console/first_hour.spec.mjs`: no nav before sign-in, the
//! admin's Open that opens, the one-time key copied, the nav on one line
//! at 1,440 px; a picked MCP tool's name and description, edge ids that
//! follow their endpoints, an answered client tool still answered after a
//! reload, values without JSON quotes, web built-ins the server does not
//! offer, End, the sessions list by name with filters, the event log's
//! grouped deltas and provider/model picked from the server's providers.
//! What the forms saved is checked here through the API. And
//! `console/first_hour_tools.spec.mjs`: a tool's Test panel and the
//! warnings a save answers with (a private address the server refuses).

use std::collections::HashMap;
use std::time::Duration;

use rtc_testkit::{Engine, McpHttpServer, MockLlm, MockReply, OrderService};
use serde_json::{Value, json};

use crate::console::run_scenario;
use crate::harness::start;

/// A reply of many streamed pieces, one of them a long unbroken URL.
fn story() -> String {
    let words = "Once upon a time a small team shipped an agent platform and the first user read every event of it ".repeat(3);
    format!("{words}see https://example.com/{}", "a".repeat(400))
}

/// The Maps assistant's conversations, keyed by the user's last message.
fn script(req: &Value) -> MockReply {
    let msgs = req["messages"].as_array().cloned().unwrap_or_default();
    let last_user = msgs.iter().rposition(|m| m["role"] == "user").unwrap_or(0);
    let text = msgs
        .get(last_user)
        .and_then(|m| m["content"].as_str())
        .unwrap_or("");
    let after = msgs
        .iter()
        .skip(last_user)
        .filter(|m| m["role"] == "assistant")
        .count();
    match (text, after) {
        ("show the map", 0) => MockReply::call("show_map", json!({"city": "Lisbon"})),
        ("show the map", _) => MockReply::text("Map shown."),
        ("tell me a long story", _) => MockReply::text(&story()),
        _ => MockReply::text("ok"),
    }
}

#[tokio::test]
async fn console_first_hour_in_a_real_browser() -> anyhow::Result<()> {
    let mock = MockLlm::with_recorded_responder(script).await?;
    let dir = tempfile::tempdir()?;
    let config = dir.path().join("rtc-agent.toml");
    std::fs::write(
        &config,
        format!(
            "[providers.backup]\nbase_url = \"{}\"\nmodel = \"backup-model\"\nsmall_model = \"backup-small\"\n",
            mock.base_url
        ),
    )?;
    // webFetch configured, webSearch not.
    let env = HashMap::from([
        ("RTC_LLM_BASE_URL".to_owned(), mock.base_url.clone()),
        ("RTC_LLM_MODEL".to_owned(), "mock-model".to_owned()),
        ("RTC_ALLOW_PRIVATE_NETWORK".to_owned(), "1".to_owned()),
        ("RTC_WEB_FETCH".to_owned(), "1".to_owned()),
        ("RTC_CONFIG".to_owned(), config.display().to_string()),
    ]);
    let Some(srv) = start(Engine::Sqlite, env).await? else {
        return Ok(());
    };
    let mcp = McpHttpServer::start().await?;
    let (_, ws) = srv.workspace("First hour").await?;
    let map = ws
        .create(
            "/v1/tools",
            json!({"name": "show_map", "type": "client", "description": "Shows a map in the app.",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
                "client": {"functionName": "show_map", "waitForResponse": true, "timeoutMs": 60000}}),
        )
        .await?;
    let maps = ws
        .create(
            "/v1/assistants",
            json!({"name": "Maps", "systemPrompt": "Show maps.", "features": {"webSearch": false},
                "dynamicVariables": [{"name": "nickname", "type": "string", "default": "friend"}],
                "toolBindings": [{"toolId": map["id"], "argumentBindings": {"city": {"source": "model"}}}]}),
        )
        .await?;
    ws.create(
        "/v1/mcp-servers",
        json!({"name": "everything", "transport": {"type": "streamableHttp", "url": mcp.url}}),
    )
    .await?;
    let routing = ws
        .create(
            "/v1/workflows",
            json!({"name": "Routing", "specVersion": 4, "systemPrompt": "Route.", "startNodeId": "greet",
                "nodes": [{"id": "greet", "type": "agent", "prompt": "Greet."},
                          {"id": "lookup", "type": "agent", "prompt": "Look up."},
                          {"id": "done", "type": "end", "reason": "done"}],
                "edges": [{"id": "greet_to_done", "from": "greet", "to": "done", "condition": {"type": "llm", "condition": "the user said bye"}},
                          {"id": "escalate", "from": "greet", "to": "lookup", "condition": {"type": "llm", "condition": "the user wants an order looked up"}}]}),
        )
        .await?;
    let admin = srv.process.admin_token.clone();
    run_scenario(
        "first_hour.spec.mjs",
        &srv.process.base_url,
        &ws,
        &[("ADMIN_TOKEN", admin.as_str())],
    )
    .await?;

    let assistants = ws.get("/v1/assistants").await?;
    let list = assistants.assert_status(200)["data"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let helper = list.iter().find(|a| a["name"] == "Helper").expect("made");
    assert_eq!(
        helper["llm"],
        json!({"provider": "backup", "model": "my-custom-model"})
    );
    assert_eq!(helper["dynamicVariables"][0]["default"], "friend");
    assert_eq!(
        helper["toolBindings"][0]["argumentBindings"]["city"],
        json!({"source": "literal", "value": "Porto"})
    );
    assert_eq!(
        (
            helper["features"]["webSearch"].as_bool(),
            helper["features"]["webFetch"].as_bool()
        ),
        (Some(true), Some(false)),
        "webSearch left at its default, webFetch unticked by hand"
    );
    let maps = ws
        .get(&format!("/v1/assistants/{}", maps["id"].as_str().unwrap()))
        .await?;
    let maps = maps.assert_status(200);
    assert_eq!(
        maps["features"]["webSearch"], false,
        "a setting the server cannot offer survives a save in the console"
    );
    assert_eq!(maps["dynamicVariables"][0]["default"], "friend");

    let tools = ws.get("/v1/tools").await?;
    let picked = tools.assert_status(200)["data"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["type"] == "mcp").cloned())
        .expect("the MCP tool was saved");
    assert_eq!(picked["name"], "my_tool", "the name typed by hand stays");
    assert_ne!(
        picked["description"], "",
        "the description followed the pick"
    );

    let flow = ws
        .get(&format!(
            "/v1/workflows/{}",
            routing["id"].as_str().unwrap()
        ))
        .await?;
    let edges: Vec<(String, String, String)> = flow.assert_status(200)["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let s = |k: &str| e[k].as_str().unwrap_or_default().to_owned();
            (s("id"), s("from"), s("to"))
        })
        .collect();
    assert_eq!(
        edges,
        vec![
            ("greet_to_find".into(), "greet".into(), "find".into()),
            ("escalate".into(), "greet".into(), "done".into()),
        ],
        "a derived id follows its endpoints (and a renamed node); a named one stays"
    );
    mcp.stop().await;
    Ok(())
}

#[tokio::test]
async fn console_tool_test_in_a_real_browser() -> anyhow::Result<()> {
    let mock = MockLlm::start(vec![]).await?;
    let allowed = OrderService::start(Ok("shipped"), Duration::ZERO).await?;
    let refused = OrderService::start(Ok("never"), Duration::ZERO).await?;
    let allowed_host = allowed.base_url.trim_start_matches("http://");
    let env = HashMap::from([
        ("RTC_LLM_BASE_URL".to_owned(), mock.base_url.clone()),
        ("RTC_OUTBOUND_ALLOW".to_owned(), allowed_host.to_owned()),
    ]);
    let Some(srv) = start(Engine::Sqlite, env).await? else {
        return Ok(());
    };
    let (_, ws) = srv.workspace("Tools").await?;
    ws.create(
        "/v1/tools",
        json!({"name": "lookup_order", "type": "http", "description": "Finds an order.",
            "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]},
            "http": {"method": "GET", "url": format!("{}/orders/{{{{order_id}}}}", allowed.base_url)}}),
    )
    .await?;
    ws.create(
        "/v1/tools",
        json!({"name": "show_map", "type": "client",
            "client": {"functionName": "show_map", "waitForResponse": true}}),
    )
    .await?;
    run_scenario(
        "first_hour_tools.spec.mjs",
        &srv.process.base_url,
        &ws,
        &[("REFUSED_URL", refused.base_url.as_str())],
    )
    .await?;
    assert_eq!(allowed.requests(), vec!["A1?".to_owned()], "one test call");
    assert!(refused.requests().is_empty(), "{:?}", refused.requests());
    Ok(())
}
