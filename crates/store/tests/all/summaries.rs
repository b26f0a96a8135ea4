//! Context summaries: one per session, rewritten by a later compaction.

use super::*;
use rtc_store::ContextSummary;

on_both!(a_context_summary_is_rewritten_per_session, |store| {
    store.create_workspace("ws_cs", "cs", "key-cs").await?;
    bare_session(&store, "ws_cs", "sess_cs").await?;
    assert_eq!(store.context_summary("sess_cs").await?, None);
    let mut s = ContextSummary {
        session_id: "sess_cs".into(),
        from_message_id: "msg_7".into(),
        summary: "The user asked for three quotes; two came back.".into(),
        summarized_messages: 6,
        tokens_before: 3_300,
        tokens_after: 900,
        created_at: 10,
    };
    store.save_context_summary(&s).await?;
    assert_eq!(store.context_summary("sess_cs").await?.as_ref(), Some(&s));
    s.from_message_id = "msg_19".into();
    s.summary = "Three quotes compared; the user chose the second.".into();
    s.summarized_messages = 18;
    s.created_at = 20;
    store.save_context_summary(&s).await?;
    assert_eq!(store.context_summary("sess_cs").await?, Some(s));
    Ok(())
});
