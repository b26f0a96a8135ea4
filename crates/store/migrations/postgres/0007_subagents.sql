-- Sub-agent sessions (R-SA) and what waits to be delivered to a session
-- (R-BX-3): a child's report to its parent, a parent's message to a child.
CREATE TABLE sub_agents (
    session_id TEXT PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    parent_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    root_id TEXT NOT NULL,
    mode TEXT NOT NULL,
    -- The parent's tool call waiting for the result (sync mode, first run).
    call_id TEXT,
    depth BIGINT NOT NULL,
    running INTEGER NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

CREATE INDEX sub_agents_by_parent ON sub_agents (parent_id);
CREATE INDEX sub_agents_by_root ON sub_agents (root_id);

-- An item is consumed when the message it becomes (`message_id`) is in
-- the session's history: delivery and consumption are one write.
CREATE TABLE session_inbox (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    kind TEXT NOT NULL,
    from_session_id TEXT,
    call_id TEXT,
    content TEXT NOT NULL,
    message_id TEXT NOT NULL,
    created_at BIGINT NOT NULL
);

CREATE INDEX session_inbox_by_session ON session_inbox (session_id, created_at);
CREATE INDEX messages_by_id ON messages (session_id, id);
