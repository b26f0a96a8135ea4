-- A workspace's quota (R-RN-10), as JSON: a token budget per period and
-- a request rate; NULL: none.
ALTER TABLE workspaces ADD COLUMN quota TEXT;

-- Requests per workspace and minute, counted by every instance alike.
CREATE TABLE request_windows (
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    -- The minute's start, epoch milliseconds.
    window_start BIGINT NOT NULL,
    requests BIGINT NOT NULL,
    PRIMARY KEY (workspace_id, window_start)
);
