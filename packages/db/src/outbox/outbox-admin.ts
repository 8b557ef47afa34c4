import { type Kysely, type RawBuilder, sql } from 'kysely';
import type { Database } from '../schema.ts';
import { OUTBOX_CHANNEL } from './outbox-listener.ts';

/**
 * The outbox table's operator side: what is waiting and what was dead-lettered, per event type,
 * and sending a dead-lettered event again. Tenant-scoped throughout.
 *
 * Rows name no endpoint: a relay delivers every row to every sink it is configured with
 * (TASKGATE_RELAY_SINKS) and counts it delivered when all of them took it, so the event type is
 * the finest grouping the table can answer honestly (a failing sink is named in last_error).
 *
 * Every read here goes through the pending or the dead partial index and never touches delivered
 * rows, which are kept for the retention period and can be millions.
 */

export type OutboxState = 'pending' | 'dead';

export interface OutboxGroup {
  readonly eventType: string;
  readonly pending: number;
  readonly dead: number;
  readonly oldestPendingAt: Date | null;
  /** now() − oldestPendingAt on the database's clock, so a browser's clock does not skew it. */
  readonly oldestPendingAgeSeconds: number | null;
  readonly newestDeadAt: Date | null;
}

export interface OutboxEventRecord {
  readonly id: string;
  readonly state: OutboxState;
  readonly aggregateType: string;
  readonly aggregateId: string;
  readonly eventType: string;
  readonly payload: unknown;
  readonly createdAt: Date;
  readonly availableAt: Date;
  readonly attempts: number;
  readonly lastError: string | null;
  readonly leasedBy: string | null;
  readonly leasedUntil: Date | null;
  readonly deadAt: Date | null;
}

export interface OutboxEventQuery {
  readonly state: OutboxState;
  readonly eventType?: string | undefined;
  /** The id the previous page ended at: the page continues after it in the list's order. */
  readonly after?: string | undefined;
  readonly limit: number;
}

export type RedeliverOutcome =
  | { readonly kind: 'redelivered'; readonly event: OutboxEventRecord }
  | { readonly kind: 'not-found' }
  | { readonly kind: 'not-dead'; readonly state: 'pending' | 'delivered'; readonly deliveredAt: Date | null };

export const MAX_OUTBOX_PAGE = 200;
/** Event types are chosen by tool code, so a bounded few; a runaway tool cannot make the answer huge. */
const MAX_GROUPS = 500;

/** Whether `id` can name an outbox row (a bigint identity, written without sign or leading zeros). */
export function isOutboxEventId(id: string): boolean {
  return /^[1-9][0-9]{0,18}$/.test(id) && BigInt(id) <= 9_223_372_036_854_775_807n;
}

interface GroupRow {
  event_type: string;
  pending: number;
  dead: number;
  oldest_pending_at: Date | null;
  oldest_pending_age_seconds: number | null;
  newest_dead_at: Date | null;
}

/**
 * The summary's statement, exported so a test can EXPLAIN exactly it. Each branch repeats its
 * partial index's predicate word for word: that is what lets the planner use the index.
 */
export function outboxSummaryStatement(tenantId: string): RawBuilder<GroupRow> {
  return sql<GroupRow>`
    SELECT event_type, sum(pending)::int AS pending, sum(dead)::int AS dead,
      min(oldest_pending_at) AS oldest_pending_at,
      extract(epoch FROM now() - min(oldest_pending_at))::float8 AS oldest_pending_age_seconds,
      max(newest_dead_at) AS newest_dead_at
    FROM (
      SELECT event_type, count(*) AS pending, 0 AS dead, min(created_at) AS oldest_pending_at,
        NULL::timestamptz AS newest_dead_at
      FROM outbox WHERE tenant_id = ${tenantId} AND delivered_at IS NULL AND dead_at IS NULL
      GROUP BY event_type
      UNION ALL
      SELECT event_type, 0, count(*), NULL, max(dead_at)
      FROM outbox WHERE tenant_id = ${tenantId} AND dead_at IS NOT NULL
      GROUP BY event_type
    ) g
    GROUP BY event_type ORDER BY event_type LIMIT ${MAX_GROUPS}`;
}

/** Pending and dead-lettered counts per event type; types with neither are left out. */
export async function outboxSummary(db: Kysely<Database>, tenantId: string): Promise<OutboxGroup[]> {
  const { rows } = await outboxSummaryStatement(tenantId).execute(db);
  return rows.map((row) => ({
    eventType: row.event_type,
    pending: row.pending,
    dead: row.dead,
    oldestPendingAt: row.oldest_pending_at,
    oldestPendingAgeSeconds:
      row.oldest_pending_age_seconds === null ? null : Math.max(0, row.oldest_pending_age_seconds),
    newestDeadAt: row.newest_dead_at,
  }));
}

interface EventRow {
  id: string;
  aggregate_type: string;
  aggregate_id: string;
  event_type: string;
  payload: unknown;
  created_at: Date;
  available_at: Date;
  attempts: number;
  last_error: string | null;
  leased_by: string | null;
  leased_until: Date | null;
  dead_at: Date | null;
}

