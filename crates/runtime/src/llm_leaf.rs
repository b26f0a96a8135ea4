//! The small model's one-shot answers: `llm` expression leaves (R-EX-1)
//! extract a typed value from the recent conversation as JSON, and
//! [`answer_text`] serves webFetch's reading of long pages.

use futures::StreamExt;
use rtc_core::llm::{ChatMessage, ChatRequest, LlmEvent};
use rtc_expr::{LlmLeafEvaluator, LlmOutputType};
use serde_json::Value;

use crate::Provider;

pub(crate) struct SmallModelLeaf<'a> {
    pub provider: &'a Provider,
    pub model: &'a str,
    /// The recent conversation as plain text.
    pub transcript: String,
}

impl LlmLeafEvaluator for SmallModelLeaf<'_> {
    async fn evaluate(&self, prompt: &str, output_type: LlmOutputType) -> Result<Value, String> {
        let kind = match output_type {
            LlmOutputType::String => "a string",
            LlmOutputType::Number => "a number",
            LlmOutputType::Boolean => "a boolean (true or false)",
        };
        let system = format!(
            "You extract one value from a conversation. Answer with a JSON object {{\"value\": V}} where V is {kind}. Answer only the JSON."
        );
        let user = format!("Conversation:\n{}\n\nQuestion: {prompt}", self.transcript);
        let request = ChatRequest {
            model: self.model.to_owned(),
            messages: vec![
                ChatMessage::System { content: system },
                ChatMessage::User { content: user },
            ],
            json_output: true,
            temperature: Some(0.0),
            ..ChatRequest::default()
        };
        let text = answer_text(self.provider, request).await?;
        let parsed: Value = serde_json::from_str(text.trim())
            .map_err(|_| format!("the model did not answer JSON: {text:.200}"))?;
        parsed
            .get("value")
            .cloned()
            .ok_or_else(|| "the model's answer has no `value`".to_owned())
    }
}

/// The text of the model's whole answer to `request`.
pub(crate) async fn answer_text(
    provider: &Provider,
    request: ChatRequest,
) -> Result<String, String> {
    let mut stream = provider.client.stream(request);
    let mut answer = None;
    while let Some(ev) = stream.next().await {
        match ev {
            Ok(LlmEvent::Done(r)) => answer = Some(r.content),
            Ok(LlmEvent::TextDelta(_)) => {}
            Err(e) => return Err(e.to_string()),
        }
    }
    answer.ok_or_else(|| "the model gave no answer".to_owned())
}
