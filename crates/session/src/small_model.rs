//! The small model: one service for every one-shot call the platform
//! makes on its own behalf — `llm` expression leaves (R-EX-1), the goal
//! judge (R-GL-2), the workflow edge judge (design §3.3) and webFetch's
//! reading of long pages (R-WFF-2).
//!
//! One provider rule: the call goes to the assistant's provider when that
//! provider names a small model (`small_model` of a named provider), else
//! to the default provider with its small model (`RTC_SMALL_MODEL`, or its
//! default model when none is set).

use futures::StreamExt;
use rtc_core::llm::{ChatMessage, ChatRequest, LlmEvent, OutputFormat};
use rtc_expr::{LlmLeafEvaluator, LlmOutputType};
use rtc_protocol::Assistant;
use serde_json::Value;

use crate::context::SessionCtx;
use crate::kernel::{KernelConfig, Provider};
use crate::usage::{CallKind, UsageLedger, UsageTag};

/// A provider and the small model it serves.
#[derive(Clone)]
pub struct SmallModel<'a> {
    pub provider: &'a Provider,
    pub model: &'a str,
    /// The provider's name (usage is recorded under it).
    pub provider_name: &'a str,
    /// Where its calls' usage is counted, and for whom.
    meter: Option<(&'a UsageLedger, UsageTag)>,
}

impl<'a> SmallModel<'a> {
    /// The small model for `assistant`'s calls (see the module doc).
    pub fn for_assistant(config: &'a KernelConfig, assistant: &Assistant) -> Self {
        let named = assistant
            .llm
            .provider
            .as_ref()
            .and_then(|p| config.providers.get_key_value(p));
        if let Some((name, p)) = named
            && let Some(model) = &p.small_model
        {
            return Self {
                provider: p,
                model,
                provider_name: name,
                meter: None,
            };
        }
        let p = &config.default_provider;
        Self {
            provider: p,
            model: p.small_model.as_deref().unwrap_or(&p.default_model),
            provider_name: "default",
            meter: None,
        }
    }

    /// The small model of `ctx`'s assistant, its calls counted for `ctx`.
    pub fn for_session<H: crate::kernel::Host>(
        kernel: &'a crate::kernel::Kernel<H>,
        ctx: &SessionCtx,
    ) -> Self {
        Self::for_assistant(&kernel.settings, &ctx.config.assistant)
            .metered(&kernel.usage, UsageTag::of(ctx, CallKind::Small))
    }

    /// The same, its calls counted in `ledger` for `tag`.
    pub fn metered(mut self, ledger: &'a UsageLedger, tag: UsageTag) -> Self {
        self.meter = Some((ledger, tag));
        self
    }

    /// The whole answer to a system instruction and a user text, at
    /// temperature 0; `json` asks for a JSON object.
    pub async fn ask(&self, system: &str, user: String, json: bool) -> Result<String, AnswerError> {
        let messages = vec![
            ChatMessage::System {
                content: system.to_owned(),
            },
            ChatMessage::User { content: user },
        ];
        let output = if json {
            OutputFormat::JsonObject
        } else {
            OutputFormat::Text
        };
        self.complete(messages, output).await
    }

    /// The whole answer to `messages` at temperature 0, in `output`'s shape.
    pub async fn complete(
        &self,
        messages: Vec<ChatMessage>,
        output: OutputFormat,
    ) -> Result<String, AnswerError> {
        let request = ChatRequest {
            model: self.model.to_owned(),
            messages,
            output,
            temperature: Some(0.0),
            ..ChatRequest::default()
        };
        let mut stream = self.provider.client.stream(request);
        let mut answer = None;
        while let Some(ev) = stream.next().await {
            match ev {
                Ok(LlmEvent::Done(r)) => {
                    if let (Some((ledger, tag)), Some(usage)) = (&self.meter, &r.usage) {
                        ledger.record(tag, self.provider_name, self.model, usage);
                    }
                    answer = Some(r.content);
                }
                Ok(LlmEvent::TextDelta(_)) => {}
                Err(e) => return Err(e.into()),
            }
        }
        answer.ok_or(AnswerError::NoAnswer)
    }

    /// An evaluator of `llm` leaves over `transcript`.
    pub fn leaves(self, transcript: String) -> LeafEvaluator<'a> {
        LeafEvaluator {
            model: self,
            transcript,
        }
    }
}

/// Why a model gave no whole answer (the small model's, or a reasoner's).
#[derive(Debug, thiserror::Error)]
pub enum AnswerError {
    /// The provider refused or failed the request.
    #[error(transparent)]
    Llm(#[from] rtc_core::llm::LlmError),
    /// The stream ended without a final answer.
    #[error("the model gave no answer")]
    NoAnswer,
    /// The answer is not in the shape asked for (the message says how).
    #[error("{0}")]
    Unreadable(String),
}

/// `llm` leaves (R-EX-1): a typed value extracted from the recent
/// conversation as JSON.
pub struct LeafEvaluator<'a> {
    model: SmallModel<'a>,
    /// The recent conversation as plain text.
    transcript: String,
}

impl LlmLeafEvaluator for LeafEvaluator<'_> {
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
        let text = self
            .model
            .ask(&system, user, true)
            .await
            .map_err(|e| e.to_string())?;
        let parsed: Value = serde_json::from_str(text.trim())
            .map_err(|_| format!("the model did not answer JSON: {text:.200}"))?;
        parsed
            .get("value")
            .cloned()
            .ok_or_else(|| "the model's answer has no `value`".to_owned())
    }
}
