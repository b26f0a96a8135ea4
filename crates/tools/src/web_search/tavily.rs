//! The Tavily search API: a JSON POST with the key as a bearer token and
//! Tavily's own `time_range`.

use serde::Deserialize;
use serde_json::json;

use super::{EngineError, SearchHit, SearchQuery, TimeRange, hit};

pub(super) fn request(
    client: &reqwest::Client,
    base: &url::Url,
    key: &str,
    q: &SearchQuery,
) -> reqwest::RequestBuilder {
    let mut body = json!({
        "query": q.query,
        "max_results": q.max_results.min(20),
        "search_depth": "basic",
        "include_answer": false,
    });
    if let Some(range) = q.time_range {
        body["time_range"] = json!(match range {
            TimeRange::Day => "day",
            TimeRange::Week => "week",
            TimeRange::Month => "month",
            TimeRange::Year => "year",
        });
    }
    client.post(base.clone()).bearer_auth(key).json(&body)
}

#[derive(Deserialize)]
struct Response {
    #[serde(default)]
    results: Vec<Result_>,
}

#[derive(Deserialize)]
struct Result_ {
    title: String,
    url: String,
    #[serde(default)]
    content: String,
}

pub(super) fn parse(status: u16, body: &str) -> Result<Vec<SearchHit>, EngineError> {
    // Tavily answers 432/433 when a plan's limits are reached.
    if matches!(status, 432 | 433) {
        return Err(EngineError::RateLimited);
    }
    super::check_status(status)?;
    let r: Response = serde_json::from_str(body).map_err(|e| EngineError::Parse(e.to_string()))?;
    Ok(r.results
        .iter()
        .filter_map(|x| hit(&x.title, &x.url, &x.content))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_and_limits() {
        let hits = parse(200, include_str!("../../tests/fixtures/search/tavily.json")).unwrap();
        assert_eq!(hits.len(), 2);
        assert_eq!(hits[1].title, "Glommio: thread-per-core async runtime");
        assert_eq!(parse(432, "{}"), Err(EngineError::RateLimited));
        assert_eq!(parse(401, "{}"), Err(EngineError::Status(401)));
    }
}