const COLUMNS = sql.raw(
  'id::text AS id, aggregate_type, aggregate_id, event_type, payload, created_at, available_at, attempts, last_error, leased_by, leased_until, dead_at',
);

function eventOf(row: EventRow): OutboxEventRecord {
  return {
    id: row.id,
    state: row.dead_at === null ? 'pending' : 'dead',
    aggregateType: row.aggregate_type,
    aggregateId: row.aggregate_id,
    eventType: row.event_type,
    payload: row.payload,
    createdAt: row.created_at,
    availableAt: row.available_at,
    attempts: row.attempts,
    lastError: row.last_error,
    leasedBy: row.leased_by,
    leasedUntil: row.leased_until,
    deadAt: row.dead_at,
  };
}

/**
 * A page's statement (exported for EXPLAIN). Dead-lettered events come newest first (what broke
 * last), pending ones oldest first (the head of the backlog, next to be delivered); both by id,
 * the order their partial indexes hold.
 */
export function outboxEventsStatement(tenantId: string, query: OutboxEventQuery): RawBuilder<EventRow> {
  if (!Number.isInteger(query.limit) || query.limit < 1 || query.limit > MAX_OUTBOX_PAGE) {
    throw new RangeError(`limit must be a whole number from 1 to ${MAX_OUTBOX_PAGE}`);
  }
  if (query.after !== undefined && !isOutboxEventId(query.after)) throw new RangeError('after must be an event id');
  const dead = query.state === 'dead';
  const state = dead ? sql`dead_at IS NOT NULL` : sql`delivered_at IS NULL AND dead_at IS NULL`;
  const eventType = query.eventType === undefined ? sql`` : sql`AND event_type = ${query.eventType}`;
  const after =
    query.after === undefined
      ? sql``
      : dead
        ? sql`AND id < ${query.after}::bigint`
        : sql`AND id > ${query.after}::bigint`;
  return sql<EventRow>`
    SELECT ${COLUMNS} FROM outbox
    WHERE tenant_id = ${tenantId} AND ${state} ${eventType} ${after}
    ORDER BY id ${dead ? sql`DESC` : sql`ASC`} LIMIT ${query.limit}`;
}

export async function listOutboxEvents(
  db: Kysely<Database>,
  tenantId: string,
  query: OutboxEventQuery,
): Promise<OutboxEventRecord[]> {
  const { rows } = await outboxEventsStatement(tenantId, query).execute(db);
  return rows.map(eventOf);
}

/**
 * Makes a dead-lettered event of the tenant pending again, due now, and wakes the relays.
 *
 * attempts goes back to 0: the relay dead-letters a row whose attempts reach
 * TASKGATE_RELAY_MAX_ATTEMPTS and draws its backoff from attempts, so a row that kept its count
 * would get one try and die again at once; redelivered, it gets the whole schedule, as a new row
 * does. leased_by is cleared with it: settlements are fenced by (leased_by, attempts), and a
 * cleared owner cannot match any settlement from before the dead-letter. last_error stays: it is
 * why the row died, worth seeing until the next attempt replaces it (a delivery clears it).
 *
 * One conditional UPDATE, so it is safe against a relay: the relay only ever changes rows that are
 * not dead, and the one write that makes a row dead (markFailed) holds the row lock until it
 * commits, so this statement waits for it and then re-reads the row (READ COMMITTED). Of two
 * redelivers of one row, exactly one finds it dead. The NOTIFY is part of the same statement,
 * hence of its transaction: it goes out when the change commits, and only if a row changed
 * (outbox_notify fires on INSERT only). Later pending events of the same aggregate wait behind
 * this one again, since the claim hands out only an aggregate's oldest pending row.
 */
export async function redeliverOutboxEvent(
  db: Kysely<Database>,
  tenantId: string,
  id: string,
): Promise<RedeliverOutcome> {
  if (!isOutboxEventId(id)) return { kind: 'not-found' };
  // Twice at most: a row that was pending when the UPDATE looked and dead when the explanation is
  // read was dead-lettered in between, and the operator asked for exactly that row to go again.
  for (let attempt = 0; ; attempt += 1) {
    const { rows } = await sql<EventRow>`
      WITH redelivered AS (
        UPDATE outbox SET dead_at = NULL, available_at = now(), attempts = 0, leased_by = NULL, leased_until = NULL
        WHERE id = ${id}::bigint AND tenant_id = ${tenantId} AND dead_at IS NOT NULL
        RETURNING ${COLUMNS})
      SELECT redelivered.*, pg_notify(${OUTBOX_CHANNEL}, '')::text AS notified FROM redelivered`.execute(db);
    const row = rows[0];
    if (row !== undefined) return { kind: 'redelivered', event: eventOf(row) };
    const { rows: found } = await sql<{ delivered_at: Date | null; dead_at: Date | null }>`
      SELECT delivered_at, dead_at FROM outbox WHERE id = ${id}::bigint AND tenant_id = ${tenantId}`.execute(db);
    const existing = found[0];
    if (existing === undefined) return { kind: 'not-found' };
    if (existing.dead_at !== null && attempt === 0) continue;
    return {
      kind: 'not-dead',
      state: existing.delivered_at === null ? 'pending' : 'delivered',
      deliveredAt: existing.delivered_at,
    };
  }
}
