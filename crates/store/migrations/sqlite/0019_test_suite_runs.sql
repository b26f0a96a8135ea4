-- Runs of a target's conversation tests (R-BX-10), answered at once with
-- their id and read until they end: the body is the run so far (its
-- finished runs and counts), `updated_at` the runner's heartbeat, so a
-- run whose server stopped is seen as abandoned.
CREATE TABLE test_suite_runs (
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    id TEXT NOT NULL,
    target_kind TEXT NOT NULL,
    target_id TEXT NOT NULL,
    status TEXT NOT NULL,
    body TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (workspace_id, id)
);

CREATE INDEX test_suite_runs_by_target ON test_suite_runs (workspace_id, target_kind, target_id, created_at);
