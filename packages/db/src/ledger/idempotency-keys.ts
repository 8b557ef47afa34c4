import { createHash } from 'node:crypto';
import { fingerprintInput } from '@taskgate/reliability';
import { type Kysely, sql } from 'kysely';
import { insertOutboxEvents, type OutboxEvent } from '../outbox/outbox-store.ts';
import type { Database, IdempotencyKeyState } from '../schema.ts';

/**
 * The idempotency ledger's table. A key names one business intent of one tenant: the first call
 * claims it (the primary key serializes concurrent claims: a second INSERT waits for the first
 * transaction and then finds its row), and the call that commits the effect stores the result in
 * the same transaction. Every later call with the key either replays that result, is told the
 * first is still running, or — with different arguments — is refused.
 */

type Db = Kysely<Database>;

export interface KeyClaim {
  readonly tenantId: string;
  readonly key: string;
  readonly operation: string;
  readonly fingerprint: string;
  /** The task that will run the operation, or null when the caller commits the effect itself. */
  readonly taskId: string | null;
  readonly retentionMs: number;
}

export interface KeyRecord {
  readonly tenantId: string;
  readonly key: string;
  readonly operation: string;
  readonly fingerprint: string;
  readonly state: IdempotencyKeyState;
  /** Parsed from the stored JSON by this read: a fresh object every time. */
  readonly result: unknown;
  readonly taskId: string | null;
  readonly createdAt: Date;
  readonly completedAt: Date | null;
  readonly expiresAt: Date;
}

export type ClaimOutcome =
  /** This caller holds the key now and must commit the effect (or let the key be taken over). */
  | { readonly kind: 'claimed' }
  /** The key was used with other arguments or another operation: nothing may happen. */
  | { readonly kind: 'mismatch'; readonly existing: KeyRecord }
  /** The operation committed under this key: replay its stored result. */
  | { readonly kind: 'replay'; readonly existing: KeyRecord }
  /** A live task holds the key and has not committed yet. */
  | { readonly kind: 'in-progress'; readonly existing: KeyRecord };

/** SHA-256 (hex) of the canonical JSON of the operation name and the arguments without the key. */
export function keyFingerprint(operation: string, args: unknown): string {
  return createHash('sha256').update(fingerprintInput(operation, args)).digest('hex');
}

/**
 * Claims a key inside the caller's transaction. A key left `pending` by a task that ended without
 * committing (failed, cancelled, expired) is taken over: its effect never committed, so running the
 * operation again is the retry the key exists for. An expired key counts as absent.
 */
export async function claimKey(trx: Db, claim: KeyClaim): Promise<ClaimOutcome> {
  // ON CONFLICT DO NOTHING waits on the unique index for a concurrent claimer's transaction to end,
  // so the SELECT below always sees a committed row (READ COMMITTED takes a new snapshot per statement).
  const { rows: inserted } = await sql<{ inserted: boolean }>`
    INSERT INTO idempotency_keys (tenant_id, key, operation, fingerprint, state, task_id, expires_at)
    VALUES (${claim.tenantId}, ${claim.key}, ${claim.operation}, ${claim.fingerprint}, 'pending', ${claim.taskId},
            now() + make_interval(secs => ${claim.retentionMs / 1000}))
    ON CONFLICT (tenant_id, key) DO NOTHING
    RETURNING true AS inserted`.execute(trx);
  if (inserted.length > 0) return { kind: 'claimed' };

  const { rows } = await sql<KeyRow & { task_live: boolean | null; expired: boolean }>`
    SELECT k.*, t.status IN ('working', 'input_required') AS task_live, k.expires_at <= now() AS expired
    FROM idempotency_keys k LEFT JOIN tasks t ON t.id = k.task_id
    WHERE k.tenant_id = ${claim.tenantId} AND k.key = ${claim.key}
    FOR UPDATE OF k`.execute(trx);
  const row = rows[0];
  // Swept between the two statements: claim it afresh.
  if (!row) return claimKey(trx, claim);
  const existing = toKeyRecord(row);
  const stale = row.expired || (row.state === 'pending' && row.task_live !== true);
  if (!stale) {
    if (row.fingerprint !== claim.fingerprint || row.operation !== claim.operation) {
      return { kind: 'mismatch', existing };
    }
    return row.state === 'completed' ? { kind: 'replay', existing } : { kind: 'in-progress', existing };
  }
  // An expired key is free for any intent; a stale pending one still binds its arguments.
  if (!row.expired && (row.fingerprint !== claim.fingerprint || row.operation !== claim.operation)) {
    return { kind: 'mismatch', existing };
  }
  await sql`
    UPDATE idempotency_keys
    SET operation = ${claim.operation}, fingerprint = ${claim.fingerprint}, state = 'pending', result = NULL,
        task_id = ${claim.taskId}, created_at = now(), completed_at = NULL,
        expires_at = now() + make_interval(secs => ${claim.retentionMs / 1000})
    WHERE tenant_id = ${claim.tenantId} AND key = ${claim.key}`.execute(trx);
  return { kind: 'claimed' };
}

