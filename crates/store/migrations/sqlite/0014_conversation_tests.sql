-- Conversation tests (R-BX-10): test cases stored with an assistant or a
-- workflow (`target_kind`, `target_id`), and the stored result of each
-- run. A target's tests and their runs go with it.
CREATE TABLE conversation_tests (
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    id TEXT NOT NULL,
    target_kind TEXT NOT NULL,
    target_id TEXT NOT NULL,
    name TEXT NOT NULL,
    body TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (workspace_id, id)
);

CREATE INDEX conversation_tests_by_target ON conversation_tests (workspace_id, target_kind, target_id, created_at);

CREATE TABLE test_runs (
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    id TEXT NOT NULL,
    test_id TEXT NOT NULL,
    status TEXT NOT NULL,
    body TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (workspace_id, id)
);

CREATE INDEX test_runs_by_test ON test_runs (workspace_id, test_id, created_at);
