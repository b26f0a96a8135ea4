//! webFetch and webSearch in a real conversation (R-WS, R-WFF): a scripted
//! model fetches pages of a local site and searches through a rate-limited
//! engine and a SearXNG-compatible one.

use std::collections::HashMap;

use axum::http::{StatusCode, header};
use axum::response::Redirect;
use axum::routing::get;
use rtc_testkit::{Engine, MockLlm, MockReply};
use serde_json::{Value, json};

use crate::conversation::{assistant, events_until, open, turn_done};
use crate::harness::start;

const PAGE: &str = r#"<!doctype html><html><head><title>Ferry guide</title></head><body>
<nav><ul><li><a href="/">Home</a></li><li><a href="/shop">Gift shop</a></li></ul></nav>
<main><h1>Ferry guide</h1><p>Everything about the island ferries, updated weekly.</p>
<h2>Fares</h2><table><tr><th>Ticket</th><th>Price</th></tr><tr><td>Adult</td><td>12 EUR</td></tr></table>
</main><footer>Cookie settings</footer></body></html>"#;

async fn site() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let long = format!(
        "<html><body><main><h1>Island history</h1>{}</main></body></html>",
        "<p>The treaty that settled the islands was signed in 1814 after long talks between the two crowns.</p>".repeat(80)
    );
    let app = axum::Router::new()
        .route("/guide", get(|| async { ([(header::CONTENT_TYPE, "text/html")], PAGE) }))
        .route("/history", get(move || async move { ([(header::CONTENT_TYPE, "text/html")], long) }))
        .route(
            "/hop",
            get(move || async move { Redirect::temporary(&format!("http://localhost:{port}/guide")) }),
        )
        .route(
            "/ddg/html/",
            get(|| async {
                (StatusCode::ACCEPTED, [(header::CONTENT_TYPE, "text/html")], "<div class=\"anomaly-modal\">bots</div>")
            }),
        )
        .route(
            "/searx/search",
            get(|| async {
                axum::Json(json!({"query": "ferry", "results": [
                    {"url": "https://ferries.example/guide", "title": "Ferry guide", "content": "Fares and timetables."},
                    {"url": "https://www.islands.example/", "title": "Islands", "content": "Visit the islands."}]}))
            }),
        );
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://127.0.0.1:{port}")
}

/// The `tool.completed` results of a turn, in order.
fn results(events: &[Value]) -> Vec<Value> {
    events
        .iter()
        .filter(|e| e["type"] == "tool.completed")
        .map(|e| e["result"].clone())
        .collect()
}

#[tokio::test]
async fn the_model_reads_pages_and_searches_the_web() -> anyhow::Result<()> {
    let site = site().await;
    let mock = MockLlm::start(vec![
        MockReply::call(
            "webFetch",
            json!({"url": format!("{site}/guide"), "prompt": "fares"}),
        ),
        MockReply::call(
            "webFetch",
            json!({"url": format!("{site}/guide"), "prompt": "fares again"}),
        ),
        MockReply::call(
            "webFetch",
            json!({"url": format!("{site}/hop"), "prompt": "fares"}),
        ),
        MockReply::call(
            "webFetch",
            json!({"url": format!("{site}/{}", "x".repeat(2_000)), "prompt": "p"}),
        ),
        MockReply::call(
            "webFetch",
            json!({"url": format!("{site}/history"), "prompt": "When was the treaty signed?"}),
        ),
        MockReply::text("The treaty was signed in 1814."), // the small model reading /history
        MockReply::call(
            "webSearch",
            json!({"query": "island ferry fares", "time_range": "week"}),
        ),
        MockReply::text("Adults pay 12 EUR.\n\nSources:\n- https://ferries.example/guide"),
        MockReply::text("Plain answer."), // the second assistant's turn
    ])
    .await?;
    let env = HashMap::from([
        ("RTC_LLM_BASE_URL".to_owned(), mock.base_url.clone()),
        ("RTC_ALLOW_PRIVATE_NETWORK".to_owned(), "1".to_owned()),
        ("RTC_WEB_FETCH".to_owned(), "1".to_owned()),
        ("RTC_WEB_FETCH_EXTRACT_BYTES".to_owned(), "3000".to_owned()),
        (
            "RTC_WEB_SEARCH_ENGINES".to_owned(),
            format!("duckduckgo={site}/ddg/html/,searxng={site}/searx/search"),
        ),
    ]);
    let Some(srv) = start(Engine::Sqlite, env).await? else {
        return Ok(());
    };
    let (_, ws) = srv.workspace("W").await?;
    let id = assistant(
        &ws,
        json!({"name": "Researcher", "systemPrompt": "Research."}),
    )
    .await?;
    let (sid, token) = open(&ws, json!({"assistantId": id})).await?;
    ws.post(
        &format!("/v1/sessions/{sid}/messages"),
        json!({"text": "What do ferries cost?"}),
    )
    .await?
    .assert_status(202);
    let events = events_until(&srv, &token, &sid, 0, turn_done).await?;
    let r = results(&events);
    assert_eq!(r.len(), 6, "{r:#?}");

    let guide = r[0]["content"].as_str().unwrap();
    assert!(guide.contains("## Fares"), "{guide}");
    assert!(guide.contains("| Adult"), "{guide}");
    assert!(
        !guide.contains("Gift shop") && !guide.contains("Cookie"),
        "{guide}"
    );
    assert_eq!(
        (r[0]["from_cache"].clone(), r[1]["from_cache"].clone()),
        (json!(false), json!(true))
    );
    assert_eq!(
        r[2]["redirect_url"],
        json!(format!(
            "http://localhost:{}/guide",
            site.rsplit(':').next().unwrap()
        ))
    );
    assert!(r[3]["error"].as_str().unwrap().contains("2000"), "{}", r[3]);
    assert_eq!(r[4]["extracted_for_prompt"], true);
    assert_eq!(r[4]["content"], "The treaty was signed in 1814.");
    assert_eq!(r[5]["engine"], "searxng");
    assert_eq!(r[5]["degraded"], true);
    assert_eq!(
        r[5]["failures"][0],
        json!({"engine": "duckduckgo", "reason": "rate limited"})
    );
    assert_eq!(r[5]["results"][1]["source"], "islands.example");

    let requests = mock.requests();
    let tools: Vec<&str> = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    // Configured by the operator, so on by default (R-API-4).
    assert!(
        tools.contains(&"webSearch") && tools.contains(&"webFetch"),
        "{tools:?}"
    );
    let reading = requests[5]["messages"][1]["content"].as_str().unwrap();
    assert!(
        reading.starts_with("Request: When was the treaty signed?"),
        "{reading:.200}"
    );
    assert!(reading.contains("signed in 1814"));

    // Switched off, the model is not offered the web tools.
    let plain = assistant(
        &ws,
        json!({"name": "Plain", "systemPrompt": "Hi.", "features": {"webSearch": false, "webFetch": false}}),
    )
    .await?;
    let (sid, token) = open(&ws, json!({"assistantId": plain})).await?;
    ws.post(
        &format!("/v1/sessions/{sid}/messages"),
        json!({"text": "hi"}),
    )
    .await?
    .assert_status(202);
    events_until(&srv, &token, &sid, 0, turn_done).await?;
    let last = mock.requests().last().cloned().unwrap();
    let offered: Vec<&str> = last["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(
        !offered
            .iter()
            .any(|t| *t == "webSearch" || *t == "webFetch"),
        "{offered:?}"
    );
    assert!(offered.contains(&"askUser"), "the other families stay on");
    Ok(())
}
