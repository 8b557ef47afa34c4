-- A request-mode task parked for input whose request ended input_required (2026-07-28 multi
-- round-trip, a durable handler's ctx.input()): no request waits on it until the client retries
-- with the answers, possibly through another API instance. Meanwhile it belongs to no instance
-- (api_instance_id NULL, so losing the first one does not cancel it), and this is when it ends
-- cancelled if no retry took it up: the request state's lifetime plus a grace period (the retry
-- that would answer it is refused after that anyway). A retry clears it and names its instance.
-- Set and cleared by packages/db/src/tasks/parked-requests.ts; swept by
-- cancelAbandonedInput (packages/db/src/tasks/task-sweeps.ts).
ALTER TABLE tasks ADD COLUMN input_deadline_at timestamptz;

-- The sweep's own partial index: empty but for the few tasks parked this way.
CREATE INDEX tasks_parked_input_idx ON tasks (input_deadline_at)
  WHERE status = 'input_required' AND input_deadline_at IS NOT NULL;
