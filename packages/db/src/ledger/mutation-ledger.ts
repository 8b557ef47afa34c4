import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../schema.ts';
import {
  type ClaimOutcome,
  claimKey,
  completeKey,
  findKey,
  type KeyClaim,
  type KeyRecord,
} from './idempotency-keys.ts';

export type LedgerOutcome =
  /** This call ran the effect; `result` is the stored JSON read back, not the effect's own object. */
  | { readonly kind: 'executed'; readonly result: unknown; readonly record: KeyRecord }
  | { readonly kind: 'replayed'; readonly result: unknown; readonly record: KeyRecord }
  | { readonly kind: 'mismatch'; readonly record: KeyRecord }
  | { readonly kind: 'in-progress'; readonly record: KeyRecord };

/**
 * The atomic ledger for a mutation its caller runs itself (no task): the key claim, the effect's
 * rows (and any outbox rows it writes), and the stored result commit in one transaction, or none
 * of them do. Concurrent calls with one key wait on the key's unique index; exactly one runs the
 * effect and the others replay what it stored.
 */
export async function executeOnce(
  db: Kysely<Database>,
  claim: Omit<KeyClaim, 'taskId'>,
  effect: (trx: Transaction<Database>) => Promise<unknown>,
): Promise<LedgerOutcome> {
  // A completed key never changes again (until it expires), so a retry of a committed call is
  // answered from one plain read: no transaction, no row lock for a crowd of retries to queue on.
  const committed = await findKey(db, claim.tenantId, claim.key);
  if (committed?.state === 'completed') {
    return committed.fingerprint === claim.fingerprint && committed.operation === claim.operation
      ? { kind: 'replayed', result: committed.result, record: committed }
      : { kind: 'mismatch', record: committed };
  }
  return db.transaction().execute(async (trx) => {
    const outcome: ClaimOutcome = await claimKey(trx, { ...claim, taskId: null });
    if (outcome.kind === 'replay') {
      return { kind: 'replayed', result: outcome.existing.result, record: outcome.existing };
    }
    if (outcome.kind !== 'claimed') return { kind: outcome.kind, record: outcome.existing };
    const produced = await effect(trx);
    const record = await completeKey(trx, { tenantId: claim.tenantId, key: claim.key, taskId: null, result: produced });
    // The claim is held under a row lock until commit, so nobody can have moved it.
    if (!record) throw new Error(`idempotency key ${claim.key} was lost inside its own transaction`);
    return { kind: 'executed', result: record.result, record };
  });
}
