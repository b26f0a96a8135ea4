//! The spans of a conversation, in the OpenTelemetry GenAI semantic
//! conventions: `invoke_agent {assistant}` per turn, `chat {model}` per
//! model call and `execute_tool {tool}` per tool call beneath it, with
//! `rtc.session.id` and `rtc.workspace.id` on each. They are `tracing`
//! spans at TRACE level under the target [`SPAN_TARGET`]: nothing records
//! them unless the binary exports them (`OTEL_EXPORTER_OTLP_ENDPOINT`), so
//! they cost next to nothing otherwise. Message content (prompts, answers,
//! tool arguments and results) is recorded only when
//! `RuntimeConfig::capture_content` is set; tool results are the scrubbed
//! ones the model reads, never a secret.

use rtc_core::llm::{ChatMessage, ChatResponse, ToolCall};
use tracing::Span;
use tracing::field::Empty;

use crate::context::SessionCtx;

/// The target of every span of this module.
pub const SPAN_TARGET: &str = "gen_ai";
/// Longest content recorded in one attribute, in bytes.
const MAX_CONTENT_BYTES: usize = 16 * 1024;

/// `text` cut to the attribute limit at a character boundary.
fn capped(text: String) -> String {
    if text.len() <= MAX_CONTENT_BYTES {
        return text;
    }
    let mut at = MAX_CONTENT_BYTES;
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    format!("{}…", &text[..at])
}

/// The span of one turn.
pub fn turn_span(ctx: &SessionCtx, assistant: &rtc_protocol::Assistant, turn_id: &str) -> Span {
    let agent = assistant.id.as_deref().unwrap_or(&assistant.name);
    tracing::span!(target: SPAN_TARGET, tracing::Level::TRACE, "invoke_agent",
        otel.name = %format!("invoke_agent {}", assistant.name),
        otel.kind = "internal",
        otel.status_code = Empty,
        otel.status_description = Empty,
        gen_ai.operation.name = "invoke_agent",
        gen_ai.agent.id = %agent,
        gen_ai.agent.name = %assistant.name,
        gen_ai.conversation.id = %ctx.id,
        rtc.session.id = %ctx.id,
        rtc.workspace.id = %ctx.workspace,
        rtc.turn.id = %turn_id,
        rtc.test_mode = ctx.config.test.is_some(),
    )
}

/// The span of one model call.
pub fn chat_span(ctx: &SessionCtx, model: &str, messages: &[ChatMessage], capture: bool) -> Span {
    let span = tracing::span!(target: SPAN_TARGET, tracing::Level::TRACE, "chat",
        otel.name = %format!("chat {model}"),
        otel.kind = "client",
        otel.status_code = Empty,
        otel.status_description = Empty,
        gen_ai.operation.name = "chat",
        gen_ai.system = "openai",
        gen_ai.provider.name = "openai",
        gen_ai.request.model = %model,
        gen_ai.response.model = Empty,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        gen_ai.response.finish_reasons = Empty,
        gen_ai.input.messages = Empty,
        gen_ai.output.messages = Empty,
        error.type = Empty,
        rtc.session.id = %ctx.id,
        rtc.workspace.id = %ctx.workspace,
    );
    if capture && !span.is_disabled() {
        let input = serde_json::to_string(messages).unwrap_or_default();
        span.record("gen_ai.input.messages", capped(input));
    }
    span
}

/// What the model answered, on its call's span.
pub fn record_answer(span: &Span, r: &ChatResponse, capture: bool) {
    if span.is_disabled() {
        return;
    }
    if let Some(u) = &r.usage {
        // As i64: an u64 field reaches OpenTelemetry as a string.
        let int = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        span.record("gen_ai.usage.input_tokens", int(u.prompt_tokens));
        span.record("gen_ai.usage.output_tokens", int(u.completion_tokens));
    }
    let finish = r
        .finish_reason
        .as_deref()
        .unwrap_or(if r.tool_calls.is_empty() {
            "stop"
        } else {
            "tool_calls"
        });
    span.record("gen_ai.response.finish_reasons", format!("[\"{finish}\"]"));
    if capture {
        let calls: Vec<_> = r
            .tool_calls
            .iter()
            .map(|c| serde_json::json!({"id": c.id, "name": c.name, "arguments": c.arguments}))
            .collect();
        let out =
            serde_json::json!([{"role": "assistant", "content": r.content, "tool_calls": calls}]);
        span.record("gen_ai.output.messages", capped(out.to_string()));
    }
}

/// A failure on `span`: its status and `error.type`.
pub fn record_error(span: &Span, kind: &str, message: &str) {
    span.record("otel.status_code", "ERROR");
    span.record("otel.status_description", message);
    span.record("error.type", kind);
}

/// The span of one tool call.
pub fn tool_span(ctx: &SessionCtx, call: &ToolCall, capture: bool) -> Span {
    let span = tracing::span!(target: SPAN_TARGET, tracing::Level::TRACE, "execute_tool",
        otel.name = %format!("execute_tool {}", call.name),
        otel.kind = "internal",
        otel.status_code = Empty,
        otel.status_description = Empty,
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = %call.name,
        gen_ai.tool.call.id = %call.id,
        gen_ai.tool.call.arguments = Empty,
        gen_ai.tool.call.result = Empty,
        error.type = Empty,
        rtc.session.id = %ctx.id,
        rtc.workspace.id = %ctx.workspace,
    );
    if capture && !span.is_disabled() {
        span.record("gen_ai.tool.call.arguments", capped(call.arguments.clone()));
    }
    span
}

/// A tool call's outcome on its span.
pub fn record_tool(span: &Span, is_error: bool, content: &str, capture: bool) {
    if span.is_disabled() {
        return;
    }
    if is_error {
        record_error(span, "tool_error", "the tool answered an error");
    }
    if capture {
        span.record("gen_ai.tool.call.result", capped(content.to_owned()));
    }
}
