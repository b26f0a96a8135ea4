-- Sessions, their messages and their events.
CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    assistant_id TEXT NOT NULL,
    parent_id TEXT,
    root_id TEXT NOT NULL,
    user_id TEXT,
    title TEXT,
    status TEXT NOT NULL,
    variables TEXT NOT NULL,
    config TEXT NOT NULL,
    client_token_hash TEXT NOT NULL,
    turn_running INTEGER NOT NULL DEFAULT 0,
    end_reason TEXT,
    ended_by TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

CREATE INDEX sessions_by_workspace ON sessions (workspace_id, created_at);
CREATE INDEX sessions_by_root ON sessions (root_id);

CREATE TABLE messages (
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq BIGINT NOT NULL,
    id TEXT NOT NULL,
    role TEXT NOT NULL,
    body TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (session_id, seq)
);

CREATE TABLE events (
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq BIGINT NOT NULL,
    kind TEXT NOT NULL,
    payload TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (session_id, seq)
);
