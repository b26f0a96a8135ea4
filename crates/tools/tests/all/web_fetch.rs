//! webFetch against a local site: Markdown of the main content, the cache,
//! the redirect rule, size and time limits, binary refusal, and the address
//! guard.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::http::header;
use axum::response::{IntoResponse, Redirect};
use axum::routing::get;
use rtc_tools::net_guard::AddressPolicy;
use rtc_tools::web_fetch::{
    ConvertError, Extraction, FetchError, Fetched, WebFetchConfig, WebFetcher,
};

const ARTICLE: &str = r#"<!doctype html><html><head><title>Tide tables</title></head><body>
<nav><a href="/">Home</a> <a href="/shop">Shop</a> <a href="/login">Log in</a></nav>
<main><h1>Tide tables for March</h1>
<p>High and low water times for the harbour, corrected for summer time.</p>
<table><tr><th>Day</th><th>High water</th></tr><tr><td>1 March</td><td>06:12</td></tr></table>
</main><footer>Cookie preferences</footer></body></html>"#;

/// A local site; returns its base URL (on 127.0.0.1) and the hit counter
/// of `/counted`.
async fn site() -> (String, Arc<AtomicUsize>) {
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let app =
        axum::Router::new()
            .route(
                "/article",
                get(|| async {
                    (
                        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
                        ARTICLE,
                    )
                }),
            )
            .route(
                "/counted",
                get(move || {
                    counter.fetch_add(1, Ordering::SeqCst);
                    async { ([(header::CONTENT_TYPE, "text/html")], ARTICLE) }
                }),
            )
            .route("/moved", get(|| async { Redirect::permanent("/article") }))
            .route(
                "/elsewhere",
                get(move || async move {
                    Redirect::temporary(&format!("http://localhost:{port}/article"))
                }),
            )
            .route("/notes.txt", get(|| async { "plain notes\nline two" }))
            .route(
                "/logo.png",
                get(|| async {
                    (
                        [(header::CONTENT_TYPE, "image/png")],
                        vec![0x89u8, b'P', b'N', b'G', 0, 0],
                    )
                }),
            )
            .route(
                "/huge",
                get(|| async {
                    (
                        [(header::CONTENT_TYPE, "text/plain")],
                        "x".repeat(3 * 1024 * 1024),
                    )
                }),
            )
            .route(
                "/slow",
                get(|| async {
                    tokio::time::sleep(Duration::from_secs(5)).await;
                    "late".into_response()
                }),
            )
            .route(
                "/deep/{levels}",
                get(
                    |axum::extract::Path(levels): axum::extract::Path<usize>| async move {
                        let html = format!(
                            "<html><body>{}deep{}</body></html>",
                            "<div>".repeat(levels),
                            "</div>".repeat(levels)
                        );
                        ([(header::CONTENT_TYPE, "text/html")], html)
                    },
                ),
            )
            .route(
                "/docs",
                get(|| async {
                    let html = include_str!("../../benches/corpus/core-primitive-i128.html");
                    ([(header::CONTENT_TYPE, "text/html")], html)
                }),
            )
            .route(
                "/missing",
                get(|| async { (axum::http::StatusCode::NOT_FOUND, "no") }),
            );
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://127.0.0.1:{port}"), hits)
}

fn fetcher(policy: AddressPolicy) -> WebFetcher {
    rtc_tools::init_tls();
    WebFetcher::new(
        policy,
        WebFetchConfig {
            max_bytes: 1024 * 1024,
            timeout: Duration::from_secs(1),
            ..WebFetchConfig::default()
        },
    )
    .unwrap()
}

fn page(f: Fetched) -> rtc_tools::web_fetch::Page {
    match f {
        Fetched::Page(p) => p,
        other => panic!("expected a page, got {other:?}"),
    }
}

#[tokio::test]
async fn html_becomes_markdown_of_the_main_content() {
    let (base, _) = site().await;
    let (fetched, cached) = fetcher(AddressPolicy::AllowPrivate)
        .fetch("ws1", &format!("{base}/article"))
        .await
        .unwrap();
    assert!(!cached);
    let p = page(fetched);
    assert_eq!(p.extraction, Some(Extraction::Landmark));
    assert_eq!(p.title.as_deref(), Some("Tide tables"));
    assert!(
        p.content.starts_with("# Tide tables for March"),
        "{}",
        p.content
    );
    assert!(p.content.contains("| 1 March"), "{}", p.content);
    assert!(
        !p.content.contains("Shop") && !p.content.contains("Cookie"),
        "{}",
        p.content
    );
}

#[tokio::test]
async fn a_second_fetch_is_served_from_the_cache() {
    let (base, hits) = site().await;
    let f = fetcher(AddressPolicy::AllowPrivate);
    let url = format!("{base}/counted");
    let (first, cached_first) = f.fetch("ws1", &url).await.unwrap();
    let (second, cached_second) = f.fetch("ws1", &url).await.unwrap();
    assert_eq!((cached_first, cached_second), (false, true));
    assert_eq!(first, second);
    assert_eq!(hits.load(Ordering::SeqCst), 1, "the site saw one request");
}

