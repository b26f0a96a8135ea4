-- The summary that stands for a session's older messages in its model
-- requests once its context was compacted (R-RN-8): one row per session,
-- rewritten by each later compaction. The messages themselves stay whole.
CREATE TABLE context_summaries (
    session_id TEXT PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    -- The first message sent verbatim after the summary.
    from_message_id TEXT NOT NULL,
    summary TEXT NOT NULL,
    -- How many messages the summary stands for, and the request's
    -- tokens before and after the compaction that wrote it.
    summarized_messages BIGINT NOT NULL,
    tokens_before BIGINT NOT NULL,
    tokens_after BIGINT NOT NULL,
    created_at BIGINT NOT NULL
);
