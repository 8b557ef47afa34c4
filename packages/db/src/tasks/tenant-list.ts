import { type Kysely, sql } from 'kysely';
import type { Database } from '../schema.ts';

/**
 * The tenants that have tasks, in order, after `after`: what an operator chooses from. A skip
 * scan — one probe of an index that leads with tenant_id per tenant found — so its cost is the
 * number of tenants, not of tasks (a DISTINCT would read every task).
 */
export async function listTaskTenants(
  db: Kysely<Database>,
  options: { readonly after: string | null; readonly limit: number },
): Promise<string[]> {
  if (!Number.isInteger(options.limit) || options.limit < 1) throw new RangeError('limit: a positive integer');
  const { rows } = await tenantSkipScan(options.after, options.limit).execute(db);
  return rows.map((row) => row.tenant_id);
}

/** Exported for the test that asserts its plan. */
export function tenantSkipScan(after: string | null, limit: number) {
  return sql<{ tenant_id: string }>`
    WITH RECURSIVE found (tenant_id, n) AS (
      (SELECT tenant_id, 1 FROM tasks WHERE ${after}::text IS NULL OR tenant_id > ${after}::text
       ORDER BY tenant_id LIMIT 1)
      UNION ALL
      SELECT (SELECT t.tenant_id FROM tasks t WHERE t.tenant_id > found.tenant_id ORDER BY t.tenant_id LIMIT 1),
             found.n + 1
      FROM found WHERE found.tenant_id IS NOT NULL AND found.n < ${limit}::int
    )
    SELECT tenant_id FROM found WHERE tenant_id IS NOT NULL ORDER BY n`;
}
