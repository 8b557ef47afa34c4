-- The console's task list filtered by tool (GET /v1/tasks?tool=…), newest first, keyset-paged on
-- (created_at, id) like the unfiltered list: without them a tool that is rare among millions of
-- tasks is found by reading the tenant's whole list backwards. Two: by tool, and by tool and
-- status — with only the first, a status of that tool that matches few rows (a tool's failures)
-- was read through every task of the tool (bench/console-list.ts measured 860 ms at 2,000,000).
--
-- In a migration of its own: the build reads the whole tasks table under a SHARE lock, which
-- holds task writes for as long as it takes. Migrations run in one transaction each, so CREATE
-- INDEX CONCURRENTLY is not available here; an operator with a large table can create the same
-- indexes concurrently beforehand (IF NOT EXISTS then finds them).
CREATE INDEX IF NOT EXISTS tasks_tenant_tool_created_idx ON tasks (tenant_id, tool, created_at, id);
CREATE INDEX IF NOT EXISTS tasks_tenant_tool_status_created_idx ON tasks (tenant_id, tool, status, created_at, id);
