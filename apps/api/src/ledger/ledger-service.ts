import {
  type Database,
  findInventory,
  findKey,
  type InventoryRecord,
  type KeyRecord,
  keyFingerprint,
  listOpenReconciliationItems,
  type ReconciliationItem,
  setStock,
} from '@taskgate/db';
import { TaskgateError } from '@taskgate/errors';
import type { Kysely } from 'kysely';
import { ChargeLedger } from './charge-ledger.ts';
import { keyInProgress, keyMismatch } from './key-errors.ts';

/**
 * The reads a client needs to decide what to do after losing a response or a stream: the key's
 * ledger record, the inventory as it is now, and the calls waiting for reconciliation. Also the
 * operator's restock. Tenant-scoped like everything else.
 */
export class LedgerService {
  readonly #db: Kysely<Database>;
  readonly #retentionMs: number;
  readonly #charges: ChargeLedger;

  constructor(db: Kysely<Database>, options: { idempotencyRetentionMs?: number } = {}) {
    this.#db = db;
    this.#charges = new ChargeLedger(db);
    this.#retentionMs = options.idempotencyRetentionMs ?? 24 * 60 * 60 * 1000;
  }

  /**
   * charge_account run synchronously on the atomic ledger: key claim, charge row, outbox event and
   * stored result in one statement. A retry with the key replays the stored result.
   */
  async charge(
    tenantId: string,
    key: string | undefined,
    input: { account: string; cents: number },
  ): Promise<{ result: unknown; replayed: boolean }> {
    if (key === undefined) {
      throw new TaskgateError('TG_IDEMPOTENCY_KEY_MISSING', 'a charge requires an Idempotency-Key header');
    }
    const outcome = await this.#charges.charge({
      claim: { tenantId, key, fingerprint: keyFingerprint('charge_account', input), retentionMs: this.#retentionMs },
      ...input,
    });
    switch (outcome.kind) {
      case 'executed':
        return { result: outcome.result, replayed: false };
      case 'replayed':
        return { result: outcome.result, replayed: true };
      case 'mismatch':
        throw keyMismatch(key, outcome.record.operation);
      case 'in-progress':
        throw keyInProgress(key, outcome.record.taskId, 1);
    }
  }

  async idempotencyRecord(tenantId: string, key: string): Promise<KeyRecord> {
    const record = await findKey(this.#db, tenantId, key);
    if (!record) {
      throw new TaskgateError('TG_IDEMPOTENCY_KEY_NOT_FOUND', `no record of idempotency key ${JSON.stringify(key)}`);
    }
    return record;
  }

  async inventory(tenantId: string, sku: string): Promise<InventoryRecord> {
    const record = await findInventory(this.#db, tenantId, sku);
    if (!record) throw new TaskgateError('TG_SKU_NOT_FOUND', `there is no SKU ${JSON.stringify(sku)}`);
    return record;
  }

  async restock(tenantId: string, sku: string, available: number): Promise<InventoryRecord> {
    await setStock(this.#db, tenantId, sku, available);
    return this.inventory(tenantId, sku);
  }

  reconciliationItems(tenantId: string): Promise<ReconciliationItem[]> {
    return listOpenReconciliationItems(this.#db, tenantId);
  }
}
