-- Opening a session counts the workspace's active sessions against its
-- limit. Without this index the count read every session row the
-- workspace ever had (status is not in sessions_by_workspace), so
-- creation slowed as sessions accumulated. With it the count reads only
-- index entries of sessions not ended; `status` is in the index so the
-- count never visits the table (SQLite checks a partial index's `<>`
-- condition again against the row unless the column is in the index).
CREATE INDEX sessions_active_by_workspace ON sessions (workspace_id, status) WHERE status <> 'ended';
