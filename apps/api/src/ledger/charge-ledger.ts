import { type ChargeRequest, chargeAll, chargeFallback, type Database, type LedgerOutcome } from '@taskgate/db';
import { Batcher } from '@taskgate/reliability';
import type { Kysely } from 'kysely';

/**
 * Charges on the atomic ledger with group commit: concurrent charges share one statement (and one
 * commit) while a batch is in flight; idle, a charge goes at once. Every charge still commits its
 * key, its row, its outbox event and its stored result together — batching changes the number of
 * commits, not what commits with what. A key that already existed takes the general ledger path.
 */
export class ChargeLedger {
  readonly #db: Kysely<Database>;
  readonly #batcher: Batcher<ChargeRequest, LedgerOutcome | null>;

  constructor(db: Kysely<Database>) {
    this.#db = db;
    this.#batcher = new Batcher((requests) => this.#run(requests), {
      maxBatch: 64,
      // Two statements at once: with 8 callers, 2.4k → 3.8k charges/s here, as Postgres and Node
      // work on both cores instead of one batch at a time. (Task creates and completions measured
      // slower with two lanes, so they keep one.)
      lanes: 2,
      // Keys are claimed in one order by every batch, so two batches in flight (the two lanes, or
      // two API processes) cannot deadlock on each other's uncommitted keys.
      order: (a, b) => compare(a.claim.tenantId, b.claim.tenantId) || compare(a.claim.key, b.claim.key),
    });
  }

  async charge(request: ChargeRequest): Promise<LedgerOutcome> {
    return (await this.#batcher.submit(request)) ?? chargeFallback(this.#db, request);
  }

  /** One statement per batch; a key repeated within the batch waits for the next (then replays). */
  async #run(requests: readonly ChargeRequest[]): Promise<(LedgerOutcome | null)[]> {
    const seen = new Set<string>();
    const first = requests.map((request) => {
      const id = `${request.claim.tenantId}\u0000${request.claim.key}`;
      if (seen.has(id)) return false;
      seen.add(id);
      return true;
    });
    const outcomes = await chargeAll(
      this.#db,
      requests.filter((_, index) => first[index]),
    );
    let next = 0;
    return requests.map((_, index) => (first[index] ? (outcomes[next++] ?? null) : null));
  }
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
