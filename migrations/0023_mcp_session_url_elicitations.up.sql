-- The URL elicitations a handshake-era session's client was sent in a URLElicitationRequiredError
-- (-32042, MCP 2025-11-25 client/elicitation), by elicitationId: the call they came with is over,
-- so when the operator's page says the user is done there (POST /v1/elicitations/{id}/complete),
-- this says which session's client to tell — the notification MUST go only to the client the
-- elicitation was sent to — and the instance holding its GET stream sends it. At most 100, the
-- newest. packages/db/src/sessions/mcp-sessions.ts owns this column.
ALTER TABLE mcp_sessions ADD COLUMN url_elicitations text[] NOT NULL DEFAULT '{}';
ALTER TABLE mcp_sessions ADD CONSTRAINT mcp_sessions_url_elicitations_check
  CHECK (cardinality(url_elicitations) <= 100) NOT VALID;
