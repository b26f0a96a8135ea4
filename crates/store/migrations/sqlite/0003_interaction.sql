-- The model's todo list and the askUser question a session waits on.
ALTER TABLE sessions ADD COLUMN todos TEXT NOT NULL DEFAULT '[]';
ALTER TABLE sessions ADD COLUMN pending_question TEXT;
