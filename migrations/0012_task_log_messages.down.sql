DROP TABLE task_log_messages;
ALTER TABLE tasks DROP COLUMN log_count, DROP COLUMN log_level;
