ALTER TABLE tasks DROP CONSTRAINT tasks_trace_parent_check;
ALTER TABLE tasks DROP COLUMN trace_parent;
ALTER TABLE tasks DROP CONSTRAINT tasks_cancel_signal_check;
ALTER TABLE tasks DROP COLUMN cancel_signal;
