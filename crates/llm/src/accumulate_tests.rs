use rtc_core::llm::{ToolCall, Usage};
use serde_json::Value;

use super::*;

/// Fold a recorded SSE body; returns the text deltas and the answer.
fn replay(sse: &str) -> (Vec<String>, ChatResponse) {
    let mut acc = Accumulator::default();
    let mut deltas = Vec::new();
    for line in sse.lines() {
        let Some(data) = line.strip_prefix("data:").map(str::trim) else {
            continue;
        };
        if data == "[DONE]" {
            break;
        }
        let chunk: Value = serde_json::from_str(data).unwrap();
        if let Some(t) = acc.push(&chunk).unwrap() {
            deltas.push(t);
        }
    }
    (deltas, acc.finish())
}

fn call(id: &str, name: &str, args: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: args.into(),
    }
}

#[test]
fn parallel_tool_calls_with_indexes_and_usage() {
    let (deltas, r) = replay(include_str!(
        "../tests/fixtures/openai_parallel_tool_calls.sse"
    ));
    assert!(deltas.is_empty());
    assert_eq!(
        r.tool_calls,
        vec![
            call("call_a", "get_weather", r#"{"city":"Paris"}"#),
            call("call_b", "get_time", r#"{"tz":"CET"}"#)
        ]
    );
    assert_eq!(r.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(
        r.usage,
        Some(Usage {
            prompt_tokens: 82,
            completion_tokens: 31,
            cached_tokens: 0
        })
    );
}

#[test]
fn deltas_without_index_and_id_only_first() {
    let (_, r) = replay(include_str!("../tests/fixtures/no_index_late_id.sse"));
    assert_eq!(
        r.tool_calls,
        vec![call("call_9", "query_order", r#"{"order_id": "A1"}"#)]
    );
    assert_eq!(
        r.finish_reason.as_deref(),
        Some("tool_calls"),
        "empty finish_reason ignored, delta-less finish chunk read"
    );
}

#[test]
fn reasoning_content_is_not_answer_text() {
    let (deltas, r) = replay(include_str!("../tests/fixtures/reasoning_then_text.sse"));
    assert_eq!(deltas, ["Hello", " there!"]);
    assert_eq!(r.content, "Hello there!");
    assert_eq!(r.finish_reason.as_deref(), Some("stop"));
    assert!(r.tool_calls.is_empty());
}

#[test]
fn a_new_id_at_a_reused_index_is_a_new_call_and_object_arguments_are_text() {
    let (_, r) = replay(include_str!("../tests/fixtures/same_index_new_id.sse"));
    assert_eq!(
        r.tool_calls,
        vec![
            call("call_1", "lookup", r#"{"q":"a"}"#),
            call("call_2", "lookup", r#"{"q":"b"}"#)
        ]
    );
}

#[test]
fn a_whole_completion_is_read_too() {
    let mut acc = Accumulator::default();
    let body: Value =
        serde_json::from_str(include_str!("../tests/fixtures/whole_completion.json")).unwrap();
    acc.push(&body).unwrap();
    let r = acc.finish();
    assert_eq!(
        r.tool_calls,
        vec![call("call_z", "echo", r#"{"message":"hi"}"#)]
    );
    assert_eq!(
        r.usage,
        Some(Usage {
            prompt_tokens: 5,
            completion_tokens: 7,
            cached_tokens: 0
        })
    );
}

#[test]
fn missing_ids_are_generated_and_errors_surface() {
    let mut acc = Accumulator::default();
    let chunk: Value = serde_json::from_str(
        r#"{"choices":[{"delta":{"tool_calls":[{"function":{"name":"f","arguments":"{}"}}]}}]}"#,
    )
    .unwrap();
    acc.push(&chunk).unwrap();
    let first = acc.finish().tool_calls;
    assert_eq!(first.len(), 1);
    assert!(first[0].id.starts_with("call_rtc"), "{:?}", first[0].id);
    // Two answers without ids get different ones: a second step never
    // reuses the id of a call that ran.
    let mut acc = Accumulator::default();
    acc.push(&chunk).unwrap();
    assert_ne!(acc.finish().tool_calls[0].id, first[0].id);
    let mut acc = Accumulator::default();
    let err: Value = serde_json::from_str(r#"{"error":{"message":"overloaded"}}"#).unwrap();
    assert!(acc.push(&err).is_err());
}

#[test]
fn a_repeated_id_in_one_answer_is_replaced_and_refusals_are_kept() {
    let mut acc = Accumulator::default();
    let chunk: Value = serde_json::from_str(
        r#"{"choices":[{"delta":{"tool_calls":[
            {"index":0,"id":"call_0","function":{"name":"f","arguments":"{}"}},
            {"index":1,"id":"call_0","function":{"name":"g","arguments":"{}"}}]}}]}"#,
    )
    .unwrap();
    acc.push(&chunk).unwrap();
    let calls = acc.finish().tool_calls;
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_eq!(calls[0].id, "call_0");
    assert_ne!(calls[1].id, "call_0");
    let mut acc = Accumulator::default();
    for piece in ["I can't ", "help with that."] {
        let chunk = serde_json::json!({"choices":[{"delta":{"refusal": piece}}]});
        assert_eq!(acc.push(&chunk).unwrap(), None, "a refusal is not text");
    }
    assert!(!acc.finished());
    let stop = serde_json::json!({"choices":[{"delta":{},"finish_reason":"stop"}]});
    acc.push(&stop).unwrap();
    assert!(acc.finished());
    assert_eq!(
        acc.finish().refusal.as_deref(),
        Some("I can't help with that.")
    );
}

#[test]
fn cached_prompt_tokens_are_read() {
    let mut acc = Accumulator::default();
    let chunk: Value = serde_json::from_str(
        r#"{"choices":[],"usage":{"prompt_tokens":2006,"completion_tokens":300,"prompt_tokens_details":{"cached_tokens":1920}}}"#,
    )
    .unwrap();
    acc.push(&chunk).unwrap();
    let r = acc.finish();
    assert_eq!(
        r.usage,
        Some(Usage {
            prompt_tokens: 2006,
            completion_tokens: 300,
            cached_tokens: 1920
        })
    );
}
