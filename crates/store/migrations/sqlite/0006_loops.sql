-- Loops: a prompt run as a turn of its session every interval. Ticks are
-- claimed with a lease (owner, until) and numbered; `loop_ticks` holds one
-- row per tick, so a tick runs once across instances.
CREATE TABLE loops (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    prompt TEXT NOT NULL,
    interval_ms BIGINT NOT NULL,
    max_turns BIGINT NOT NULL,
    turns_done BIGINT NOT NULL DEFAULT 0,
    skipped_ticks BIGINT NOT NULL DEFAULT 0,
    status TEXT NOT NULL,
    reason TEXT,
    expires_at BIGINT NOT NULL,
    next_tick_at BIGINT NOT NULL,
    tick_seq BIGINT NOT NULL DEFAULT 0,
    lease_owner TEXT,
    lease_until BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

CREATE INDEX loops_due ON loops (status, next_tick_at);
CREATE INDEX loops_by_session ON loops (session_id, created_at);

CREATE TABLE loop_ticks (
    loop_id TEXT NOT NULL REFERENCES loops (id) ON DELETE CASCADE,
    seq BIGINT NOT NULL,
    instance TEXT NOT NULL,
    due_at BIGINT NOT NULL,
    started_at BIGINT NOT NULL,
    finished_at BIGINT,
    outcome TEXT,
    PRIMARY KEY (loop_id, seq)
);
