-- Several instances on one database (R-ST-2). Each instance heartbeats its
-- row; an instance not seen for a lease is dead, and what it owned is
-- taken over by exactly one live instance. `host` and `pid` let an
-- instance starting on the same host see at once that an earlier process
-- there is gone (a crash and restart need not wait for the lease).
CREATE TABLE instances (
    id TEXT PRIMARY KEY,
    host TEXT,
    pid BIGINT,
    started_at BIGINT NOT NULL,
    seen_at BIGINT NOT NULL
);

-- The instance that runs (or last ran) the session's turns: it owns the
-- session's work (a running turn, a working sub-agent, waiting inbox
-- items, a running workflow action) while it is alive.
ALTER TABLE sessions ADD COLUMN turn_owner TEXT;
CREATE INDEX sessions_by_turn_running ON sessions (turn_running) WHERE turn_running <> 0;

-- The host connections (WebSockets) that run client tools, by instance,
-- so a turn on another instance can call them.
CREATE TABLE client_connections (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    instance TEXT NOT NULL,
    functions TEXT NOT NULL,
    seen_at BIGINT NOT NULL
);
CREATE INDEX client_connections_by_session ON client_connections (session_id);
CREATE INDEX client_connections_by_instance ON client_connections (instance);

-- A client tool call routed to another instance's connection: the
-- waiting instance, then the host's reply, written where it arrived.
CREATE TABLE client_calls (
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    call_id TEXT NOT NULL,
    instance TEXT NOT NULL,
    connection_id TEXT NOT NULL,
    reply TEXT,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (session_id, call_id)
);
