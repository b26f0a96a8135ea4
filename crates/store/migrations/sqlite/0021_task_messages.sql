-- A reasoner task's transcript, one message (JSON) per row in order
-- (`seq` from 0): a step appends its new messages and rewrites only those
-- it changed (tool results dropped to stay within the bound), instead of
-- rewriting the whole transcript. `tasks.transcript` still holds the
-- transcript of a task saved before this table existed.
CREATE TABLE task_messages (
    task_id TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    seq BIGINT NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (task_id, seq)
);
