ALTER TABLE mcp_sessions DROP COLUMN log_level;
