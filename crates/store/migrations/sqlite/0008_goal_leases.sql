-- The instance driving a goal holds a lease on it and renews it; when the
-- lease runs out (the instance died), another instance takes the goal over.
ALTER TABLE goals ADD COLUMN lease_owner TEXT;
ALTER TABLE goals ADD COLUMN lease_until BIGINT;

CREATE INDEX goals_by_lease ON goals (status, lease_until);
