//! The active-session cap holds under parallel creates (R-SEC-6): counting
//! and inserting are one step on both engines.

use super::*;

on_both!(parallel_creates_never_pass_the_cap, |store| {
    store.create_workspace("ws_cap", "Cap", "key-cap").await?;
    store
        .create_workspace("ws_free", "Free", "key-free")
        .await?;
    let vars = serde_json::Map::new();
    let ids: Vec<String> = (0..24).map(|i| format!("sess_cap_{i}")).collect();
    let creates = ids.iter().map(|id| {
        let store = store.clone();
        let vars = &vars;
        async move {
            store
                .create_session_within(new_session(id, "ws_cap", vars), 10)
                .await
        }
    });
    let results = futures::future::join_all(creates).await;
    let mut created = Vec::new();
    for (id, r) in ids.iter().zip(results) {
        if r?.is_some() {
            created.push(id.as_str());
        }
    }
    assert_eq!(created.len(), 10, "24 parallel creates against a cap of 10");
    // The other workspace has its own count.
    let other = store
        .create_session_within(new_session("sess_free", "ws_free", &vars), 10)
        .await?;
    assert!(other.is_some());
    // Ending one frees a place (one that was created: which of the
    // parallel creates won is up to the engine).
    store
        .set_session_status(created[0], rtc_protocol::SessionStatus::Ended, None, None)
        .await?;
    let ended_one = store
        .create_session_within(new_session("sess_cap_late", "ws_cap", &vars), 10)
        .await?;
    let again = store
        .create_session_within(new_session("sess_cap_later", "ws_cap", &vars), 10)
        .await?;
    assert!(ended_one.is_some(), "ending one freed a place");
    assert!(again.is_none(), "exactly one place was freed");
    Ok(())
});
