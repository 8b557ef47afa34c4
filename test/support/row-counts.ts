import type { Database } from '@taskgate/db';
import { type Kysely, sql } from 'kysely';

/** The tables a refused request must leave as they were. */
export const WRITTEN_TABLES = [
  'tasks',
  'task_events',
  'idempotency_keys',
  'account_charges',
  'inventory',
  'inventory_reservations',
  'outbox',
] as const;

export type RowCounts = Record<(typeof WRITTEN_TABLES)[number], number>;

/** Every table's row count, read in one statement (one snapshot). */
export async function rowCounts(db: Kysely<Database>): Promise<RowCounts> {
  const columns = sql.join(
    WRITTEN_TABLES.map((table) => sql`(SELECT count(*)::int FROM ${sql.table(table)}) AS ${sql.ref(table)}`),
  );
  const { rows } = await sql<RowCounts>`SELECT ${columns}`.execute(db);
  return rows[0] as RowCounts;
}
