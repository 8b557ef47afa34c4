-- Two columns of tasks, both written with a request and read by the worker. Nullable, no
-- default, NOT VALID checks: Postgres only updates its catalog, so the ACCESS EXCLUSIVE lock the
-- ALTERs take is held for no scan (indexes needed by these features are migrations of their own).
--
-- cancel_signal: which path a cancel took (packages/reliability/src/cancel-signal.ts), written
-- with the cancel request, so the cancel-latency histogram and the logs can say "stream close"
-- or "tasks/cancel" rather than a client's free-text reason.
ALTER TABLE tasks ADD COLUMN cancel_signal text;
ALTER TABLE tasks ADD CONSTRAINT tasks_cancel_signal_check
  CHECK (cancel_signal IN ('notification', 'stream_close', 'tasks_cancel', 'rest_cancel', 'idle_clock',
                           'max_clock', 'shutdown', 'other')) NOT VALID;

-- trace_parent: the W3C traceparent of the request that created the task
-- (packages/metrics/src/task-traces.ts); each attempt's span links to it. The caller's own when it
-- sent one, or that of a span the API started for the creation.
ALTER TABLE tasks ADD COLUMN trace_parent text;
ALTER TABLE tasks ADD CONSTRAINT tasks_trace_parent_check
  CHECK (trace_parent ~ '^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$') NOT VALID;
