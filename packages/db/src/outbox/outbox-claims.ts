import { type Kysely, sql } from 'kysely';
import type { Database } from '../schema.ts';

/**
 * The outbox table's relay side: claims and settlements. Claims take rows with FOR UPDATE SKIP
 * LOCKED and never with an "id greater than the last one seen" cursor: identity values are handed
 * out at INSERT but become visible at COMMIT, so a row with a lower id can appear after a higher
 * one was delivered, and a cursor would skip it for good.
 *
 * Every settlement is fenced by (leased_by, attempts): the claim bumps attempts, so a relay whose
 * lease ran out and whose row another relay (or itself, later) claimed again cannot settle it.
 */

export interface ClaimedOutboxEvent {
  readonly id: string;
  readonly tenantId: string;
  readonly aggregateType: string;
  readonly aggregateId: string;
  readonly eventType: string;
  readonly payload: unknown;
  readonly createdAt: Date;
  /** Counting this claim: the fencing token for the settlement, and 1 on the first attempt. */
  readonly attempts: number;
}

export interface OutboxClaim {
  readonly id: string;
  readonly attempts: number;
}

export interface OutboxFailure extends OutboxClaim {
  readonly error: string;
  /** Due again after this many milliseconds (measured on the database clock); null: dead-letter. */
  readonly retryInMs: number | null;
}

interface ClaimRow {
  id: string;
  tenant_id: string;
  aggregate_type: string;
  aggregate_id: string;
  event_type: string;
  payload: unknown;
  created_at: Date;
  attempts: number;
}

/**
 * Leases up to `limit` due rows to `relayId` for `leaseMs`, in id order. Only the oldest pending
 * row of each aggregate is due: a later one waits until the earlier is delivered or dead, so one
 * aggregate's events reach sinks in id order even across retries and relays. That order is commit
 * order as long as writers that change one aggregate serialize on it (a row lock taken before
 * addOutboxEvents); the relay cannot order two transactions that are both still open.
 */
export async function claimDueOutbox(
  db: Kysely<Database>,
  relayId: string,
  limit: number,
  leaseMs: number,
): Promise<ClaimedOutboxEvent[]> {
  if (limit <= 0) return [];
  const { rows } = await sql<ClaimRow>`
    UPDATE outbox o SET
      leased_by = ${relayId},
      leased_until = now() + ${leaseMs} * interval '1 millisecond',
      attempts = o.attempts + 1
    FROM (
      SELECT c.id FROM outbox c
      WHERE c.delivered_at IS NULL AND c.dead_at IS NULL
        AND c.available_at <= now()
        AND (c.leased_until IS NULL OR c.leased_until < now())
        -- "No older pending row of this aggregate", written as a correlated LIMIT 1 subquery: the
        -- planner cannot turn it into a join, so it stays one index probe per candidate. The NOT
        -- EXISTS form became an anti join over the whole pending index (O(n²), 0.5 s a claim on a
        -- 20,000-row backlog) whenever the table had grown faster than autovacuum analyzed it.
        AND c.id = (
          SELECT older.id FROM outbox older
          WHERE older.aggregate_type = c.aggregate_type AND older.aggregate_id = c.aggregate_id
            AND older.delivered_at IS NULL AND older.dead_at IS NULL
          ORDER BY older.id LIMIT 1)
      ORDER BY c.id
      LIMIT ${limit}
      FOR UPDATE SKIP LOCKED
    ) due
    WHERE o.id = due.id
    RETURNING o.id::text AS id, o.tenant_id, o.aggregate_type, o.aggregate_id, o.event_type, o.payload,
      o.created_at, o.attempts`.execute(db);
  return rows
    .sort((a, b) => compareIds(a.id, b.id))
    .map((row) => ({
      id: row.id,
      tenantId: row.tenant_id,
      aggregateType: row.aggregate_type,
      aggregateId: row.aggregate_id,
      eventType: row.event_type,
      payload: row.payload,
      createdAt: row.created_at,
      attempts: row.attempts,
    }));
}

