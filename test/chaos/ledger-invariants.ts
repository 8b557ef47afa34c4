import type pg from 'pg';
import type { ClientRecord } from './client-record.ts';
import { INVARIANTS, type InvariantResult, verdict } from './invariant.ts';
import type { Tenant } from './workload-context.ts';

const EFFECTS = {
  charge: { table: 'account_charges', operation: 'charge_account' },
  reservation: { table: 'inventory_reservations', operation: 'reserve_inventory' },
} as const;

export interface LedgerCounts {
  /** Keys with more than one effect row. */
  duplicated: number;
  /** Keyed calls told "succeeded" whose effect row is missing (or is another row). */
  lost: number;
}

/** The idempotency ledger and the stock, held against what the clients were told. */
export async function ledgerInvariants(
  db: pg.Client,
  record: ClientRecord,
  tenants: readonly Tenant[],
): Promise<{ results: InvariantResult[]; counts: LedgerCounts }> {
  const calls = [...record.keyed.values()];
  const unanswered = calls
    .filter((call) => call.state === 'pending' || call.state === 'abandoned' || call.state === 'rejected')
    .map(
      (call) =>
        `${call.tenant}/${call.key} (${call.kind}): ${call.state} after ${call.attempts} attempt(s) ${call.detail}`,
    );

  const effects = new Map<string, string[]>();
  const duplicates: string[] = [];
  for (const [kind, { table }] of Object.entries(EFFECTS)) {
    const { rows } = await db.query<{ tenant_id: string; idempotency_key: string; ids: string[] }>(
      `SELECT tenant_id, idempotency_key, array_agg(id::text ORDER BY created_at) AS ids
       FROM ${table} WHERE idempotency_key IS NOT NULL GROUP BY tenant_id, idempotency_key`,
    );
    for (const row of rows) {
      effects.set(`${kind}:${row.tenant_id}/${row.idempotency_key}`, row.ids);
      if (row.ids.length > 1) {
        duplicates.push(
          `${table} ${row.tenant_id}/${row.idempotency_key}: ${row.ids.length} rows ${row.ids.join(', ')}`,
        );
      }
    }
  }

  const missing: string[] = [];
  for (const call of calls) {
    const ids = effects.get(`${call.kind}:${call.tenant}/${call.key}`) ?? [];
    if (call.state === 'succeeded' && (ids.length !== 1 || ids[0] !== call.effectId)) {
      missing.push(
        `${call.tenant}/${call.key}: told ${call.kind} ${call.effectId} (${call.detail}); rows: [${ids.join(', ')}]`,
      );
    }
    if (call.state === 'refused' && ids.length > 0) {
      missing.push(`${call.tenant}/${call.key}: told refused (${call.detail}), yet rows [${ids.join(', ')}] exist`);
    }
  }

  // A committed key without its effect, or an effect whose key never committed: not atomic.
  const torn: string[] = [];
  for (const [kind, { table, operation }] of Object.entries(EFFECTS)) {
    const reserved = kind === 'reservation' ? "AND k.result->'structuredContent' ? 'reservation'" : '';
    const { rows: keyOnly } = await db.query<{ tenant_id: string; key: string; task_id: string | null }>(
      `SELECT k.tenant_id, k.key, k.task_id FROM idempotency_keys k
       WHERE k.state = 'completed' AND k.operation = $1 ${reserved}
         AND NOT EXISTS (SELECT 1 FROM ${table} e WHERE e.tenant_id = k.tenant_id AND e.idempotency_key = k.key)`,
      [operation],
    );
    for (const row of keyOnly)
      torn.push(`key ${row.tenant_id}/${row.key} committed (task ${row.task_id}) without a ${table} row`);
    const { rows: effectOnly } = await db.query<{ tenant_id: string; idempotency_key: string; id: string }>(
      `SELECT e.tenant_id, e.idempotency_key, e.id FROM ${table} e
       LEFT JOIN idempotency_keys k ON k.tenant_id = e.tenant_id AND k.key = e.idempotency_key
       WHERE e.idempotency_key IS NOT NULL AND (k.key IS NULL OR k.state <> 'completed')`,
    );
    for (const row of effectOnly)
      torn.push(`${table} ${row.id} under ${row.tenant_id}/${row.idempotency_key}, whose key is not completed`);
  }

  const stock: string[] = [];
  const { rows: skus } = await db.query<{ tenant_id: string; sku: string; available: number; reserved: string }>(
    `SELECT i.tenant_id, i.sku, i.available, coalesce(sum(r.quantity), 0) AS reserved
     FROM inventory i LEFT JOIN inventory_reservations r ON r.tenant_id = i.tenant_id AND r.sku = i.sku
     GROUP BY i.tenant_id, i.sku, i.available`,
  );
  for (const tenant of tenants) {
    for (const [sku, initial] of Object.entries(tenant.stock)) {
      const row = skus.find((candidate) => candidate.tenant_id === tenant.name && candidate.sku === sku);
      const reserved = Number(row?.reserved ?? 0);
      if (!row || row.available + reserved !== initial) {
        stock.push(`${tenant.name}/${sku}: initial ${initial} ≠ available ${row?.available} + reserved ${reserved}`);
      }
    }
  }

  const succeeded = calls.filter((call) => call.state === 'succeeded').length;
  return {
    counts: { duplicated: duplicates.length, lost: missing.length },
    results: [
      verdict(
        INVARIANTS.keyedAnswered,
        unanswered,
        `${calls.length} keyed call(s): ${succeeded} succeeded, ${calls.filter((c) => c.state === 'refused').length} refused (stock), ${unanswered.length} without an answer`,
      ),
      verdict(
        INVARIANTS.keyedSuccessOnce,
        missing,
        `${succeeded} success(es) held against the effect tables, ${missing.length} wrong`,
      ),
      verdict(
        INVARIANTS.keyEffectOnce,
        [...duplicates, ...torn],
        `${duplicates.length} key(s) with several effects, ${torn.length} torn key/effect pair(s)`,
      ),
      verdict(
        INVARIANTS.stockConserved,
        stock,
        `${tenants.reduce((n, t) => n + Object.keys(t.stock).length, 0)} SKU(s), ${stock.length} off`,
      ),
    ],
  };
}
