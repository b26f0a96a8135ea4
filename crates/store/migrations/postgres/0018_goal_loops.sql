-- A goal created during a loop's tick is a periodic check of that loop
-- (R-GL-4): judged after later turns, with no turns of its own.
ALTER TABLE goals ADD COLUMN loop_id TEXT;
