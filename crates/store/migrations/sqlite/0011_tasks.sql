-- Tasks delegated to task backends (R-TK): durable, driven by the instance
-- holding the lease; a finished task's report waits in the session's inbox
-- (written in the same transaction as the final status, so exactly once).
CREATE TABLE tasks (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    backend_id TEXT NOT NULL,
    backend_type TEXT NOT NULL,
    -- What the task runs with, taken at delegation (JSON): the backend,
    -- the reasoner's bound tools, the session's variables, the model.
    config TEXT NOT NULL,
    title TEXT NOT NULL,
    instruction TEXT NOT NULL,
    status TEXT NOT NULL,
    result TEXT,
    error TEXT,
    detail TEXT,
    -- The OpenCode session id of an opencode task.
    external_id TEXT,
    -- A reasoner's messages so far (JSON), and its model calls.
    transcript TEXT NOT NULL,
    steps BIGINT NOT NULL,
    lease_owner TEXT,
    lease_until BIGINT,
    deadline_at BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    finished_at BIGINT
);

CREATE INDEX tasks_by_session ON tasks (session_id, created_at);
CREATE INDEX tasks_by_backend ON tasks (workspace_id, backend_id, status);
CREATE INDEX tasks_by_lease ON tasks (status, lease_until);
