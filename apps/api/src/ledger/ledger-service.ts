import {
  type Database,
  findKey,
  type KeyRecord,
  listOpenReconciliationItems,
  type ReconciliationItem,
} from '@taskgate/db';
import { TaskgateError } from '@taskgate/errors';
import type { Kysely } from 'kysely';

/**
 * The reads a client needs to decide what to do after losing a response or a stream: the key's
 * ledger record and the calls waiting for reconciliation. Tenant-scoped like everything else.
 * (A tool module's own state is read through its own routes.)
 */
export class LedgerService {
  readonly #db: Kysely<Database>;

  constructor(db: Kysely<Database>) {
    this.#db = db;
  }

  async idempotencyRecord(tenantId: string, key: string): Promise<KeyRecord> {
    const record = await findKey(this.#db, tenantId, key);
    if (!record) {
      throw new TaskgateError('TG_IDEMPOTENCY_KEY_NOT_FOUND', `no record of idempotency key ${JSON.stringify(key)}`);
    }
    return record;
  }

  reconciliationItems(tenantId: string): Promise<ReconciliationItem[]> {
    return listOpenReconciliationItems(this.#db, tenantId);
  }
}
