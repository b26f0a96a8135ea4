use super::*;
use crate::web_fetch::Page;

fn page(content_bytes: usize) -> Fetched {
    Fetched::Page(Page {
        url: "https://example.com/".into(),
        content_type: "text/plain".into(),
        title: None,
        content: "x".repeat(content_bytes),
        bytes: content_bytes,
        truncated: false,
        extraction: None,
    })
}

#[test]
fn entries_expire() {
    let cache = PageCache::new(Duration::from_millis(30), 1 << 20);
    cache.insert("ws1", "a", page(10));
    assert_eq!(cache.get("ws1", "a"), Some(page(10)));
    std::thread::sleep(Duration::from_millis(60));
    assert_eq!(cache.get("ws1", "a"), None, "expired");
}

#[test]
fn workspaces_do_not_share_entries() {
    let cache = PageCache::new(Duration::from_secs(60), 1 << 20);
    cache.insert("ws1", "https://example.com/", page(10));
    assert_eq!(cache.get("ws1", "https://example.com/"), Some(page(10)));
    assert_eq!(cache.get("ws2", "https://example.com/"), None);
}

/// A budget of N bytes never holds more than N, whatever is inserted.
#[test]
fn the_byte_budget_holds() {
    let budget = 20_000;
    let cache = PageCache::new(Duration::from_secs(60), budget);
    for i in 0..50 {
        cache.insert("ws1", &format!("https://example.com/{i}"), page(3_000));
        let held = cache.weighted_size();
        assert!(held <= budget, "{held} bytes held after {i} inserts");
    }
    assert!(cache.weighted_size() > 0);
    // An answer larger than the budget is not kept at all.
    cache.insert("ws1", "https://example.com/huge", page(30_000));
    assert_eq!(cache.get("ws1", "https://example.com/huge"), None);
    assert!(cache.weighted_size() <= budget);
}
