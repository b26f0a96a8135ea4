//! webSearch against local stand-ins of the four engines replaying
//! recorded answers and failure pages: failover, circuit breakers, empty
//! answers, time ranges and keys.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use rtc_tools::net_guard::AddressPolicy;
use rtc_tools::web_search::{
    EngineConfig, EngineKind, SearchError, SearchQuery, TimeRange, WebSearch,
};
use serde_json::Value;

const DDG_LIMIT: &str = include_str!("../fixtures/search/duckduckgo_ratelimit.html");
const DDG: &str = include_str!("../fixtures/search/duckduckgo.html");
const SEARXNG: &str = include_str!("../fixtures/search/searxng.json");
const TAVILY: &str = include_str!("../fixtures/search/tavily.json");
const BING: &str = include_str!("../fixtures/search/bing.json");

#[derive(Default)]
struct Hits {
    ddg: AtomicUsize,
    bing: AtomicUsize,
    searxng: AtomicUsize,
}

type Params = Query<std::collections::HashMap<String, String>>;

async fn engines() -> (String, Arc<Hits>) {
    let hits = Arc::new(Hits::default());
    let app = axum::Router::new()
        .route(
            "/ddg-limited/html/",
            get(|State(h): State<Arc<Hits>>| async move {
                h.ddg.fetch_add(1, Ordering::SeqCst);
                (
                    StatusCode::ACCEPTED,
                    [(header::CONTENT_TYPE, "text/html")],
                    DDG_LIMIT,
                )
            }),
        )
        .route(
            "/ddg/html/",
            get(|Query(p): Params| async move {
                if p.get("q").map(String::as_str) != Some("rust async runtime")
                    || p.get("df").map(String::as_str) != Some("m")
                {
                    return (StatusCode::BAD_REQUEST, "bad query").into_response();
                }
                ([(header::CONTENT_TYPE, "text/html")], DDG).into_response()
            }),
        )
        .route(
            "/bing-down",
            get(|State(h): State<Arc<Hits>>| async move {
                h.bing.fetch_add(1, Ordering::SeqCst);
                (StatusCode::INTERNAL_SERVER_ERROR, "upstream error")
            }),
        )
        .route(
            "/bing",
            get(|headers: HeaderMap, Query(p): Params| async move {
                if headers
                    .get("ocp-apim-subscription-key")
                    .and_then(|v| v.to_str().ok())
                    != Some("bing-key")
                {
                    return (StatusCode::UNAUTHORIZED, "{}").into_response();
                }
                if p.get("freshness").map(String::as_str) != Some("Day") {
                    return (StatusCode::BAD_REQUEST, "freshness").into_response();
                }
                ([(header::CONTENT_TYPE, "application/json")], BING).into_response()
            }),
        )
        .route(
            "/searx/search",
            get(|State(h): State<Arc<Hits>>, Query(p): Params| async move {
                h.searxng.fetch_add(1, Ordering::SeqCst);
                if p.get("format").map(String::as_str) != Some("json") {
                    return (StatusCode::FORBIDDEN, "format").into_response();
                }
                if p.contains_key("time_range")
                    && p.get("time_range").map(String::as_str) != Some("week")
                {
                    return (StatusCode::BAD_REQUEST, "time_range").into_response();
                }
                ([(header::CONTENT_TYPE, "application/json")], SEARXNG).into_response()
            }),
        )
        .route(
            "/searx-empty/search",
            get(|| async {
                (
                    [(header::CONTENT_TYPE, "application/json")],
                    r#"{"query":"x","results":[]}"#,
                )
            }),
        )
        .route(
            "/tavily",
            post(
                |headers: HeaderMap, axum::Json(body): axum::Json<Value>| async move {
                    if headers.get("authorization").and_then(|v| v.to_str().ok())
                        != Some("Bearer tvly-key")
                    {
                        return (StatusCode::UNAUTHORIZED, "{}").into_response();
                    }
                    if body["time_range"] != "year" || body["query"] != "rust async runtime" {
                        return (StatusCode::BAD_REQUEST, "body").into_response();
                    }
                    ([(header::CONTENT_TYPE, "application/json")], TAVILY).into_response()
                },
            ),
        )
        .with_state(hits.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (base, hits)
}

fn engine(kind: EngineKind, url: String, key: Option<&str>) -> EngineConfig {
    EngineConfig {
        kind,
        base_url: Some(url),
        api_key: key.map(str::to_owned),
    }
}

fn search(engines: &[EngineConfig]) -> WebSearch {
    rtc_tools::init_tls();
    WebSearch::new(engines, AddressPolicy::AllowPrivate, Duration::from_secs(5)).unwrap()
}

fn query(max: usize, range: Option<TimeRange>) -> SearchQuery {
    SearchQuery {
        query: "rust async runtime".into(),
        max_results: max,
        time_range: range,
    }
}

#[tokio::test]
async fn fails_over_past_a_rate_limit_and_a_server_error() {
    let (base, hits) = engines().await;
    let ws = search(&[
        engine(
            EngineKind::Duckduckgo,
            format!("{base}/ddg-limited/html/"),
            None,
        ),
        engine(EngineKind::Bing, format!("{base}/bing-down"), Some("k")),
        engine(EngineKind::Searxng, format!("{base}/searx/search"), None),
    ]);
    let out = ws.search(&query(2, Some(TimeRange::Week))).await.unwrap();
    assert_eq!(out.engine, "searxng");
    assert!(out.degraded);
    assert_eq!(out.result_count, 2, "max_results honoured");
    assert_eq!(out.results[0].url, "https://tokio.rs/");
    let reasons: Vec<(&str, &str)> = out
        .failures
        .iter()
        .map(|f| (f.engine, f.reason.as_str()))
        .collect();
    assert_eq!(
        reasons,
        [("duckduckgo", "rate limited"), ("bing", "HTTP 500")]
    );

    // The rate limit opened DuckDuckGo's circuit at once: it is skipped now.
    let again = ws.search(&query(10, None)).await.unwrap();
    assert_eq!(hits.ddg.load(Ordering::SeqCst), 1, "not asked again");
    assert_eq!(again.failures[0].engine, "duckduckgo");
    assert!(again.failures[0].reason.contains("circuit open"));
    assert_eq!(again.result_count, 3);
}

#[tokio::test]
async fn a_failing_engine_is_skipped_after_three_failures() {
    let (base, hits) = engines().await;
    let ws = search(&[
        engine(EngineKind::Bing, format!("{base}/bing-down"), Some("k")),
        engine(EngineKind::Searxng, format!("{base}/searx/search"), None),
    ]);
    for _ in 0..5 {
        let out = ws.search(&query(10, None)).await.unwrap();
        assert_eq!(out.engine, "searxng");
        assert!(out.degraded);
    }
    assert_eq!(
        hits.bing.load(Ordering::SeqCst),
        3,
        "the breaker opened after three failures"
    );
    assert_eq!(hits.searxng.load(Ordering::SeqCst), 5);
}

#[tokio::test]
async fn an_empty_answer_fails_over_and_engine_parameters_are_mapped() {
    let (base, _) = engines().await;
    let ws = search(&[
        engine(
            EngineKind::Searxng,
            format!("{base}/searx-empty/search"),
            None,
        ),
        engine(
            EngineKind::Tavily,
            format!("{base}/tavily"),
            Some("tvly-key"),
        ),
    ]);
    let out = ws.search(&query(10, Some(TimeRange::Year))).await.unwrap();
    assert_eq!(out.engine, "tavily", "{out:?}");
    assert_eq!(out.failures[0].reason, "no results");
    assert_eq!(out.result_count, 2);

    let bing = search(&[engine(
        EngineKind::Bing,
        format!("{base}/bing"),
        Some("bing-key"),
    )]);
    let out = bing.search(&query(10, Some(TimeRange::Day))).await.unwrap();
    assert_eq!(
        (out.engine, out.degraded, out.result_count),
        ("bing", false, 2)
    );

    let ddg = search(&[engine(
        EngineKind::Duckduckgo,
        format!("{base}/ddg/html/"),
        None,
    )]);
    let out = ddg
        .search(&query(10, Some(TimeRange::Month)))
        .await
        .unwrap();
    assert_eq!(
        (out.engine, out.result_count),
        ("duckduckgo", 3),
        "ads skipped"
    );
}

#[tokio::test]
async fn every_engine_failing_is_an_error_naming_each() {
    let (base, _) = engines().await;
    let ws = search(&[
        engine(
            EngineKind::Duckduckgo,
            format!("{base}/ddg-limited/html/"),
            None,
        ),
        engine(
            EngineKind::Searxng,
            format!("{base}/searx-empty/search"),
            None,
        ),
    ]);
    let err = ws.search(&query(10, None)).await.unwrap_err();
    assert_eq!(
        err,
        SearchError::AllFailed("duckduckgo: rate limited; searxng: no results".into())
    );
}

#[tokio::test]
async fn configuration_is_checked_and_keys_stay_out_of_debug_output() {
    let no_key = WebSearch::new(
        &[engine(
            EngineKind::Tavily,
            "https://api.tavily.com/search".into(),
            None,
        )],
        AddressPolicy::PublicOnly,
        Duration::from_secs(5),
    );
    assert_eq!(
        no_key.unwrap_err(),
        SearchError::Config("tavily needs `api_key`".into())
    );
    let no_url = WebSearch::new(
        &[EngineConfig {
            kind: EngineKind::Searxng,
            base_url: None,
            api_key: None,
        }],
        AddressPolicy::PublicOnly,
        Duration::from_secs(5),
    );
    assert_eq!(
        no_url.unwrap_err(),
        SearchError::Config("searxng needs `base_url`".into())
    );
    let shown = format!(
        "{:?}",
        engine(EngineKind::Bing, "https://b".into(), Some("sk-very-secret"))
    );
    assert!(!shown.contains("sk-very-secret"), "{shown}");
}

/// An engine answering more than 2 MiB (announced, or streamed without a
/// length) fails over like any other failure.
#[tokio::test]
async fn an_oversized_answer_is_refused() {
    use futures::stream;
    let app = axum::Router::new()
        .route("/big/search", get(|| async { "x".repeat(3 * 1024 * 1024) }))
        .route(
            "/chunked/search",
            get(|| async {
                let chunks = (0..48).map(|_| Ok::<_, std::io::Error>(vec![b'y'; 64 * 1024]));
                axum::body::Body::from_stream(stream::iter(chunks))
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let ws = search(&[
        engine(EngineKind::Searxng, format!("{base}/big/search"), None),
        engine(EngineKind::Searxng, format!("{base}/chunked/search"), None),
    ]);
    let err = ws.search(&query(10, None)).await.unwrap_err();
    assert_eq!(
        err,
        SearchError::AllFailed(
            "searxng: the answer is larger than 2097152 bytes; searxng: the answer is larger than 2097152 bytes"
                .into()
        )
    );
}
