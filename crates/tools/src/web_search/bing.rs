//! The Bing Web Search API (`/v7.0/search`): key in
//! `Ocp-Apim-Subscription-Key`, `freshness` Day/Week/Month or a date range
//! for a year.

use rtc_core::time::rfc3339_from_millis;
use serde::Deserialize;

use super::{EngineError, SearchHit, SearchQuery, TimeRange, hit};

pub(super) fn request(
    client: &reqwest::Client,
    base: &url::Url,
    key: &str,
    q: &SearchQuery,
) -> reqwest::RequestBuilder {
    let mut url = base.clone();
    {
        let mut pairs = url.query_pairs_mut();
        pairs.append_pair("q", &q.query);
        pairs.append_pair("count", &q.max_results.min(50).to_string());
        pairs.append_pair("responseFilter", "Webpages");
        if let Some(range) = q.time_range {
            pairs.append_pair("freshness", &freshness(range, now_millis()));
        }
    }
    client.get(url).header("Ocp-Apim-Subscription-Key", key)
}

/// Bing's `freshness`: a named period, or `FROM..TO` (the last 365 days)
/// for a year.
fn freshness(range: TimeRange, now_millis: i64) -> String {
    let date = |ms: i64| rfc3339_from_millis(ms)[..10].to_owned();
    match range {
        TimeRange::Day => "Day".into(),
        TimeRange::Week => "Week".into(),
        TimeRange::Month => "Month".into(),
        TimeRange::Year => format!(
            "{}..{}",
            date(now_millis - 365 * 86_400_000),
            date(now_millis)
        ),
    }
}

fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or_default()
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Response {
    web_pages: Option<WebPages>,
}

#[derive(Deserialize)]
struct WebPages {
    #[serde(default)]
    value: Vec<Page>,
}

#[derive(Deserialize)]
struct Page {
    name: String,
    url: String,
    #[serde(default)]
    snippet: String,
}

pub(super) fn parse(status: u16, body: &str) -> Result<Vec<SearchHit>, EngineError> {
    super::check_status(status)?;
    let r: Response = serde_json::from_str(body).map_err(|e| EngineError::Parse(e.to_string()))?;
    Ok(r.web_pages
        .map(|w| w.value)
        .unwrap_or_default()
        .iter()
        .filter_map(|p| hit(&p.name, &p.url, &p.snippet))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn web_pages() {
        let hits = parse(200, include_str!("../../tests/fixtures/search/bing.json")).unwrap();
        assert_eq!(hits.len(), 2);
        assert_eq!(hits[1].url, "https://github.com/smol-rs/smol");
        assert_eq!(hits[1].source, "github.com");
        assert_eq!(parse(200, r#"{"_type":"SearchResponse"}"#), Ok(vec![]));
        assert_eq!(parse(429, "{}"), Err(EngineError::RateLimited));
        assert_eq!(parse(401, "{}"), Err(EngineError::Status(401)));
    }

    #[test]
    fn a_year_is_a_date_range() {
        let nov_30_2026 = 1_796_048_477_123;
        assert_eq!(
            freshness(TimeRange::Year, nov_30_2026),
            "2025-11-30..2026-11-30"
        );
        assert_eq!(freshness(TimeRange::Week, nov_30_2026), "Week");
    }
}
