-- logging/setLevel of a handshake-era session (server/utilities/logging): the level its later
-- requests' notifications/message start from, whichever API instance serves them. NULL: the client
-- set none, and hears none. packages/db/src/sessions/mcp-sessions.ts owns this table.
ALTER TABLE mcp_sessions ADD COLUMN log_level text
  CONSTRAINT mcp_sessions_log_level_check
  CHECK (log_level IN ('debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'));
