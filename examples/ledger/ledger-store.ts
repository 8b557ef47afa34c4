import { randomUUID } from 'node:crypto';
import type { OutboxEvent, ToolResult } from '@taskgate/sdk';
import { type Kysely, sql } from 'kysely';
import type { LedgerDatabase } from './ledger-schema.ts';

/**
 * The only SQL on the ledger's tables. Every writer takes the caller's transaction (a task's final
 * commit, or the REST mutation's batch), so the rows commit with the key, the result and the
 * outbox events, or not at all.
 */

type Db = Kysely<LedgerDatabase>;

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
 * Charges in one statement, in input order. Ids are chosen here, so each row is matched to its
 * input by id rather than by the order of RETURNING, which Postgres does not promise.
 */
export async function insertCharges(db: Db, inputs: readonly ChargeInput[]): Promise<Charge[]> {
  if (inputs.length === 0) return [];
  const ids = inputs.map(() => randomUUID());
  const rows = JSON.stringify(
    inputs.map((input, ordinal) => ({
      ordinal,
      id: ids[ordinal],
      tenant_id: input.tenantId,
      account: input.account,
      cents: input.cents,
      idempotency_key: input.idempotencyKey,
      task_id: input.taskId,
    })),
  );
  const { rows: inserted } = await sql<{ id: string; created_at: Date }>`
    INSERT INTO account_charges (id, tenant_id, account, cents, idempotency_key, task_id)
    SELECT id, tenant_id, account, cents, idempotency_key, task_id
    FROM jsonb_to_recordset(${rows}::jsonb) AS x(
      ordinal int, id uuid, tenant_id text, account text, cents bigint, idempotency_key text, task_id uuid)
    ORDER BY ordinal
    RETURNING id, created_at`.execute(db);
  const createdAt = new Map(inserted.map((row) => [row.id, row.created_at.toISOString()]));
  return inputs.map((input, ordinal) => {
    const chargeId = ids[ordinal] as string;
    const created = createdAt.get(chargeId);
    if (created === undefined) throw new Error(`charge ${chargeId} was not inserted`);
    return { chargeId, account: input.account, cents: input.cents, createdAt: created };
  });
}

/** The `account.charged` event of a charge. */
export function chargedEvent(charge: Charge): OutboxEvent {
  return { aggregateType: 'account', aggregateId: charge.account, eventType: 'account.charged', payload: charge };
}

/**
 * What charge_account stores under its key and returns, whichever path ran it (the tool in a
 * worker, or the REST operation): an MCP CallToolResult, so a replay looks the same on every path.
 */
export function chargeToolResult(charge: Charge): ToolResult {
  return {
    content: [{ type: 'text', text: `charged ${charge.cents} cents to ${charge.account} (charge ${charge.chargeId})` }],
    structuredContent: { charge },
  };
}

/** The charges of one account, oldest first (for reconciliation and tests). */
export async function listCharges(db: Db, tenantId: string, account: string): Promise<Charge[]> {
  const rows = await db
    .selectFrom('account_charges')
    .select(['id', 'account', 'cents', 'created_at'])
    .where('tenant_id', '=', tenantId)
    .where('account', '=', account)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  return rows.map((row) => ({
    chargeId: row.id,
    account: row.account,
    cents: Number(row.cents),
    createdAt: row.created_at.toISOString(),
  }));
}

/** A reservation as stored and returned: what was reserved, nothing about who paid or how. */
export interface Reservation {
  readonly reservationId: string;
  readonly sku: string;
  readonly quantity: number;
  readonly createdAt: string;
}

export type ReserveOutcome =
  | { readonly ok: true; readonly reservation: Reservation; readonly available: number }
  | { readonly ok: false; readonly reason: 'unknown-sku' | 'insufficient-stock'; readonly available: number };

/**
 * Takes the quantity from stock only if that much is there (the conditional UPDATE locks the SKU
 * row, so concurrent reservations of one SKU queue up) and records the reservation.
 */
export async function reserveStock(
  db: Db,
  input: { tenantId: string; sku: string; quantity: number; idempotencyKey: string | null; taskId: string | null },
): Promise<ReserveOutcome> {
  const { rows } = await sql<{ id: string | null; created_at: Date | null; available: number | null; known: boolean }>`
    WITH stock AS (
      UPDATE inventory SET available = available - ${input.quantity}, updated_at = now()
      WHERE tenant_id = ${input.tenantId} AND sku = ${input.sku} AND available >= ${input.quantity}
      RETURNING tenant_id, sku, available
    ), reservation AS (
      INSERT INTO inventory_reservations (tenant_id, sku, quantity, idempotency_key, task_id)
      SELECT tenant_id, sku, ${input.quantity}, ${input.idempotencyKey}, ${input.taskId}::uuid FROM stock
      RETURNING id, created_at
    )
    SELECT r.id, r.created_at,
           coalesce((SELECT available FROM stock),
                    (SELECT available FROM inventory WHERE tenant_id = ${input.tenantId} AND sku = ${input.sku})) AS available,
           EXISTS (SELECT 1 FROM inventory WHERE tenant_id = ${input.tenantId} AND sku = ${input.sku}) AS known
    FROM (SELECT 1) AS one LEFT JOIN reservation r ON true`.execute(db);
  const row = rows[0];
  if (row?.id && row.created_at) {
    return {
      ok: true,
      reservation: {
        reservationId: row.id,
        sku: input.sku,
        quantity: input.quantity,
        createdAt: row.created_at.toISOString(),
      },
      available: row.available ?? 0,
    };
  }
  return { ok: false, reason: row?.known ? 'insufficient-stock' : 'unknown-sku', available: row?.available ?? 0 };
}

/** The `inventory.reserved` event of a reservation. */
export function reservedEvent(reservation: Reservation): OutboxEvent {
  return {
    aggregateType: 'inventory',
    aggregateId: reservation.sku,
    eventType: 'inventory.reserved',
    payload: reservation,
  };
}

export interface InventoryRecord {
  readonly sku: string;
  readonly available: number;
  readonly reserved: number;
  readonly reservations: number;
  readonly updatedAt: string;
}

/** Sets a SKU's available stock (creating the SKU): the operator's restock. */
export async function setStock(db: Db, tenantId: string, sku: string, available: number): Promise<void> {
  await db
    .insertInto('inventory')
    .values({ tenant_id: tenantId, sku, available })
    .onConflict((conflict) =>
      conflict.columns(['tenant_id', 'sku']).doUpdateSet({ available, updated_at: sql<string>`now()` }),
    )
    .execute();
}

/** The SKU's current record, read fresh: what a client refetches after losing its stream. */
export async function findInventory(db: Db, tenantId: string, sku: string): Promise<InventoryRecord | null> {
  const { rows } = await sql<{
    sku: string;
    available: number;
    reserved: string;
    reservations: string;
    updated_at: Date;
  }>`
    SELECT i.sku, i.available, i.updated_at,
           coalesce(sum(r.quantity), 0) AS reserved, count(r.id) AS reservations
    FROM inventory i LEFT JOIN inventory_reservations r ON r.tenant_id = i.tenant_id AND r.sku = i.sku
    WHERE i.tenant_id = ${tenantId} AND i.sku = ${sku}
    GROUP BY i.tenant_id, i.sku`.execute(db);
  const row = rows[0];
  if (!row) return null;
  return {
    sku: row.sku,
    available: row.available,
    reserved: Number(row.reserved),
    reservations: Number(row.reservations),
    updatedAt: row.updated_at.toISOString(),
  };
}
