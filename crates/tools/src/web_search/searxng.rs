//! A SearXNG instance's JSON API (`/search?format=json`), with its own
//! `time_range` (day/week/month/year).

use serde::Deserialize;

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
        pairs.append_pair("format", "json");
        pairs.append_pair("pageno", "1");
        if let Some(range) = q.time_range {
            pairs.append_pair(
                "time_range",
                match range {
                    TimeRange::Day => "day",
                    TimeRange::Week => "week",
                    TimeRange::Month => "month",
                    TimeRange::Year => "year",
                },
            );
        }
    }
    client.get(url)
}

#[derive(Deserialize)]
struct Response {
    #[serde(default)]
    results: Vec<Result_>,
}

#[derive(Deserialize)]
struct Result_ {
    url: String,
    #[serde(default)]
    title: String,
    #[serde(default)]
    content: String,
}

pub(super) fn parse(status: u16, body: &str) -> Result<Vec<SearchHit>, EngineError> {
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
    fn results() {
        let hits = parse(
            200,
            include_str!("../../tests/fixtures/search/searxng.json"),
        )
        .unwrap();
        assert_eq!(hits.len(), 3);
        assert_eq!(hits[1].source, "docs.rs");
        assert_eq!(hits[2].description, "");
        // An HTML error page (format=json disabled on the instance).
        assert!(matches!(
            parse(200, "<html>403</html>"),
            Err(EngineError::Parse(_))
        ));
        assert_eq!(parse(403, ""), Err(EngineError::Status(403)));
    }
}
