//! DuckDuckGo's HTML endpoint, read with an HTML parser. Its rate limit is
//! an HTTP 202 with a "bots use DuckDuckGo too" challenge page; ads and
//! its own redirect links (`/l/?uddg=`) are unwrapped or skipped.

use dom_query::Document;

use super::{EngineError, SearchHit, SearchQuery, TimeRange, hit};

pub(super) fn request(
    client: &reqwest::Client,
    base: &url::Url,
    q: &SearchQuery,
) -> reqwest::RequestBuilder {
    let mut url = base.clone();
    {
        let mut pairs = url.query_pairs_mut();
        pairs.append_pair("q", &q.query);
        if let Some(range) = q.time_range {
            pairs.append_pair("df", time_filter(range));
        }
    }
    client
        .get(url)
        .header(reqwest::header::ACCEPT, "text/html")
        .header(reqwest::header::ACCEPT_LANGUAGE, "en-US,en;q=0.8")
}

/// DuckDuckGo's `df` parameter.
fn time_filter(range: TimeRange) -> &'static str {
    match range {
        TimeRange::Day => "d",
        TimeRange::Week => "w",
        TimeRange::Month => "m",
        TimeRange::Year => "y",
    }
}

pub(super) fn parse(status: u16, body: &str) -> Result<Vec<SearchHit>, EngineError> {
    if status == 202 || status == 429 || body.contains("anomaly-modal") {
        return Err(EngineError::RateLimited);
    }
    super::check_status(status)?;
    let doc = Document::from(body);
    let mut hits = Vec::new();
    for result in doc.select("div.result").iter() {
        if result.has_class("result--ad") {
            continue;
        }
        let link = result.select("a.result__a").first();
        let Some(href) = link.attr("href") else {
            continue;
        };
        let snippet = result.select(".result__snippet").first().text();
        if let Some(h) = target(&href).and_then(|url| hit(&link.text(), &url, &snippet)) {
            hits.push(h);
        }
    }
    if hits.is_empty() && doc.select("#links, .serp__results").length() == 0 {
        return Err(EngineError::Parse("not a DuckDuckGo results page".into()));
    }
    Ok(hits)
}

/// The result's real URL: DuckDuckGo wraps it as `//duckduckgo.com/l/?uddg=…`.
fn target(href: &str) -> Option<String> {
    let absolute = if href.starts_with("//") {
        format!("https:{href}")
    } else {
        href.to_owned()
    };
    let url = url::Url::parse(&absolute).ok()?;
    let is_wrapper = url
        .host_str()
        .is_some_and(|h| h.ends_with("duckduckgo.com"));
    if !is_wrapper {
        return Some(url.to_string());
    }
    if url.path() == "/l/" {
        return url
            .query_pairs()
            .find(|(k, _)| k == "uddg")
            .map(|(_, v)| v.into_owned());
    }
    None // ads (`/y.js`) and other internal links
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_without_ads_with_real_urls() {
        let hits = parse(
            200,
            include_str!("../../tests/fixtures/search/duckduckgo.html"),
        )
        .unwrap();
        let urls: Vec<&str> = hits.iter().map(|h| h.url.as_str()).collect();
        assert_eq!(
            urls,
            [
                "https://tokio.rs/",
                "https://rust-lang.github.io/async-book/",
                "https://www.reddit.com/r/rust/comments/xyz/which_async_runtime/"
            ]
        );
        assert_eq!(hits[0].title, "Tokio - An asynchronous Rust runtime");
        assert!(
            hits[0]
                .description
                .starts_with("Tokio is an asynchronous runtime for the Rust")
        );
        assert!(
            hits[1].description.contains("you're looking"),
            "entities decoded"
        );
        assert_eq!(hits[2].source, "reddit.com");
    }

    #[test]
    fn the_challenge_page_is_a_rate_limit() {
        let page = include_str!("../../tests/fixtures/search/duckduckgo_ratelimit.html");
        assert_eq!(parse(202, page), Err(EngineError::RateLimited));
        assert_eq!(parse(200, page), Err(EngineError::RateLimited));
    }

    #[test]
    fn no_results_and_foreign_pages() {
        let empty = include_str!("../../tests/fixtures/search/duckduckgo_empty.html");
        assert_eq!(parse(200, empty), Ok(vec![]));
        assert!(matches!(
            parse(200, "<html><body>Hello</body></html>"),
            Err(EngineError::Parse(_))
        ));
        assert_eq!(parse(503, ""), Err(EngineError::Status(503)));
    }
}