/**
 * Stores the result under a key this caller claimed, in the transaction that commits the effect.
 * Returns the stored record (its result re-read from JSON), or null when the key is no longer held
 * by this task — the caller must then roll back, because someone else owns the intent now.
 */
export async function completeKey(
  trx: Db,
  input: { tenantId: string; key: string; taskId: string | null; result: unknown },
): Promise<KeyRecord | null> {
  const { rows } = await sql<KeyRow>`
    UPDATE idempotency_keys
    SET state = 'completed', result = ${JSON.stringify(input.result ?? null)}::jsonb, completed_at = now(),
        expires_at = now() + (expires_at - created_at)
    WHERE tenant_id = ${input.tenantId} AND key = ${input.key} AND state = 'pending'
      AND task_id IS NOT DISTINCT FROM ${input.taskId}::uuid
    RETURNING *`.execute(trx);
  return rows[0] ? toKeyRecord(rows[0]) : null;
}

/** A key to record as completed with its result, for a call whose effects already ran in this transaction. */
export interface CompletedClaim extends Omit<KeyClaim, 'taskId'> {
  readonly result: unknown;
}

/**
 * Records keys as completed, with their results, and adds the outbox events, in one statement in
 * the caller's transaction, after the effects ran in it: for a batch of calls the caller commits
 * itself (no task). Returns, per claim in order, its stored record, or null where the key already
 * existed (a retry, a concurrent twin that committed first, a key a task holds, a stale one): the
 * caller must then roll back — those calls' effects and every event are in this transaction — and
 * decide them on the general path (claimKey). Keys are inserted in the given order, so batches that
 * order their keys alike cannot deadlock; a concurrent claim of one key waits on the primary key.
 */
export async function claimCompletedKeys(
  trx: Db,
  claims: readonly CompletedClaim[],
  events: readonly OutboxEvent[],
): Promise<(KeyRecord | null)[]> {
  if (claims.length === 0) return [];
  const rows = JSON.stringify(
    claims.map((claim, ordinal) => ({
      ordinal,
      tenant_id: claim.tenantId,
      key: claim.key,
      operation: claim.operation,
      fingerprint: claim.fingerprint,
      retention_s: claim.retentionMs / 1000,
      result: claim.result ?? null,
    })),
  );
  const announce = events.length > 0 ? sql`, announced AS (${insertOutboxEvents(events)})` : sql``;
  const { rows: inserted } = await sql<KeyRow>`
    WITH claimed AS (
      INSERT INTO idempotency_keys (tenant_id, key, operation, fingerprint, state, result, completed_at, expires_at)
      SELECT tenant_id, key, operation, fingerprint, 'completed', coalesce(result, 'null'::jsonb), now(),
             now() + make_interval(secs => retention_s)
      FROM jsonb_to_recordset(${rows}::jsonb) AS x(
        ordinal int, tenant_id text, key text, operation text, fingerprint text, retention_s float8, result jsonb)
      ORDER BY ordinal
      ON CONFLICT (tenant_id, key) DO NOTHING
      RETURNING *
    )${announce}
    SELECT * FROM claimed`.execute(trx);
  const byKey = new Map(inserted.map((row) => [`${row.tenant_id}\u0000${row.key}`, toKeyRecord(row)]));
  return claims.map((claim) => byKey.get(`${claim.tenantId}\u0000${claim.key}`) ?? null);
}

/** The key's record for reconciliation ("did my call commit?"), or null if unknown or expired. */
export async function findKey(db: Db, tenantId: string, key: string): Promise<KeyRecord | null> {
  const { rows } = await sql<KeyRow>`
    SELECT * FROM idempotency_keys
    WHERE tenant_id = ${tenantId} AND key = ${key} AND expires_at > now()`.execute(db);
  return rows[0] ? toKeyRecord(rows[0]) : null;
}

/**
 * Deletes keys past their retention window, a bounded batch at a time. A pending key whose task
 * still runs is kept: deleting it would let a retry start a second execution beside the first.
 */
export async function deleteExpiredKeys(db: Db, limit = 1_000): Promise<number> {
  const result = await sql`
    DELETE FROM idempotency_keys k
    WHERE (k.tenant_id, k.key) IN (
      SELECT tenant_id, key FROM idempotency_keys e
      WHERE e.expires_at <= now()
        AND NOT (e.state = 'pending' AND EXISTS (
          SELECT 1 FROM tasks t WHERE t.id = e.task_id AND t.status IN ('working', 'input_required')))
      LIMIT ${limit}
      FOR UPDATE SKIP LOCKED)`.execute(db);
  return Number(result.numAffectedRows ?? 0);
}

interface KeyRow {
  tenant_id: string;
  key: string;
  operation: string;
  fingerprint: string;
  state: IdempotencyKeyState;
  result: unknown;
  task_id: string | null;
  created_at: Date;
  completed_at: Date | null;
  expires_at: Date;
}

function toKeyRecord(row: KeyRow): KeyRecord {
  return {
    tenantId: row.tenant_id,
    key: row.key,
    operation: row.operation,
    fingerprint: row.fingerprint,
    state: row.state,
    result: row.result,
    taskId: row.task_id,
    createdAt: row.created_at,
    completedAt: row.completed_at,
    expiresAt: row.expires_at,
  };
}
