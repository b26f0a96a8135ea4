-- A host connection that runs its session's turns where it is (a voice
-- session's socket, R-RT-8): a message posted on another instance asks
-- that instance to run the turn.
ALTER TABLE client_connections ADD COLUMN hosts_turns INTEGER NOT NULL DEFAULT 0;
