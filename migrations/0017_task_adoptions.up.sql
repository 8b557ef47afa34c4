-- How many times a request-mode task parked for input was adopted by a client's retry
-- (packages/db/src/tasks/parked-requests.ts adds one at each). A cancel written for a request that
-- went away names the count that request saw, and lands only if no later retry has adopted the
-- task since: a cancel retried after an outage (apps/api/src/tasks/cancel-retries.ts) must not end
-- a task that a newer request now waits on.
-- NOT NULL DEFAULT 0 with no CHECK: Postgres stores the default in the catalog, so the ALTER
-- rewrites and scans nothing (a CHECK would scan the whole table under ACCESS EXCLUSIVE).
ALTER TABLE tasks ADD COLUMN adoptions integer NOT NULL DEFAULT 0;
