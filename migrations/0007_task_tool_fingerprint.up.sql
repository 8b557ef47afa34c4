-- Version skew between the API and the workers: a task records the fingerprint of the tool
-- definition it was accepted under (toolFingerprint in packages/reliability, the catalog's
-- fingerprint), written by the API at creation. The worker that claims the task compares it with
-- the definition it serves: the same, or arguments that still fit its schema, run; arguments its
-- schema rejects fail the task with -32602 naming both fingerprints (README, "Version skew").
-- Tasks created before this migration have none, and are run as before.
ALTER TABLE tasks ADD COLUMN tool_fingerprint text;
ALTER TABLE tasks ADD CONSTRAINT tasks_tool_fingerprint_check CHECK (tool_fingerprint ~ '^[0-9a-f]{64}$');
