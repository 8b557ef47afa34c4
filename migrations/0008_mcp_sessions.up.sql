-- Sessions of the MCP handshake era (initialize, Mcp-Session-Id): what a session needs beyond the
-- process that opened it, so that any API instance serves any session and a session outlives an
-- API restart. packages/db/src/sessions/mcp-sessions.ts owns this table. What lives only as long as
-- a request (its cancel coordinator, its stream) stays in the process that holds the request.
CREATE TABLE mcp_sessions (
  id                  uuid        PRIMARY KEY,
  tenant_id           text        NOT NULL,
  -- The revision negotiated at initialize; the session speaks it until it ends.
  revision            text        NOT NULL,
  -- What the client declared at initialize (capabilities are declared once in this era).
  client_capabilities jsonb,
  created_at          timestamptz NOT NULL DEFAULT now(),
  -- Refreshed by use, at most once a minute; a session idle past its window is gone for readers
  -- and deleted by the retention sweep.
  last_seen_at        timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT mcp_sessions_tenant_check CHECK (tenant_id <> '' AND length(tenant_id) <= 256),
  CONSTRAINT mcp_sessions_revision_check CHECK (revision ~ '^\d{4}-\d{2}-\d{2}$'),
  CONSTRAINT mcp_sessions_capabilities_check CHECK (
    client_capabilities IS NULL OR jsonb_typeof(client_capabilities) = 'object'
  )
);
-- The retention sweep deletes the idlest first, a batch at a time.
CREATE INDEX mcp_sessions_last_seen_idx ON mcp_sessions (last_seen_at);