#[tokio::test]
async fn redirects_within_the_host_are_followed_and_across_hosts_reported() {
    let (base, _) = site().await;
    let f = fetcher(AddressPolicy::AllowPrivate);
    let p = page(f.fetch("ws1", &format!("{base}/moved")).await.unwrap().0);
    assert!(p.url.ends_with("/article"), "{}", p.url);
    let (elsewhere, _) = f.fetch("ws1", &format!("{base}/elsewhere")).await.unwrap();
    let Fetched::Redirect { to, status, .. } = elsewhere else {
        panic!("expected a redirect, got {elsewhere:?}");
    };
    assert_eq!(status, 307);
    assert!(
        to.starts_with("http://localhost:") && to.ends_with("/article"),
        "{to}"
    );
}

#[tokio::test]
async fn text_passes_through_and_binary_is_refused() {
    let (base, _) = site().await;
    let f = fetcher(AddressPolicy::AllowPrivate);
    let p = page(
        f.fetch("ws1", &format!("{base}/notes.txt"))
            .await
            .unwrap()
            .0,
    );
    assert_eq!(p.content, "plain notes\nline two");
    assert_eq!(p.extraction, None);
    let err = f
        .fetch("ws1", &format!("{base}/logo.png"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, FetchError::Binary(ref t) if t == "image/png"),
        "{err}"
    );
}

#[tokio::test]
async fn limits_cut_time_out_and_refuse() {
    let (base, _) = site().await;
    let f = fetcher(AddressPolicy::AllowPrivate);
    let p = page(f.fetch("ws1", &format!("{base}/huge")).await.unwrap().0);
    assert!(p.truncated);
    assert_eq!(p.bytes, 1024 * 1024, "cut at the limit");
    let err = f.fetch("ws1", &format!("{base}/slow")).await.unwrap_err();
    assert_eq!(err, FetchError::Timeout(Duration::from_secs(1)));
    let long = format!("{base}/article?q={}", "a".repeat(2_000));
    assert!(matches!(
        f.fetch("ws1", &long).await.unwrap_err(),
        FetchError::UrlTooLong { max: 2_000, .. }
    ));
    assert!(matches!(
        f.fetch("ws1", "ftp://example.com/x").await.unwrap_err(),
        FetchError::Blocked(_)
    ));
    assert!(matches!(
        f.fetch("ws1", "not a url").await.unwrap_err(),
        FetchError::InvalidUrl(_)
    ));
    assert_eq!(
        f.fetch("ws1", &format!("{base}/missing"))
            .await
            .unwrap_err(),
        FetchError::Status(404)
    );
}

#[tokio::test]
async fn private_addresses_are_refused_unless_allowed() {
    let (base, _) = site().await;
    let f = fetcher(AddressPolicy::PublicOnly);
    let err = f
        .fetch("ws1", &format!("{base}/article"))
        .await
        .unwrap_err();
    assert!(matches!(err, FetchError::Blocked(_)), "{err}");
    let by_name = base.replace("127.0.0.1", "localhost");
    let err = f
        .fetch("ws1", &format!("{by_name}/article"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, FetchError::Blocked(_)),
        "resolved address checked: {err}"
    );
    for metadata in [
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]/",
        "http://10.0.0.8/",
    ] {
        assert!(
            matches!(
                f.fetch("ws1", metadata).await.unwrap_err(),
                FetchError::Blocked(_)
            ),
            "{metadata}"
        );
    }
}

/// A page nested 30,000 or 100,000 levels deep is refused with an error
/// the model can read (it aborted the process); the fetcher still works
/// afterwards, and a 1 MB page converts.
#[tokio::test]
async fn deeply_nested_pages_are_refused_and_large_pages_convert() {
    let (base, _) = site().await;
    rtc_tools::init_tls();
    let f = WebFetcher::new(
        AddressPolicy::AllowPrivate,
        WebFetchConfig {
            timeout: Duration::from_secs(30),
            ..WebFetchConfig::default()
        },
    )
    .unwrap();
    for levels in [30_000, 100_000] {
        let err = f
            .fetch("ws1", &format!("{base}/deep/{levels}"))
            .await
            .unwrap_err();
        assert_eq!(
            err,
            FetchError::Convert(ConvertError::TooDeep {
                max: rtc_tools::web_fetch::limits::MAX_DEPTH
            })
        );
        assert!(
            err.to_string()
                .starts_with("the page is too deeply nested to convert"),
            "{err}"
        );
    }
    let p = page(f.fetch("ws1", &format!("{base}/docs")).await.unwrap().0);
    assert_eq!(p.extraction, Some(Extraction::Landmark));
    assert!(p.content.len() > 500_000, "{}", p.content.len());
}

/// The cache is per workspace: the same URL fetched from two workspaces
/// reaches the site twice, and neither sees the other's `from_cache`.
#[tokio::test]
async fn each_workspace_has_its_own_cache() {
    let (base, hits) = site().await;
    let f = fetcher(AddressPolicy::AllowPrivate);
    let url = format!("{base}/counted");
    let (_, cached_a) = f.fetch("ws_a", &url).await.unwrap();
    let (_, cached_b) = f.fetch("ws_b", &url).await.unwrap();
    assert_eq!((cached_a, cached_b), (false, false));
    assert_eq!(hits.load(Ordering::SeqCst), 2, "both reached the site");
    let (_, again_a) = f.fetch("ws_a", &url).await.unwrap();
    let (_, again_b) = f.fetch("ws_b", &url).await.unwrap();
    assert_eq!((again_a, again_b), (true, true));
    assert_eq!(hits.load(Ordering::SeqCst), 2);
}
