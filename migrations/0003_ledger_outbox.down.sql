DROP TRIGGER outbox_notify ON outbox;
DROP FUNCTION taskgate_outbox_notify();
DROP TABLE outbox;
DROP TABLE reconciliation_items;
DROP TABLE task_steps;
DROP TABLE idempotency_keys;
ALTER TABLE tasks DROP CONSTRAINT tasks_idempotency_key_check;
ALTER TABLE tasks DROP COLUMN idempotency_key;
