-- Completions have no place in the table before 0022: they go (a request still relaying the task's
-- messages reads fewer than log_count says, and stops there, as for a message it cannot read).
DELETE FROM task_log_messages WHERE kind <> 'log';
ALTER TABLE task_log_messages DROP CONSTRAINT task_log_messages_kind_fields_check;
ALTER TABLE task_log_messages DROP CONSTRAINT task_log_messages_kind_check;
ALTER TABLE task_log_messages ALTER COLUMN level SET NOT NULL, DROP COLUMN kind;
