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
    assert_eq!(tool_result(&small, 1024).unwrap(), "hello");
    let big = CallToolResult::success(vec![ContentBlock::text("x".repeat(MAX_RESULT_BYTES))]);
    let err = tool_result(&big, MAX_RESULT_BYTES).unwrap_err();
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
