-- resources/subscribe of a handshake-era session (server/resources "Subscriptions"): the URIs its
-- client subscribed to, whichever API instance took the request, so the instance holding the
-- session's GET stream (where notifications/resources/updated go) watches them. At most 100, as
-- one connection may hold (MAX_RESOURCE_SUBSCRIPTIONS). packages/db/src/sessions/mcp-sessions.ts
-- owns this table.
ALTER TABLE mcp_sessions ADD COLUMN resource_subscriptions text[] NOT NULL DEFAULT '{}'
  CONSTRAINT mcp_sessions_resource_subscriptions_check CHECK (cardinality(resource_subscriptions) <= 100);
