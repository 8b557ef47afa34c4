-- ctx.elicitationComplete() of a durable task (MCP 2025-11-25 client/elicitation "Completion
-- Notifications for URL Mode Elicitation"): the worker has no stream of the call's, so the
-- completion travels as the task's ctx.log() messages do (migration 0012), in the same numbering,
-- to the request that waits for the task, which sends notifications/elicitation/complete where its
-- client can hear it. packages/db/src/tasks/task-log-messages.ts owns the table.
--
-- kind: 'log' (a ctx.log() message: level, logger, data) or 'elicitation_complete' (data: the
-- elicitationId as a JSON string; no level). A constant default, a dropped NOT NULL and NOT VALID
-- checks: Postgres only updates its catalog, so the ACCESS EXCLUSIVE lock is held for no scan.
ALTER TABLE task_log_messages
  ADD COLUMN kind text NOT NULL DEFAULT 'log',
  ALTER COLUMN level DROP NOT NULL;
ALTER TABLE task_log_messages ADD CONSTRAINT task_log_messages_kind_check
  CHECK (kind IN ('log', 'elicitation_complete')) NOT VALID;
-- A log message has a level; a completion has none, and names its elicitation with a string.
ALTER TABLE task_log_messages ADD CONSTRAINT task_log_messages_kind_fields_check
  CHECK (CASE kind
           WHEN 'log' THEN level IS NOT NULL
           ELSE level IS NULL AND logger IS NULL AND jsonb_typeof(data) = 'string'
         END) NOT VALID;
