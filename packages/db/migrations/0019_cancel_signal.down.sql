DROP INDEX outbox_dead_idx;
ALTER TABLE tasks DROP CONSTRAINT tasks_cancel_signal_check;
ALTER TABLE tasks DROP COLUMN cancel_signal;
