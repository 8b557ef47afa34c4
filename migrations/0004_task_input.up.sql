-- Input a task asks its client for (the MCP Tasks extension's input_required). A handler that
-- needs input parks its task: input_requests holds the requests still outstanding while the task
-- waits (no worker holds it meanwhile), and input_responses gathers the answers by key, for the
-- handler's next run to read. Keys are unique over a task's life, so an answer is never re-keyed.

ALTER TABLE tasks
  ADD COLUMN input_requests jsonb,
  ADD COLUMN input_responses jsonb NOT NULL DEFAULT '{}'::jsonb;

ALTER TABLE tasks ADD CONSTRAINT tasks_input_requests_check
  CHECK (status <> 'input_required' OR coalesce(jsonb_typeof(input_requests), 'null') = 'object');
