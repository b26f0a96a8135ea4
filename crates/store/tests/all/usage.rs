//! Model usage: batches add to their rows; sums per session and per
//! workspace by assistant and day.

use super::*;
use rtc_store::{UsageCounts, UsageKey};

fn key(session: &str, assistant: &str, day: &str, kind: &str) -> UsageKey {
    UsageKey {
        workspace_id: "ws_u".into(),
        session_id: session.into(),
        root_session_id: session.into(),
        assistant_id: assistant.into(),
        task_id: String::new(),
        day: day.into(),
        provider: "default".into(),
        model: "gpt-4o-mini".into(),
        kind: kind.into(),
    }
}

fn used(calls: i64, input: i64, output: i64, cached: i64) -> UsageCounts {
    UsageCounts {
        calls,
        input_tokens: input,
        output_tokens: output,
        cached_tokens: cached,
    }
}

on_both!(usage_adds_up_per_session_and_per_day, |store| {
    store.create_workspace("ws_u", "u", "key-u").await?;
    store.create_workspace("ws_v", "v", "key-v").await?;
    store
        .add_usage(&[
            (
                key("s1", "a", "2026-12-04", "turn"),
                used(2, 1_000, 200, 512),
            ),
            (key("s1", "a", "2026-12-04", "small"), used(1, 300, 20, 0)),
            (key("s2", "b", "2026-12-05", "turn"), used(1, 50, 5, 0)),
        ])
        .await?;
    // A second batch adds to the same row.
    store
        .add_usage(&[(key("s1", "a", "2026-12-04", "turn"), used(1, 500, 100, 0))])
        .await?;
    let mut other = key("s9", "a", "2026-12-04", "turn");
    other.workspace_id = "ws_v".into();
    store.add_usage(&[(other, used(7, 7, 7, 7))]).await?;
    assert_eq!(store.session_usage("s1").await?, used(4, 1_800, 320, 512));
    assert_eq!(store.session_usage("nope").await?, UsageCounts::default());
    let days = store
        .workspace_usage("ws_u", "2026-12-01", "2026-12-31")
        .await?;
    assert_eq!(days.len(), 2);
    assert_eq!(
        (days[0].assistant_id.as_str(), days[0].day.as_str()),
        ("a", "2026-12-04")
    );
    assert_eq!(days[0].counts, used(4, 1_800, 320, 512));
    assert_eq!(days[1].counts, used(1, 50, 5, 0));
    let only_fifth = store
        .workspace_usage("ws_u", "2026-12-05", "2026-12-05")
        .await?;
    assert_eq!(only_fifth.len(), 1);
    assert_eq!(
        store.workspace_tokens_since("ws_u", "2026-12-01").await?,
        1_800 + 320 + 55
    );
    Ok(())
});
