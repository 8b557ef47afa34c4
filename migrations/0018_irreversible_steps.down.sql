DROP INDEX reconciliation_items_tenant_idx;
DROP TRIGGER tasks_abandoned ON tasks;
DROP FUNCTION taskgate_tasks_abandoned();
DROP FUNCTION taskgate_reconciliation_details(uuid);
ALTER TABLE reconciliation_items DROP CONSTRAINT reconciliation_items_resolved_by_check;
ALTER TABLE reconciliation_items DROP CONSTRAINT reconciliation_items_kind_check;
ALTER TABLE reconciliation_items DROP COLUMN resolved_by, DROP COLUMN details, DROP COLUMN kind;
-- A started step has no result to keep: going down forgets it (its task's item, if any, stays).
DELETE FROM task_steps WHERE state = 'started';
ALTER TABLE task_steps DROP CONSTRAINT task_steps_state_check;
ALTER TABLE task_steps ALTER COLUMN result SET NOT NULL, DROP COLUMN state, DROP COLUMN irreversible;
