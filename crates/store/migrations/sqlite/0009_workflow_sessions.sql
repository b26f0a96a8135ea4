-- Workflow sessions: the workflow a session runs and its position in it
-- (current node, visits, path; JSON), written with the session's records.
ALTER TABLE sessions ADD COLUMN workflow_id TEXT;
ALTER TABLE sessions ADD COLUMN workflow TEXT;
