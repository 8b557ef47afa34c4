-- The console's tools overview (GET /v1/tools/stats): a tenant's tasks that ended in the last
-- hour, by when they ended. A task can end long after it was created (a maximum clock of hours,
-- an answer waited for), so created_at's indexes cannot bound the read; without this one the
-- overview reads the tenant's whole history. Partial: open tasks are not in it, so a progress
-- update (which changes no indexed column) stays a HOT update.
--
-- In a migration of its own, for the reason 0025 gives: the build holds task writes for as long
-- as it reads the table; an operator with a large table can create it concurrently beforehand.
CREATE INDEX IF NOT EXISTS tasks_tenant_finished_idx ON tasks (tenant_id, finished_at) WHERE finished_at IS NOT NULL;
