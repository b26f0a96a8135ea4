//! The web built-ins in a session (R-WS, R-WFF); webFetch answers the
//! model's prompt over a long page with the small model.

use super::{web_fetch, web_search};
use rtc_core::llm::ToolCall;
use rtc_tools::web_fetch::{Fetched, Page};
use serde_json::json;

use super::WebService;
use crate::Inner;
use crate::session::SessionCtx;
use crate::small_model::{AnswerError, SmallModel};
use crate::tool::CallOutcome;

/// Most page text handed to the small model (it reads a long page for the
/// model's prompt).
const EXTRACTION_INPUT_BYTES: usize = 400_000;

/// In test mode the web built-ins make no request: a conversation test's
/// scripted result answers, else an error the model can read.
async fn test_mode_answer(ctx: &SessionCtx, name: &str) -> Option<CallOutcome> {
    ctx.config.test.as_ref()?;
    Some(match crate::mocks::next_scripted(ctx, name).await {
        Some(result) => match crate::mocks::scripted_outcome(result) {
            Ok(v) => CallOutcome::ok(v),
            Err(e) => CallOutcome::error(e.0),
        },
        None => CallOutcome::error(format!(
            "{name} is not available in a test-mode session (it would leave the server); answer without it"
        )),
    })
}

impl WebService<'_> {
    pub(crate) async fn web_search(self, ctx: &SessionCtx, call: &ToolCall) -> CallOutcome {
        let Some(search) = &self.config.web_search else {
            return CallOutcome::error("webSearch is not configured on this server");
        };
        let query = match web_search::parse(&call.arguments) {
            Ok(q) => q,
            Err(e) => return CallOutcome::error(e),
        };
        if let Some(answer) = test_mode_answer(ctx, web_search::NAME).await {
            return answer;
        }
        match search.search(&query).await {
            Ok(outcome) => CallOutcome::ok(json!(outcome)),
            Err(e) => {
                CallOutcome::error(format!("{e}. Try again later or answer without searching."))
            }
        }
    }

    pub(crate) async fn web_fetch(self, ctx: &SessionCtx, call: &ToolCall) -> CallOutcome {
        let Some(fetcher) = &self.config.web_fetch else {
            return CallOutcome::error("webFetch is not configured on this server");
        };
        let args = match web_fetch::parse(&call.arguments) {
            Ok(a) => a,
            Err(e) => return CallOutcome::error(e),
        };
        if let Some(answer) = test_mode_answer(ctx, web_fetch::NAME).await {
            return answer;
        }
        let (fetched, cached) = match fetcher.fetch(&ctx.workspace, &args.url).await {
            Ok(f) => f,
            Err(e) => return CallOutcome::error(e.to_string()),
        };
        match fetched {
            Fetched::Redirect { from, to, status } => CallOutcome::ok(json!({
                "url": from,
                "redirect_url": to,
                "status": status,
                "message": "The page redirects to a different host. Call webFetch again with redirect_url to read it."
            })),
            Fetched::Page(page) => {
                let threshold = fetcher.config().extract_threshold_bytes;
                if page.content.len() <= threshold {
                    return CallOutcome::ok(page_result(&page, &page.content, cached, false));
                }
                match self.extract(ctx, &page, &args.prompt).await {
                    Ok(answer) => CallOutcome::ok(page_result(&page, &answer, cached, true)),
                    Err(e) => CallOutcome::error(format!(
                        "the page is {} bytes of Markdown and reading it for your prompt failed: {e}",
                        page.content.len()
                    )),
                }
            }
        }
    }

    /// The small model answers `prompt` from the page.
    async fn extract(
        self,
        ctx: &SessionCtx,
        page: &Page,
        prompt: &str,
    ) -> Result<String, AnswerError> {
        let mut text = page.content.as_str();
        if text.len() > EXTRACTION_INPUT_BYTES {
            let mut cut = EXTRACTION_INPUT_BYTES;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text = &text[..cut];
        }
        let system = "You read a web page for another assistant. Answer its request using only the page. Be concise and exact: keep figures, names, dates, versions and code as written, and include the links that matter. If the page does not contain the answer, say so plainly.";
        let user = format!("Request: {prompt}\n\nPage: {}\n\n---\n{text}", page.url);
        SmallModel::for_session::<Inner>(self.rt, ctx)
            .ask(system, user, false)
            .await
    }
}

fn page_result(page: &Page, content: &str, cached: bool, extracted: bool) -> serde_json::Value {
    json!({
        "url": page.url,
        "title": page.title,
        "content_type": page.content_type,
        "content": content,
        "extracted_for_prompt": extracted,
        "truncated": page.truncated,
        "from_cache": cached,
    })
}
