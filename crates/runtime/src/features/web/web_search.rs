//! `webSearch {query, max_results=10 (≤30), time_range?}` (R-WS-1..3).

use crate::builtins::ArgumentError;
use rtc_core::llm::ToolSpec;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::features::web::WebService;
use rtc_tools::web_search::{MAX_RESULTS, SearchQuery, TimeRange};

pub const NAME: &str = "webSearch";

const DESCRIPTION: &str = "Search the web for current information. Several search engines are tried in turn, so an answer comes back even when one is down.
- Make the query specific; include the current year for anything recent (e.g. \"Go 1.22 release notes 2026\").
- Results carry title, url, description and source. Read them, pick the most relevant URLs, and call webFetch on a URL when the descriptions are not enough.
- Use fewer results for a quick answer and more (up to 30) for research.
- After answering with search results, you MUST end your reply with a \"Sources:\" block listing the URLs you relied on.";

pub fn parameters() -> Value {
    json!({
        "type": "object",
        "properties": {
            "query": {"type": "string", "minLength": 1, "maxLength": 400, "description": "The search query; specific, with the year for recent topics."},
            "max_results": {"type": "integer", "minimum": 1, "maximum": MAX_RESULTS, "default": 10, "description": "How many results to return (default 10, at most 30)."},
            "time_range": {"type": "string", "enum": ["", "day", "week", "month", "year"], "description": "Only results from the last day, week, month or year. Empty or omitted: any time."}
        },
        "required": ["query"],
        "additionalProperties": false
    })
}

pub fn spec() -> ToolSpec {
    ToolSpec {
        name: NAME.to_owned(),
        description: DESCRIPTION.to_owned(),
        parameters: parameters(),
    }
}

#[derive(Deserialize)]
struct Args {
    query: String,
    max_results: Option<usize>,
    /// Empty means no limit, as the source documents say.
    #[serde(default, deserialize_with = "empty_is_none")]
    time_range: Option<TimeRange>,
}

/// `""` as no time range; any other value as the range it names.
fn empty_is_none<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<TimeRange>, D::Error> {
    let text: Option<String> = Option::deserialize(d)?;
    match text.as_deref() {
        None | Some("") => Ok(None),
        Some(other) => {
            TimeRange::deserialize(serde::de::value::StrDeserializer::<D::Error>::new(other))
                .map(Some)
        }
    }
}

/// The model's call as a query; errors are for the model to read.
pub fn parse(arguments: &str) -> Result<SearchQuery, ArgumentError> {
    let args: Args = crate::builtins::parse_arguments(&parameters(), arguments)?;
    let query = args.query.trim().to_owned();
    if query.is_empty() {
        return Err("`query` must not be blank".into());
    }
    Ok(SearchQuery {
        query,
        max_results: args.max_results.unwrap_or(10),
        time_range: args.time_range,
    })
}

crate::builtins::built_in!(
    WebSearch,
    offered = |offer| offer.assistant.features.web_search && offer.host.config.web_search.is_some(),
    run = |cx| async move { Ok(WebService::of(cx.rt).web_search(cx.session, cx.call).await) }
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments() {
        let q = parse(r#"{"query": " tokio 2026 ", "time_range": "week"}"#).unwrap();
        assert_eq!(
            (q.query.as_str(), q.max_results, q.time_range),
            ("tokio 2026", 10, Some(TimeRange::Week))
        );
        let any = parse(r#"{"query": "x", "time_range": ""}"#).unwrap();
        assert_eq!(any.time_range, None, "empty means no limit");
        for (bad, says) in [
            (r#"{}"#, "query"),
            (r#"{"query": "x", "max_results": 31}"#, "max_results"),
            (r#"{"query": "x", "time_range": "decade"}"#, "time_range"),
            (r#"{"query": "x", "engine": "bing"}"#, "engine"),
            (r#"{"query": "   "}"#, "blank"),
            ("not json", "not JSON"),
        ] {
            let err = parse(bad).unwrap_err();
            assert!(err.contains(says), "{bad}: {err}");
        }
    }
}
