import { type Kysely, sql } from 'kysely';
import { announceFrom } from '../outbox/outbox-store.ts';
import type { Database } from '../schema.ts';

/** The `inventory.reserved` event of each row of the CTE `reservation`. */
const ANNOUNCE_RESERVATION = announceFrom('reservation', {
  tenantId: 'tenant_id',
  aggregateType: 'inventory',
  aggregateId: 'sku',
  eventType: 'inventory.reserved',
  payload: sql`jsonb_build_object('reservationId', id, 'sku', sku, 'quantity', quantity, 'createdAt', created_at)`,
});

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

export interface InventoryRecord {
  readonly sku: string;
  readonly available: number;
  readonly reserved: number;
  readonly reservations: number;
  readonly updatedAt: string;
}

/**
 * The reserve_inventory effect inside the caller's transaction: takes the quantity from stock only
 * if that much is there (the conditional UPDATE locks the SKU row, so concurrent reservations of
 * one SKU queue up), records the reservation and its `inventory.reserved` outbox event.
 */
export async function reserveStock(
  db: Kysely<Database>,
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
      RETURNING id, tenant_id, sku, quantity, created_at
    ), announced AS (${ANNOUNCE_RESERVATION})
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

/** Sets a SKU's available stock (creating the SKU): the operator's restock. */
export async function setStock(db: Kysely<Database>, tenantId: string, sku: string, available: number): Promise<void> {
  await sql`
    INSERT INTO inventory (tenant_id, sku, available) VALUES (${tenantId}, ${sku}, ${available})
    ON CONFLICT (tenant_id, sku) DO UPDATE SET available = excluded.available, updated_at = now()`.execute(db);
}

/** The SKU's current record, read fresh: what a client refetches after losing its stream. */
export async function findInventory(
  db: Kysely<Database>,
  tenantId: string,
  sku: string,
): Promise<InventoryRecord | null> {
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