/** Marks the claimed rows delivered; returns the ids it settled (the others were no longer this claim's). */
export async function markDelivered(
  db: Kysely<Database>,
  relayId: string,
  claims: readonly OutboxClaim[],
): Promise<string[]> {
  if (claims.length === 0) return [];
  const input = JSON.stringify(claims.map((claim) => ({ id: claim.id, attempts: claim.attempts })));
  // leased_by stays: it records which relay delivered the row.
  const { rows } = await sql<{ id: string }>`
    UPDATE outbox o SET delivered_at = now(), leased_until = NULL, last_error = NULL
    FROM jsonb_to_recordset(${input}::jsonb) AS x(id bigint, attempts int)
    WHERE o.id = x.id AND o.leased_by = ${relayId} AND o.attempts = x.attempts
      AND o.delivered_at IS NULL AND o.dead_at IS NULL
    RETURNING o.id::text AS id`.execute(db);
  return rows.map((row) => row.id);
}

/**
 * Records failed attempts: each row is due again after its delay, or dead-lettered (retryInMs
 * null) with the error kept. Returns the ids it settled.
 */
export async function markFailed(
  db: Kysely<Database>,
  relayId: string,
  failures: readonly OutboxFailure[],
): Promise<string[]> {
  if (failures.length === 0) return [];
  const input = JSON.stringify(
    failures.map((failure) => ({
      id: failure.id,
      attempts: failure.attempts,
      error: failure.error,
      retry_ms: failure.retryInMs,
    })),
  );
  const { rows } = await sql<{ id: string }>`
    UPDATE outbox o SET
      last_error = x.error,
      leased_until = NULL,
      dead_at = CASE WHEN x.retry_ms IS NULL THEN now() END,
      available_at = CASE WHEN x.retry_ms IS NULL THEN o.available_at
                          ELSE now() + x.retry_ms * interval '1 millisecond' END
    FROM jsonb_to_recordset(${input}::jsonb) AS x(id bigint, attempts int, error text, retry_ms bigint)
    WHERE o.id = x.id AND o.leased_by = ${relayId} AND o.attempts = x.attempts
      AND o.delivered_at IS NULL AND o.dead_at IS NULL
    RETURNING o.id::text AS id`.execute(db);
  return rows.map((row) => row.id);
}

/**
 * Hands claimed rows back unattempted (a relay stopping with rows it never sent): due again at
 * once for any relay, and the claim's attempt is taken back. Returns the ids it released.
 */
export async function releaseOutboxClaims(
  db: Kysely<Database>,
  relayId: string,
  claims: readonly OutboxClaim[],
): Promise<string[]> {
  if (claims.length === 0) return [];
  const input = JSON.stringify(claims.map((claim) => ({ id: claim.id, attempts: claim.attempts })));
  const { rows } = await sql<{ id: string }>`
    UPDATE outbox o SET leased_until = NULL, attempts = o.attempts - 1
    FROM jsonb_to_recordset(${input}::jsonb) AS x(id bigint, attempts int)
    WHERE o.id = x.id AND o.leased_by = ${relayId} AND o.attempts = x.attempts
      AND o.delivered_at IS NULL AND o.dead_at IS NULL
    RETURNING o.id::text AS id`.execute(db);
  return rows.map((row) => row.id);
}

/**
 * Deletes delivered rows older than `retentionMs`, a bounded batch at a time (several workers may
 * sweep at once). Dead-lettered rows stay: they wait for an operator, not for a clock.
 */
export async function deleteDeliveredOutbox(db: Kysely<Database>, retentionMs: number, limit = 1_000): Promise<number> {
  const result = await sql`
    DELETE FROM outbox WHERE id IN (
      SELECT id FROM outbox
      WHERE delivered_at < now() - ${retentionMs} * interval '1 millisecond'
      ORDER BY id LIMIT ${limit}
      FOR UPDATE SKIP LOCKED)`.execute(db);
  return Number(result.numAffectedRows ?? 0);
}

/** Orders bigint ids given as decimal text (no leading zeros), without converting to Number. */
export function compareIds(a: string, b: string): number {
  return a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);
}
