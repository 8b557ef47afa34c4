DROP INDEX tasks_parked_input_idx;
ALTER TABLE tasks DROP COLUMN input_deadline_at;
