import type { ColumnType, Generated } from 'kysely';

/** The ledger module's own tables (migrations/), as Kysely sees them: ctx.commit's `db` is typed by this. */
export interface LedgerDatabase {
  account_charges: {
    id: Generated<string>;
    tenant_id: string;
    account: string;
    cents: ColumnType<string, number, number>;
    idempotency_key: string | null;
    task_id: string | null;
    created_at: ColumnType<Date, string | undefined, never>;
  };
  inventory: {
    tenant_id: string;
    sku: string;
    available: number;
    updated_at: ColumnType<Date, string | undefined, string>;
  };
  inventory_reservations: {
    id: Generated<string>;
    tenant_id: string;
    sku: string;
    quantity: number;
    idempotency_key: string | null;
    task_id: string | null;
    created_at: ColumnType<Date, string | undefined, never>;
  };
}
