ALTER TABLE tasks DROP COLUMN tool_fingerprint;
