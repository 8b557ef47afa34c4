-- What the MCP client declared (its ClientCapabilities) on the call that created the task: a
-- durable handler reads it as ctx.clientCapabilities, as an inline one does, to ask only for the
-- input the client can give (sampling, elicitation, roots). NULL: the call carried none (REST, or
-- a client that declared nothing). Written once, at the insert (packages/db/src/tasks/task-store.ts).
-- Bounded: it comes from the client.
ALTER TABLE tasks
  ADD COLUMN client_capabilities jsonb
    CONSTRAINT tasks_client_capabilities_check
    CHECK (client_capabilities IS NULL
           OR (jsonb_typeof(client_capabilities) = 'object' AND octet_length(client_capabilities::text) <= 16384));
