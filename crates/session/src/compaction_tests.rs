//! Where a compaction cuts, what the summarizer reads, and what a
//! compacted request's system message carries.

use rtc_protocol::MessageToolCall;

use super::*;
use crate::history::message;

fn user(text: &str) -> Message {
    message(MessageRole::User, text)
}

fn call(id: &str) -> Message {
    let mut m = message(MessageRole::Assistant, "");
    m.tool_calls = vec![MessageToolCall {
        id: id.into(),
        name: "lookup".into(),
        arguments: "{\"q\":1}".into(),
    }];
    m
}

fn result(id: &str, text: &str) -> Message {
    let mut m = message(MessageRole::Tool, text);
    m.tool_call_id = Some(id.into());
    m.name = Some("lookup".into());
    m
}

#[test]
fn the_cut_keeps_what_fits_and_never_lands_on_a_result() {
    // user, call, result, answer, user, call, result, answer
    let h = vec![
        user("a"),
        call("c1"),
        result("c1", "r1"),
        message(MessageRole::Assistant, "done 1"),
        user("b"),
        call("c2"),
        result("c2", "r2"),
        message(MessageRole::Assistant, "done 2"),
    ];
    let counts = vec![10; h.len()];
    // 40 tokens fit: the last four messages (index 4 on).
    assert_eq!(cut_point(&h, &counts, 0, 40), Some(4));
    // 30: from the second call on (it keeps its result).
    assert_eq!(cut_point(&h, &counts, 0, 30), Some(5));
    // 20 would start at 6, a result: 7.
    assert_eq!(cut_point(&h, &counts, 0, 20), Some(7));
    // Nothing fits: the last place there is.
    assert_eq!(cut_point(&h, &counts, 0, 0), Some(7));
    // Everything fits from the start: the first place after it.
    assert_eq!(cut_point(&h, &counts, 0, 1_000), Some(1));
    // From a summary's start at 7, nothing comes after.
    assert_eq!(cut_point(&h, &counts, 7, 1_000), None);
}

#[test]
fn a_result_stored_later_stays_with_its_call() {
    // The call's result arrives after a user message (a report).
    let h = vec![
        user("a"),
        call("c1"),
        user("meanwhile"),
        message(MessageRole::Assistant, "waiting"),
        result("c1", "late"),
        message(MessageRole::Assistant, "got it"),
    ];
    let counts = vec![10; h.len()];
    // Places 2, 3 and 4 separate c1 from its result.
    assert_eq!(cut_point(&h, &counts, 0, 25), Some(5));
    assert_eq!(cut_point(&h, &counts, 0, 1_000), Some(1));
}

#[test]
fn the_summarizer_reads_each_message_cut() {
    let long = "x".repeat(5_000);
    let h = vec![user("find flights"), call("c1"), result("c1", &long)];
    let t = transcript(&h);
    assert!(t.starts_with("User: find flights\nAssistant called lookup({\"q\":1})\n"));
    assert!(t.contains("Result of lookup: xxx"));
    assert!(t.len() < 2_200, "{}", t.len());
    assert!(t.trim_end().ends_with("[…]"));
    assert_eq!(tail("héllo", 3), "[…] llo");
}

#[test]
fn the_summary_and_notes_follow_the_prompt() {
    let summary = ContextSummary {
        session_id: "s".into(),
        from_message_id: "m".into(),
        summary: "They chose Lisbon.".into(),
        summarized_messages: 4,
        tokens_before: 1,
        tokens_after: 1,
        created_at: 1,
    };
    assert_eq!(compacted_system("Be brief.", None, &[]), "Be brief.");
    let s = compacted_system("Be brief.", Some(&summary), &["Open todos: book".into()]);
    assert!(s.starts_with("Be brief.\n\n## Earlier in this conversation\n"));
    assert!(s.contains("They chose Lisbon.\n\nOpen todos: book"));
}

#[test]
fn a_refusal_states_the_window() {
    let openai = "This model's maximum context length is 8,192 tokens. However, your messages resulted in 9000 tokens.";
    assert_eq!(stated_window(openai), Some(8_192));
    assert_eq!(stated_count(openai), Some(9_000));
    assert_eq!(stated_window("prompt is too long"), None);
}
