ALTER TABLE tool_catalog DROP COLUMN concurrency;
