//! webSearch and webFetch in a session, against local stand-ins of a
//! SearXNG instance and a web page (the real engines are outside).

use std::sync::Arc;
use std::time::Duration;

use rtc_testkit::MockReply;
use rtc_tools::net_guard::AddressPolicy;
use rtc_tools::web_fetch::{WebFetchConfig, WebFetcher};
use rtc_tools::web_search::{EngineConfig, EngineKind, WebSearch};
use serde_json::json;

use crate::harness::{Harness, WS};

const SEARXNG: &str = include_str!("../../../tools/tests/fixtures/search/searxng.json");

async fn web_server() -> String {
    let app = axum::Router::new()
        .route(
            "/search",
            axum::routing::get(|| async {
                ([(axum::http::header::CONTENT_TYPE, "application/json")], SEARXNG)
            }),
        )
        .route(
            "/page",
            axum::routing::get(|| async {
                axum::response::Html(
                    "<html><head><title>Ferries</title></head><body><main><h1>Timetable</h1><p>The first ferry leaves at 06:40.</p></main></body></html>",
                )
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

#[tokio::test]
async fn the_model_searches_and_reads_a_page() {
    let base = web_server().await;
    let page = format!("{base}/page");
    let h = Harness::with(
        vec![
            MockReply::call("webSearch", json!({"query": "ferry timetable"})),
            MockReply::call("webFetch", json!({"url": page, "prompt": "first ferry"})),
            MockReply::text("06:40."),
        ],
        |c| {
            let engine = EngineConfig {
                kind: EngineKind::Searxng,
                base_url: Some(format!("{base}/search")),
                api_key: None,
            };
            c.web_search = Some(Arc::new(
                WebSearch::new(
                    &[engine],
                    AddressPolicy::AllowPrivate,
                    Duration::from_secs(5),
                )
                .unwrap(),
            ));
            c.web_fetch = Some(
                WebFetcher::new(AddressPolicy::AllowPrivate, WebFetchConfig::default()).unwrap(),
            );
        },
    )
    .await;
    h.assistant("a", json!({"name": "a", "systemPrompt": "Research."}))
        .await;
    let s = h.session("a").await;
    let mut events = h.events(&s).await;
    h.rt.send_user_message(WS, &s, "when is the first ferry?")
        .await
        .unwrap();
    let searched = events
        .until("tool.completed", |v| v["name"] == "webSearch")
        .await;
    let searched = serde_json::to_value(searched).unwrap();
    assert_eq!(searched["isError"], false, "{searched}");
    assert!(searched["result"]["result_count"].as_u64().unwrap() > 0);
    let fetched = events
        .until("tool.completed", |v| v["name"] == "webFetch")
        .await;
    let fetched = serde_json::to_value(fetched).unwrap();
    assert_eq!(fetched["isError"], false, "{fetched}");
    assert!(
        fetched["result"]["content"]
            .as_str()
            .unwrap()
            .contains("06:40"),
        "{fetched}"
    );
    let offered = h.offered_tools(0);
    assert!(offered.iter().any(|t| t == "webSearch") && offered.iter().any(|t| t == "webFetch"));
}
