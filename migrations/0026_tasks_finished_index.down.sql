DROP INDEX tasks_tenant_finished_idx;
