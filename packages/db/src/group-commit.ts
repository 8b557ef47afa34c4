import { Batcher, type BatcherOptions } from '@taskgate/reliability';

/** Runs `work` in one transaction (for tasks: TaskAnnouncer.transaction, which announces after the commit). */
export type TransactionRunner<S> = <T>(work: (scope: S) => Promise<T>) => Promise<T>;

/** Does the work for a batch inside its transaction; returns one output per item, in order. */
export type BatchWork<S, I, O> = (scope: S, items: readonly I[]) => Promise<O[]>;

export type GroupCommitOptions<I> = BatcherOptions<I>;

/**
 * Application-level group commit: a Batcher whose batches each run in one transaction. Idle, an
 * item commits at once; under load, one commit (one WAL flush) and, where the work is set-based,
 * one statement cover many items. The work must do for each item exactly what it would do for that
 * item alone, so batching changes the number of commits, not the outcome: a failed batch committed
 * nothing, and its items are retried one transaction each.
 */
export class GroupCommit<S, I, O> {
  readonly #batcher: Batcher<I, O>;

  constructor(transaction: TransactionRunner<S>, work: BatchWork<S, I, O>, options: GroupCommitOptions<I> = {}) {
    this.#batcher = new Batcher((items) => transaction((scope) => work(scope, items)), options);
  }

  run(item: I): Promise<O> {
    return this.#batcher.submit(item);
  }
}
