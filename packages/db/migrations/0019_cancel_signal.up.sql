-- Which path a cancel took (packages/reliability/src/cancel-signal.ts): written with the cancel
-- request, read by the worker when the handler has stopped, so the cancel-latency histogram and
-- the logs can say "stream close" or "tasks/cancel" rather than a client's free-text reason.
-- Nullable with no default and a NOT VALID check: the ALTER rewrites and scans nothing.
ALTER TABLE tasks ADD COLUMN cancel_signal text;
ALTER TABLE tasks ADD CONSTRAINT tasks_cancel_signal_check
  CHECK (cancel_signal IN ('notification', 'stream_close', 'tasks_cancel', 'rest_cancel', 'idle_clock',
                           'max_clock', 'shutdown', 'other')) NOT VALID;

-- Dead-lettered outbox events, counted when /metrics is scraped (pending ones have their index).
CREATE INDEX outbox_dead_idx ON outbox (id) WHERE dead_at IS NOT NULL;
