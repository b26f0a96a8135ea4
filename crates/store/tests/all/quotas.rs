//! Workspace quotas: the stored document, and requests counted per
//! minute by every caller alike.

use super::*;

on_both!(quotas_and_request_windows, |store| {
    store.create_workspace("ws_q", "q", "key-q").await?;
    assert_eq!(store.workspace_quota("ws_q").await?, None);
    assert!(
        store
            .set_workspace_quota("ws_q", Some("{\"requestsPerMinute\":5}"))
            .await?
    );
    assert_eq!(
        store.workspace_quota("ws_q").await?.as_deref(),
        Some("{\"requestsPerMinute\":5}")
    );
    assert!(!store.set_workspace_quota("nope", None).await?);
    for n in 1..=3 {
        assert_eq!(store.count_request("ws_q", 60_000).await?, n);
    }
    assert_eq!(store.count_request("ws_q", 120_000).await?, 1);
    assert_eq!(store.prune_request_windows(120_000).await?, 1);
    assert_eq!(store.count_request("ws_q", 60_000).await?, 1);
    store.set_workspace_quota("ws_q", None).await?;
    assert_eq!(store.workspace_quota("ws_q").await?, None);
    Ok(())
});
