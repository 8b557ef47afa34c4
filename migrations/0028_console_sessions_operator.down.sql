DELETE FROM console_sessions WHERE operator;
ALTER TABLE console_sessions DROP COLUMN operator;
