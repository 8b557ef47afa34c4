-- A tenant's sessions, newest use first: initialize trims each tenant to its most recent sessions
-- (packages/db/src/sessions/mcp-sessions.ts), so a client that loops on initialize cannot fill the
-- table before the idle sweep comes round.
CREATE INDEX mcp_sessions_tenant_seen_idx ON mcp_sessions (tenant_id, last_seen_at DESC);
