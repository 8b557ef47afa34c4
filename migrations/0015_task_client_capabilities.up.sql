-- What the MCP client declared (its ClientCapabilities) on the call that created the task: a
-- durable handler reads it as ctx.clientCapabilities, as an inline one does, to ask only for the
-- input the client can give (sampling, elicitation, roots). NULL: the call carried none (REST, or
-- a client that declared nothing). Written once, at the insert (packages/db/src/tasks/task-store.ts).
-- It comes from the client: the API bounds it (16 KiB of JSON, apps/api/src/mcp/dispatch/call-runner.ts).
-- No size check here: Postgres's text of a jsonb is longer than the JSON it came from (a number
-- like 1e300 is written out in 301 digits), so a check here could refuse what the API accepted.
ALTER TABLE tasks
  ADD COLUMN client_capabilities jsonb
    CONSTRAINT tasks_client_capabilities_check
    CHECK (client_capabilities IS NULL OR jsonb_typeof(client_capabilities) = 'object');
