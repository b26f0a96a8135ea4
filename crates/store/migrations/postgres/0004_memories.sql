-- Long-term memories of an end user (per workspace), searched with a
-- tsvector ('simple' configuration: no language-specific stemming).
CREATE TABLE memories (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    user_id TEXT NOT NULL,
    content TEXT NOT NULL,
    tags TEXT NOT NULL DEFAULT '[]',
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    search tsvector GENERATED ALWAYS AS (to_tsvector('simple', content || ' ' || tags)) STORED
);

CREATE INDEX memories_by_user ON memories (workspace_id, user_id, updated_at);
CREATE INDEX memories_search ON memories USING GIN (search);
