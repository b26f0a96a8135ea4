-- Goals that drive a session until their condition holds.
CREATE TABLE goals (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    condition TEXT NOT NULL,
    status TEXT NOT NULL,
    max_turns BIGINT NOT NULL,
    completed_turns BIGINT NOT NULL DEFAULT 0,
    token_budget BIGINT,
    tokens_used BIGINT NOT NULL DEFAULT 0,
    deadline BIGINT,
    reason TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

CREATE INDEX goals_by_session ON goals (session_id, created_at);
