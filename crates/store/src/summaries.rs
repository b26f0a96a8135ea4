//! Context summaries (R-RN-8): what stands for a session's older messages
//! in its model requests once its context was compacted. One row per
//! session, rewritten by each later compaction; stored so that a restart
//! or another instance goes on from it instead of summarizing again.

use crate::{Store, StoreError};

/// A session's latest context summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextSummary {
    pub session_id: String,
    /// The first message sent verbatim after the summary.
    pub from_message_id: String,
    pub summary: String,
    pub summarized_messages: i64,
    pub tokens_before: i64,
    pub tokens_after: i64,
    pub created_at: i64,
}

impl Store {
    /// Write `s` as its session's summary (replacing an earlier one).
    pub async fn save_context_summary(&self, s: &ContextSummary) -> Result<(), StoreError> {
        crate::engine::query(
            "INSERT INTO context_summaries (session_id, from_message_id, summary, summarized_messages, tokens_before, tokens_after, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7) \
             ON CONFLICT (session_id) DO UPDATE SET from_message_id = $2, summary = $3, summarized_messages = $4, \
             tokens_before = $5, tokens_after = $6, created_at = $7",
        )
        .bind(&s.session_id)
        .bind(&s.from_message_id)
        .bind(&s.summary)
        .bind(s.summarized_messages)
        .bind(s.tokens_before)
        .bind(s.tokens_after)
        .bind(s.created_at)
        .execute(&self.writer)
        .await?;
        Ok(())
    }

    /// The session's summary, if its context was ever compacted.
    pub async fn context_summary(
        &self,
        session_id: &str,
    ) -> Result<Option<ContextSummary>, StoreError> {
        let row = crate::engine::query(
            "SELECT session_id, from_message_id, summary, summarized_messages, tokens_before, tokens_after, created_at \
             FROM context_summaries WHERE session_id = $1",
        )
        .bind(session_id)
        .fetch_optional(&self.pool)
        .await?;
        row.map(|r| {
            Ok(ContextSummary {
                session_id: r.try_get("session_id")?,
                from_message_id: r.try_get("from_message_id")?,
                summary: r.try_get("summary")?,
                summarized_messages: r.try_get("summarized_messages")?,
                tokens_before: r.try_get("tokens_before")?,
                tokens_after: r.try_get("tokens_after")?,
                created_at: r.try_get("created_at")?,
            })
        })
        .transpose()
    }
}
