-- The console's task list filtered by tool (GET /v1/tasks?tool=…), newest first, keyset-paged on
-- (created_at, id) like the unfiltered list: without it a tool that is rare among millions of
-- tasks is found by reading the tenant's whole list backwards.
--
-- In a migration of its own: the build reads the whole tasks table under a SHARE lock, which
-- holds task writes for as long as it takes. Migrations run in one transaction each, so CREATE
-- INDEX CONCURRENTLY is not available here; an operator with a large table can create the same
-- index concurrently beforehand (IF NOT EXISTS then finds it).
CREATE INDEX IF NOT EXISTS tasks_tenant_tool_created_idx ON tasks (tenant_id, tool, created_at, id);
