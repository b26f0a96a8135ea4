//! `webFetch {url, prompt}` (R-WFF-1..5).

use crate::builtins::ArgumentError;
use crate::features::web::WebService;
use rtc_core::llm::ToolSpec;
use serde::Deserialize;
use serde_json::{Value, json};

pub const NAME: &str = "webFetch";

const DESCRIPTION: &str = "Fetch a web page and extract information from it. The page is converted to Markdown (main content only); long pages are read for you by a small model that answers your prompt.
- url: the full http(s) URL (at most 2,000 characters).
- prompt: what to extract from the page, e.g. \"the supported versions and their end-of-life dates\".
- Pages behind a login (Google Docs, Confluence, Jira, private GitHub repositories) cannot be read; use a dedicated tool for those.
- If the page redirects to another host, you get the redirect URL instead of the content; call webFetch again with it if you want to follow it.
- Pages are cached for 30 minutes, so fetching the same URL again is cheap.";

pub fn parameters() -> Value {
    json!({
        "type": "object",
        "properties": {
            "url": {"type": "string", "minLength": 1, "description": "The full http or https URL to fetch."},
            "prompt": {"type": "string", "minLength": 1, "description": "What to extract from the page."}
        },
        "required": ["url", "prompt"],
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

/// A checked webFetch call.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct FetchCall {
    pub url: String,
    pub prompt: String,
}

/// The model's call; errors are for the model to read (the URL itself is
/// checked by the fetcher).
pub fn parse(arguments: &str) -> Result<FetchCall, ArgumentError> {
    let call: FetchCall = crate::builtins::parse_arguments(&parameters(), arguments)?;
    if call.prompt.trim().is_empty() {
        return Err("`prompt` must say what to extract from the page".into());
    }
    Ok(call)
}

crate::builtins::built_in!(
    WebFetch,
    offered = |offer| offer.assistant.features.web_fetch && offer.host.config.web_fetch.is_some(),
    run = |cx| async move { Ok(WebService::of(cx.rt).web_fetch(cx.session, cx.call).await) }
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments() {
        let c = parse(r#"{"url": "https://example.org/a", "prompt": "the price"}"#).unwrap();
        assert_eq!(c.url, "https://example.org/a");
        assert!(
            parse(r#"{"url": "https://example.org/a"}"#)
                .unwrap_err()
                .contains("prompt")
        );
        assert!(
            parse(r#"{"url": "https://e.org", "prompt": "  "}"#)
                .unwrap_err()
                .contains("prompt")
        );
        assert!(
            parse(r#"{"url": 5, "prompt": "p"}"#)
                .unwrap_err()
                .contains("url")
        );
    }
}
