import { Batcher, type BatcherOptions } from '@taskgate/reliability';
import type { Kysely, Transaction } from 'kysely';
import type { Database } from './schema.ts';

/** Does the work for a batch inside its transaction; returns one output per item, in order. */
export type BatchWork<I, O> = (trx: Transaction<Database>, items: readonly I[]) => Promise<O[]>;

export type GroupCommitOptions<I> = BatcherOptions<I>;

/**
 * Application-level group commit: a Batcher whose batches each run in one transaction. Idle, an
 * item commits at once; under load, one commit (one WAL flush) and, where the work is set-based,
 * one statement cover many items. The work must do for each item exactly what it would do for that
 * item alone, so batching changes the number of commits, not the outcome: a failed batch committed
 * nothing, and its items are retried one transaction each.
 */
export class GroupCommit<I, O> {
  readonly #batcher: Batcher<I, O>;

  constructor(db: Kysely<Database>, work: BatchWork<I, O>, options: GroupCommitOptions<I> = {}) {
    this.#batcher = new Batcher((items) => db.transaction().execute((trx) => work(trx, items)), options);
  }

  run(item: I): Promise<O> {
    return this.#batcher.submit(item);
  }
}
