use super::*;

#[test]
fn backoff_doubles_up_to_a_minute() {
    let mut waits = Vec::new();
    let mut previous = None;
    for _ in 0..7 {
        let next = next_backoff(previous);
        waits.push(next.as_secs());
        previous = Some(next);
    }
    assert_eq!(waits, [5, 10, 20, 40, 60, 60, 60]);
}

#[test]
fn evict_drops_a_prefix_only() {
    let pool = McpPool::default();
    for key in ["ws1/mcp_a/1", "ws1/mcp_a/2", "ws1/mcp_ab/1", "ws2/mcp_a/1"] {
        pool.slot(key);
    }
    pool.evict("ws1/mcp_a/");
    assert_eq!(pool.keys(), ["ws1/mcp_ab/1", "ws2/mcp_a/1"]);
}

#[test]
fn idle_slots_are_swept() {
    let pool = McpPool::new(Duration::from_millis(40));
    pool.slot("old");
    let held = pool.slot("busy");
    std::thread::sleep(Duration::from_millis(60));
    pool.slot("new");
    assert_eq!(pool.keys(), ["busy", "new"], "a slot in use stays");
    drop(held);
    std::thread::sleep(Duration::from_millis(60));
    pool.sweep_idle();
    assert!(pool.keys().is_empty(), "{:?}", pool.keys());
}

#[test]
fn results_over_the_limit_are_an_error_naming_both_sizes() {
    use rmcp::model::{CallToolResult, ContentBlock};
    let small = CallToolResult::success(vec![ContentBlock::text("hello")]);
    assert_eq!(tool_result(&small, 1024, None).unwrap().value, "hello");
    let big = CallToolResult::success(vec![ContentBlock::text("x".repeat(MAX_RESULT_BYTES))]);
    let err = tool_result(&big, MAX_RESULT_BYTES, None).unwrap_err();
    let McpError::TooLarge { size, limit } = err else {
        panic!("{err:?}");
    };
    assert!(size > MAX_RESULT_BYTES && limit == MAX_RESULT_BYTES);
    assert_eq!(
        err_text(size),
        format!("the MCP result is {size} bytes; the limit is 1048576")
    );
}

fn err_text(size: usize) -> String {
    McpError::TooLarge {
        size,
        limit: MAX_RESULT_BYTES,
    }
    .to_string()
}

/// Images, audio and binary resources are described, never sent as
/// base64 text; text resources are inlined (R-RN-6).
#[test]
fn content_reads_as_text_without_base64() {
    let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
    let cases = [
        (
            serde_json::json!({"type": "text", "text": "hi"}),
            "hi".to_owned(),
        ),
        (
            serde_json::json!({"type": "image", "data": png, "mimeType": "image/png"}),
            "[image: image/png, 70 bytes]".to_owned(),
        ),
        (
            serde_json::json!({"type": "audio", "data": "A".repeat(4 * 2048), "mimeType": "audio/wav"}),
            "[audio: audio/wav, 6.0 KB]".to_owned(),
        ),
        (
            serde_json::json!({"type": "resource", "resource": {"uri": "test://r/1", "text": "body"}}),
            "[resource test://r/1]\nbody".to_owned(),
        ),
        (
            serde_json::json!({"type": "resource", "resource": {"uri": "test://r/2", "blob": "AAAA", "mimeType": "application/octet-stream"}}),
            "[resource test://r/2: application/octet-stream, 3 bytes]".to_owned(),
        ),
        (
            serde_json::json!({"type": "resource_link", "uri": "test://r/3", "name": "r3"}),
            "[resource link: r3 <test://r/3>]".to_owned(),
        ),
    ];
    for (item, want) in cases {
        assert_eq!(
            content_text(&item).as_deref(),
            Some(want.as_str()),
            "{item}"
        );
    }
    assert_eq!(content_text(&serde_json::json!({"type": "hologram"})), None);
}

/// A structured result must match the tool's outputSchema.
#[test]
fn structured_results_are_checked_against_the_output_schema() {
    let schema = serde_json::json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
    assert!(check_output(&schema, &serde_json::json!({"n": 3})).is_ok());
    let e = check_output(&schema, &serde_json::json!({"n": "three"})).unwrap_err();
    assert!(e.to_string().contains("outputSchema"), "{e}");
    assert!(e.to_string().contains("/n"), "{e}");
}
