DROP INDEX tasks_worker_active_idx;
DELETE FROM task_events WHERE type IN ('cancel_observed', 'attempt_released');
ALTER TABLE task_events DROP CONSTRAINT task_events_type_check;
ALTER TABLE task_events ADD CONSTRAINT task_events_type_check
  CHECK (type IN ('created', 'status_changed', 'cancel_requested', 'attempt_started', 'attempt_lost'));
DROP TRIGGER tasks_guard ON tasks;
DROP FUNCTION taskgate_tasks_guard();
