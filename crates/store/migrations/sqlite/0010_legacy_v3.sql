-- Earlier-format (v3) data waiting for the Tool Resource v4 migration:
-- `rtc-agent import-v3` stores a v3 export's tools, assistants and
-- workflows here as written; `rtc-agent migrate` rewrites them into
-- resources and deletes them. While a row exists, `serve` refuses to start.
CREATE TABLE legacy_documents (
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    kind TEXT NOT NULL,
    id TEXT NOT NULL,
    position BIGINT NOT NULL,
    body TEXT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (workspace_id, kind, id)
);

-- Data migrations applied (`tool_resource_v4`): the fingerprint of the
-- database they ran on and what they changed (JSON counts).
CREATE TABLE schema_migrations (
    name TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL,
    counts TEXT NOT NULL,
    applied_at BIGINT NOT NULL
);
