import type { Database } from '@taskgate/db';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LedgerDatabase } from '../../examples/ledger/ledger-schema.ts';
import { useTestDatabase } from '../support/databases.ts';
import { testPool } from '../support/pg-clients.ts';

// Migration 0003: the ledger, steps, reconciliation, outbox and business tables.
const database = useTestDatabase();
let pool: pg.Pool;
beforeAll(() => {
  pool = testPool({ connectionString: database.url, max: 2 });
});
afterAll(async () => {
  await pool.end();
});

/** Exhaustive by construction: TypeScript rejects a missing or extra key against the Kysely types. */
type Columns<T extends keyof Database> = Record<keyof Database[T], true>;
const all = <T extends keyof Database>(columns: Columns<T>) => Object.keys(columns).sort();
const TABLES: Partial<Record<keyof Database, string[]>> = {
  idempotency_keys: all<'idempotency_keys'>({
    tenant_id: true,
    key: true,
    operation: true,
    fingerprint: true,
    state: true,
    result: true,
    task_id: true,
    created_at: true,
    completed_at: true,
    expires_at: true,
  }),
  task_steps: all<'task_steps'>({
    tenant_id: true,
    task_id: true,
    name: true,
    result: true,
    attempt: true,
    irreversible: true,
    state: true,
    created_at: true,
  }),
  reconciliation_items: all<'reconciliation_items'>({
    id: true,
    tenant_id: true,
    task_id: true,
    tool: true,
    idempotency_key: true,
    reason: true,
    created_at: true,
    resolved_at: true,
    resolution: true,
    kind: true,
    details: true,
    resolved_by: true,
  }),
  outbox: all<'outbox'>({
    id: true,
    tenant_id: true,
    aggregate_type: true,
    aggregate_id: true,
    event_type: true,
    payload: true,
    created_at: true,
    available_at: true,
    attempts: true,
    last_error: true,
    leased_by: true,
    leased_until: true,
    delivered_at: true,
    dead_at: true,
  }),
};

/** The example ledger's tables (its module's migration 0001) against its own Kysely types. */
type LedgerColumns<T extends keyof LedgerDatabase> = Record<keyof LedgerDatabase[T], true>;
const ledgerColumns = <T extends keyof LedgerDatabase>(columns: LedgerColumns<T>) => Object.keys(columns).sort();
const LEDGER_TABLES: Record<keyof LedgerDatabase, string[]> = {
  account_charges: ledgerColumns<'account_charges'>({
    id: true,
    tenant_id: true,
    account: true,
    cents: true,
    idempotency_key: true,
    task_id: true,
    created_at: true,
  }),
  inventory: ledgerColumns<'inventory'>({ tenant_id: true, sku: true, available: true, updated_at: true }),
  inventory_reservations: ledgerColumns<'inventory_reservations'>({
    id: true,
    tenant_id: true,
    sku: true,
    quantity: true,
    idempotency_key: true,
    task_id: true,
    created_at: true,
  }),
};

async function violation(text: string, values: unknown[] = []): Promise<string> {
  try {
    await pool.query(text, values);
  } catch (error) {
    return (error as { constraint?: string; code: string }).constraint ?? (error as { code: string }).code;
  }
  throw new Error(`expected a violation from: ${text}`);
}

const FINGERPRINT = 'a'.repeat(64);

describe('migration 0003: ledger and outbox tables', () => {
  it('matches the Kysely types column for column', async () => {
    for (const [table, columns] of Object.entries({ ...TABLES, ...LEDGER_TABLES })) {
      const { rows } = await pool.query<{ column_name: string }>(
        "SELECT column_name FROM information_schema.columns WHERE table_schema = 'public' AND table_name = $1",
        [table],
      );
      expect(rows.map((row) => row.column_name).sort(), table).toEqual(columns);
    }
  });

  it('keeps one row per tenant and key, and a result only on a completed key', async () => {
    const insert = `INSERT INTO idempotency_keys (tenant_id, key, operation, fingerprint, expires_at)
                    VALUES ($1, $2, 'op', '${FINGERPRINT}', now() + interval '1 day')`;
    await pool.query(insert, ['acme', 'k']);
    await pool.query(insert, ['globex', 'k']);
    expect(await violation(insert, ['acme', 'k'])).toBe('idempotency_keys_pkey');
    expect(
      await violation("UPDATE idempotency_keys SET state = 'completed' WHERE tenant_id = 'acme' AND key = 'k'"),
    ).toBe('idempotency_keys_result_check');
    expect(
      await violation(
        `INSERT INTO idempotency_keys (tenant_id, key, operation, fingerprint, expires_at)
         VALUES ('acme', 'k2', 'op', 'not-a-sha', now())`,
      ),
    ).toBe('idempotency_keys_fingerprint_check');
    expect(await violation(insert, ['acme', ''])).toBe('idempotency_keys_key_check');
  });

  it('never lets stock go below zero, and an outbox row is delivered or dead, not both', async () => {
    await pool.query("INSERT INTO inventory (tenant_id, sku, available) VALUES ('acme', 's', 1)");
    expect(await violation("UPDATE inventory SET available = available - 2 WHERE sku = 's'")).toBe(
      'inventory_available_check',
    );
    expect(
      await violation(
        `INSERT INTO outbox (tenant_id, aggregate_type, aggregate_id, event_type, payload, delivered_at, dead_at)
         VALUES ('acme', 'a', '1', 'e', '{}', now(), now())`,
      ),
    ).toBe('outbox_settled_once_check');
  });
});
