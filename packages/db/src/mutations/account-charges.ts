import { randomUUID } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import type { KeyClaim } from '../ledger/idempotency-keys.ts';
import { executeOnce, type LedgerOutcome } from '../ledger/mutation-ledger.ts';
import { announceFrom } from '../outbox/outbox-store.ts';
import type { Database } from '../schema.ts';

/** The `account.charged` event of each row of the CTE `charge`. */
const ANNOUNCE_CHARGE = announceFrom('charge', {
  tenantId: 'tenant_id',
  aggregateType: 'account',
  aggregateId: 'account',
  eventType: 'account.charged',
  payload: sql`jsonb_build_object('chargeId', id, 'account', account, 'cents', cents, 'createdAt', created_at)`,
});

/** What a charge stores and returns: no card, token or secret, only what identifies the charge. */
export interface Charge {
  readonly chargeId: string;
  readonly account: string;
  readonly cents: number;
  readonly createdAt: string;
}

export interface ChargeInput {
  readonly tenantId: string;
  readonly account: string;
  readonly cents: number;
  readonly idempotencyKey: string | null;
  readonly taskId: string | null;
}

/**
 * The charge_account effect: the charge row and its `account.charged` outbox event, in one
 * statement, inside the caller's transaction (the ledger's or the task's final commit).
 */
export async function insertCharge(db: Kysely<Database>, input: ChargeInput): Promise<Charge> {
  const { rows } = await sql<{ id: string; account: string; cents: string; created_at: Date }>`
    WITH charge AS (
      INSERT INTO account_charges (tenant_id, account, cents, idempotency_key, task_id)
      VALUES (${input.tenantId}, ${input.account}, ${input.cents}, ${input.idempotencyKey}, ${input.taskId})
      RETURNING id, tenant_id, account, cents, created_at
    ), announced AS (${ANNOUNCE_CHARGE})
    SELECT id, account, cents, created_at FROM charge`.execute(db);
  const row = rows[0];
  if (!row) throw new Error('the charge insert returned no row');
  return { chargeId: row.id, account: row.account, cents: Number(row.cents), createdAt: row.created_at.toISOString() };
}

/**
 * What charge_account stores under its key and returns, whichever path ran it (the tool in a
 * worker, or the REST operation): an MCP CallToolResult, so a replay looks the same on every path.
 */
export function chargeToolResult(charge: Charge) {
  return {
    content: [{ type: 'text', text: `charged ${charge.cents} cents to ${charge.account} (charge ${charge.chargeId})` }],
    structuredContent: { charge },
  };
}

export interface ChargeRequest {
  readonly claim: Omit<KeyClaim, 'taskId' | 'operation'>;
  readonly account: string;
  readonly cents: number;
}

/**
 * charge_account as one statement for any number of charges: each key claim (inserted already
 * completed, with its result), its charge row and its outbox event commit together — the whole
 * atomic ledger in one INSERT … ON CONFLICT DO NOTHING, one round trip and one WAL flush for the
 * batch. Charge ids and times are chosen here so each stored result is known before the statement
 * runs. Returns, per request, the executed outcome, or null where the key already existed (a retry,
 * a concurrent twin that committed first, a key a task holds): nothing of that request happened,
 * and chargeFallback decides — replay, mismatch or in progress. Keys must be distinct within a call.
 */
export async function chargeAll(
  db: Kysely<Database>,
  requests: readonly ChargeRequest[],
): Promise<(LedgerOutcome | null)[]> {
  if (requests.length === 0) return [];
  const prepared = requests.map((request, ordinal) => {
    const charge: Charge = {
      chargeId: randomUUID(),
      account: request.account,
      cents: request.cents,
      createdAt: new Date().toISOString(),
    };
    return {
      ordinal,
      tenant_id: request.claim.tenantId,
      key: request.claim.key,
      fingerprint: request.claim.fingerprint,
      retention_s: request.claim.retentionMs / 1000,
      result: chargeToolResult(charge),
      charge_id: charge.chargeId,
      account: charge.account,
      cents: charge.cents,
      created_at: charge.createdAt,
    };
  });
  const { rows } = await sql<{
    ordinal: number;
    result: unknown;
    created_at: Date;
    completed_at: Date;
    expires_at: Date;
  }>`
    WITH input AS (
      SELECT * FROM jsonb_to_recordset(${JSON.stringify(prepared)}::jsonb) AS x(
        ordinal int, tenant_id text, key text, fingerprint text, retention_s float8, result jsonb,
        charge_id uuid, account text, cents bigint, created_at timestamptz)
    ), claim AS (
      INSERT INTO idempotency_keys (tenant_id, key, operation, fingerprint, state, result, completed_at, expires_at)
      SELECT tenant_id, key, 'charge_account', fingerprint, 'completed', result, now(),
             now() + make_interval(secs => retention_s)
      FROM input ORDER BY ordinal
      ON CONFLICT (tenant_id, key) DO NOTHING
      RETURNING tenant_id, key, result, created_at, completed_at, expires_at
    ), charge AS (
      INSERT INTO account_charges (id, tenant_id, account, cents, idempotency_key, created_at)
      SELECT i.charge_id, i.tenant_id, i.account, i.cents, i.key, i.created_at
      FROM input i JOIN claim c USING (tenant_id, key) ORDER BY i.ordinal
      RETURNING id, tenant_id, account, cents, created_at
    ), announced AS (${ANNOUNCE_CHARGE})
    SELECT i.ordinal, c.result, c.created_at, c.completed_at, c.expires_at
    FROM input i JOIN claim c USING (tenant_id, key)`.execute(db);
  const byOrdinal = new Map(rows.map((row) => [row.ordinal, row]));
  return requests.map((request, ordinal) => {
    const row = byOrdinal.get(ordinal);
    if (!row) return null;
    return {
      kind: 'executed',
      result: row.result,
      record: {
        tenantId: request.claim.tenantId,
        key: request.claim.key,
        operation: 'charge_account',
        fingerprint: request.claim.fingerprint,
        state: 'completed',
        result: row.result,
        taskId: null,
        createdAt: row.created_at,
        completedAt: row.completed_at,
        expiresAt: row.expires_at,
      },
    };
  });
}

/** A charge whose key already existed: the general ledger path (which also takes over a stale key). */
export function chargeFallback(db: Kysely<Database>, request: ChargeRequest): Promise<LedgerOutcome> {
  const { claim, account, cents } = request;
  return executeOnce(db, { ...claim, operation: 'charge_account' }, async (trx) =>
    chargeToolResult(
      await insertCharge(trx, { tenantId: claim.tenantId, account, cents, idempotencyKey: claim.key, taskId: null }),
    ),
  );
}

/** One charge on the atomic ledger: the one-statement path, or the general one if the key exists. */
export async function chargeOnce(db: Kysely<Database>, request: ChargeRequest): Promise<LedgerOutcome> {
  const [outcome] = await chargeAll(db, [request]);
  return outcome ?? chargeFallback(db, request);
}

/** The charges of one account, newest last (for reconciliation and tests). */
export async function listCharges(db: Kysely<Database>, tenantId: string, account: string): Promise<Charge[]> {
  const { rows } = await sql<{ id: string; account: string; cents: string; created_at: Date }>`
    SELECT id, account, cents, created_at FROM account_charges
    WHERE tenant_id = ${tenantId} AND account = ${account} ORDER BY created_at, id`.execute(db);
  return rows.map((row) => ({
    chargeId: row.id,
    account: row.account,
    cents: Number(row.cents),
    createdAt: row.created_at.toISOString(),
  }));
}
