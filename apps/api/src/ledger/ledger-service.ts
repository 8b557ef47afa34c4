import {
  type Database,
  findKey,
  findReconciliationItem,
  type KeyRecord,
  listReconciliationItems,
  type ReconciliationFilter,
  type ReconciliationItem,
  resolveReconciliationItem,
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

  /** A page of the tenant's items, newest first; `before` is the id the previous page ended at. */
  reconciliationItems(
    tenantId: string,
    query: { filter: ReconciliationFilter; limit: number; before?: string | undefined },
  ): Promise<ReconciliationItem[]> {
    return listReconciliationItems(this.#db, { tenantId, ...query });
  }

  async reconciliationItem(tenantId: string, id: string): Promise<ReconciliationItem> {
    const item = await findReconciliationItem(this.#db, tenantId, id);
    if (item === null) throw itemNotFound(id);
    return item;
  }

  /** Resolves an open item once, with a note and who decided. */
  async resolve(
    tenantId: string,
    id: string,
    decision: { resolution: string; resolvedBy: string },
  ): Promise<ReconciliationItem> {
    const outcome = await resolveReconciliationItem(this.#db, { tenantId, id, ...decision });
    if (outcome.kind === 'not-found') throw itemNotFound(id);
    if (outcome.kind === 'already-resolved') {
      const { item } = outcome;
      throw new TaskgateError(
        'TG_RECONCILIATION_ITEM_RESOLVED',
        `reconciliation item ${id} was resolved already, by ${JSON.stringify(item.resolvedBy)} at ${item.resolvedAt?.toISOString()}: ${item.resolution}`,
      );
    }
    return outcome.item;
  }
}

function itemNotFound(id: string): TaskgateError {
  return new TaskgateError('TG_RECONCILIATION_ITEM_NOT_FOUND', `no reconciliation item ${JSON.stringify(id)}`);
}
