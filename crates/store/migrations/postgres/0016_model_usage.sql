-- What model calls cost (R-RN-9): tokens per session (a sub-agent is a
-- session of its tree), task, day, provider, model and kind of call,
-- added to as the server records calls. Kept when a session ends; gone
-- with the workspace.
CREATE TABLE model_usage (
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    session_id TEXT NOT NULL,
    root_session_id TEXT NOT NULL,
    assistant_id TEXT NOT NULL,
    -- '' when the call is not a task's.
    task_id TEXT NOT NULL,
    -- The UTC day, YYYY-MM-DD.
    day TEXT NOT NULL,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    -- `turn` (the session's own model), `small` (judges, leaves,
    -- extraction, summaries) or `task` (a reasoner task).
    kind TEXT NOT NULL,
    calls BIGINT NOT NULL,
    input_tokens BIGINT NOT NULL,
    output_tokens BIGINT NOT NULL,
    cached_tokens BIGINT NOT NULL,
    PRIMARY KEY (session_id, task_id, day, provider, model, kind)
);

CREATE INDEX model_usage_by_workspace ON model_usage (workspace_id, day);
