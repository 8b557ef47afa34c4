import { type Kysely, sql } from 'kysely';
import type { Database } from '../schema.ts';

/**
 * Calls whose outcome is unknown and which must not run again on their own: an attempt of an
 * unsafe tool (or of a conditional one called without a key) was lost, so its effect may or may
 * not have happened. Someone looks before anything is retried.
 */

export interface ReconciliationItem {
  readonly id: string;
  readonly tenantId: string;
  readonly taskId: string;
  readonly tool: string;
  readonly idempotencyKey: string | null;
  readonly reason: string;
  readonly createdAt: Date;
  readonly resolvedAt: Date | null;
  readonly resolution: string | null;
}

/** Opens an item for the task (once: a second call for the same task changes nothing). */
export async function openReconciliationItem(db: Kysely<Database>, taskId: string, reason: string): Promise<void> {
  await sql`
    INSERT INTO reconciliation_items (tenant_id, task_id, tool, idempotency_key, reason)
    SELECT tenant_id, id, tool, idempotency_key, ${reason} FROM tasks WHERE id = ${taskId}
    ON CONFLICT (task_id) DO NOTHING`.execute(db);
}

/** The tenant's items still waiting for a decision, oldest first. */
export async function listOpenReconciliationItems(
  db: Kysely<Database>,
  tenantId: string,
  limit = 100,
): Promise<ReconciliationItem[]> {
  const { rows } = await sql<{
    id: string;
    tenant_id: string;
    task_id: string;
    tool: string;
    idempotency_key: string | null;
    reason: string;
    created_at: Date;
    resolved_at: Date | null;
    resolution: string | null;
  }>`
    SELECT id::text AS id, tenant_id, task_id, tool, idempotency_key, reason, created_at, resolved_at, resolution
    FROM reconciliation_items WHERE tenant_id = ${tenantId} AND resolved_at IS NULL
    ORDER BY created_at, id LIMIT ${limit}`.execute(db);
  return rows.map((row) => ({
    id: row.id,
    tenantId: row.tenant_id,
    taskId: row.task_id,
    tool: row.tool,
    idempotencyKey: row.idempotency_key,
    reason: row.reason,
    createdAt: row.created_at,
    resolvedAt: row.resolved_at,
    resolution: row.resolution,
  }));
}
