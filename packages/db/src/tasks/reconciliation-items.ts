import { type Kysely, sql } from 'kysely';
import type { Database, ReconciliationKind } from '../schema.ts';

/**
 * Calls that left something for a person to decide, and which nothing runs again on its own:
 * - unknown_outcome: an attempt of an unsafe tool (or of a conditional one called without a key)
 *   was lost, or an irreversible step started and never recorded how it went — the effect may or
 *   may not have happened;
 * - abandoned_with_effects: the task failed or was cancelled after an irreversible step took
 *   effect (migration 0018's trigger opens these in the terminal transition's transaction).
 * An item is resolved once, with a note and the name of whoever decided.
 */

export interface ReconciliationItem {
  readonly id: string;
  readonly tenantId: string;
  readonly taskId: string;
  readonly tool: string;
  readonly idempotencyKey: string | null;
  readonly kind: ReconciliationKind;
  readonly reason: string;
  /** What was known when it opened: the task's ending, last progress and steps. */
  readonly details: Readonly<Record<string, unknown>>;
  readonly createdAt: Date;
  readonly resolvedAt: Date | null;
  readonly resolution: string | null;
  readonly resolvedBy: string | null;
}

export type ReconciliationFilter = 'open' | 'resolved' | 'all';

interface ItemRow {
  id: string;
  tenant_id: string;
  task_id: string;
  tool: string;
  idempotency_key: string | null;
  kind: ReconciliationKind;
  reason: string;
  details: Record<string, unknown>;
  created_at: Date;
  resolved_at: Date | null;
  resolution: string | null;
  resolved_by: string | null;
}

const COLUMNS = sql.raw(
  'id::text AS id, tenant_id, task_id, tool, idempotency_key, kind, reason, details, created_at, resolved_at, resolution, resolved_by',
);

/** Whether `id` can name an item at all (a bigint identity): anything else is simply not found. */
export function isReconciliationItemId(id: string): boolean {
  return /^[1-9][0-9]{0,18}$/.test(id) && BigInt(id) <= 9_223_372_036_854_775_807n;
}

function itemOf(row: ItemRow): ReconciliationItem {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    taskId: row.task_id,
    tool: row.tool,
    idempotencyKey: row.idempotency_key,
    kind: row.kind,
    reason: row.reason,
    details: row.details,
    createdAt: row.created_at,
    resolvedAt: row.resolved_at,
    resolution: row.resolution,
    resolvedBy: row.resolved_by,
  };
}

/** Opens an unknown-outcome item for the task (once: a second call for the same task changes nothing). */
export async function openReconciliationItem(db: Kysely<Database>, taskId: string, reason: string): Promise<void> {
  await sql`
    INSERT INTO reconciliation_items (tenant_id, task_id, tool, idempotency_key, reason, kind, details)
    SELECT tenant_id, id, tool, idempotency_key, ${reason}, 'unknown_outcome', taskgate_reconciliation_details(id)
    FROM tasks WHERE id = ${taskId}
    ON CONFLICT (task_id) DO NOTHING`.execute(db);
}

/** The tenant's items still waiting for a decision, oldest first. */
export async function listOpenReconciliationItems(
  db: Kysely<Database>,
  tenantId: string,
  limit = 100,
): Promise<ReconciliationItem[]> {
  const { rows } = await sql<ItemRow>`
    SELECT ${COLUMNS} FROM reconciliation_items WHERE tenant_id = ${tenantId} AND resolved_at IS NULL
    ORDER BY created_at, id LIMIT ${limit}`.execute(db);
  return rows.map(itemOf);
}

/**
 * A page of items, newest first: one tenant's, or every tenant's (an operator's `taskgate
 * reconcile list`). `before` is the id the previous page ended at.
 */
export async function listReconciliationItems(
  db: Kysely<Database>,
  query: { tenantId: string | null; filter: ReconciliationFilter; limit: number; before?: string | undefined },
): Promise<ReconciliationItem[]> {
  const tenant = query.tenantId === null ? sql`true` : sql`tenant_id = ${query.tenantId}`;
  const state =
    query.filter === 'open'
      ? sql`resolved_at IS NULL`
      : query.filter === 'resolved'
        ? sql`resolved_at IS NOT NULL`
        : sql`true`;
  if (query.before !== undefined && !isReconciliationItemId(query.before)) {
    throw new RangeError('before must be an item id');
  }
  const before = query.before === undefined ? sql`true` : sql`id < ${query.before}::bigint`;
  const { rows } = await sql<ItemRow>`
    SELECT ${COLUMNS} FROM reconciliation_items WHERE ${tenant} AND ${state} AND ${before}
    ORDER BY id DESC LIMIT ${query.limit}`.execute(db);
  return rows.map(itemOf);
}

/** One item, if it is the tenant's (any tenant's when tenantId is null). */
export async function findReconciliationItem(
  db: Kysely<Database>,
  tenantId: string | null,
  id: string,
): Promise<ReconciliationItem | null> {
  if (!isReconciliationItemId(id)) return null;
  const tenant = tenantId === null ? sql`true` : sql`tenant_id = ${tenantId}`;
  const { rows } = await sql<ItemRow>`
    SELECT ${COLUMNS} FROM reconciliation_items WHERE id = ${id}::bigint AND ${tenant}`.execute(db);
  return rows[0] === undefined ? null : itemOf(rows[0]);
}

export type ResolveOutcome =
  | { readonly kind: 'resolved'; readonly item: ReconciliationItem }
  | { readonly kind: 'already-resolved'; readonly item: ReconciliationItem }
  | { readonly kind: 'not-found' };

/** Resolves an open item with a note and who decided; an item is resolved once. */
export async function resolveReconciliationItem(
  db: Kysely<Database>,
  input: { tenantId: string | null; id: string; resolution: string; resolvedBy: string },
): Promise<ResolveOutcome> {
  if (!isReconciliationItemId(input.id)) return { kind: 'not-found' };
  const tenant = input.tenantId === null ? sql`true` : sql`tenant_id = ${input.tenantId}`;
  const { rows } = await sql<ItemRow>`
    UPDATE reconciliation_items
    SET resolved_at = now(), resolution = ${input.resolution}, resolved_by = ${input.resolvedBy}
    WHERE id = ${input.id}::bigint AND ${tenant} AND resolved_at IS NULL
    RETURNING ${COLUMNS}`.execute(db);
  if (rows[0] !== undefined) return { kind: 'resolved', item: itemOf(rows[0]) };
  const existing = await findReconciliationItem(db, input.tenantId, input.id);
  return existing === null ? { kind: 'not-found' } : { kind: 'already-resolved', item: existing };
}
