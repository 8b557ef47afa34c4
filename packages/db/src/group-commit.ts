import type { Kysely, Transaction } from 'kysely';
import type { Database } from './schema.ts';

interface Pending<I, O> {
  readonly item: I;
  readonly resolve: (output: O) => void;
  readonly reject: (error: unknown) => void;
}

export interface GroupCommitOptions<I> {
  /** Most items in one transaction. */
  readonly maxBatch?: number;
  /** Order of the items handed to the work, e.g. by row id so row locks are always taken in one order. */
  readonly order?: (a: I, b: I) => number;
}

/** Does the work for a batch inside its transaction; returns one output per item, in order. */
export type BatchWork<I, O> = (trx: Transaction<Database>, items: readonly I[]) => Promise<O[]>;

/**
 * Application-level group commit: while one transaction of work is in flight, the next items
 * gather, then run together in the next transaction. Idle, an item commits at once; under load,
 * one commit (one WAL flush) and, where the work is set-based, one statement cover many items. The
 * work must do for each item exactly what it would do for that item alone, so batching changes the
 * number of commits, not the outcome: if a batch
 * fails, nothing of it was committed, and its items are retried one transaction each, so one
 * failing item cannot take the others down with it.
 */
export class GroupCommit<I, O> {
  readonly #db: Kysely<Database>;
  readonly #work: BatchWork<I, O>;
  readonly #maxBatch: number;
  readonly #order: ((a: I, b: I) => number) | undefined;
  #pending: Pending<I, O>[] = [];
  #flushing = false;

  constructor(db: Kysely<Database>, work: BatchWork<I, O>, options: GroupCommitOptions<I> = {}) {
    this.#db = db;
    this.#work = work;
    this.#maxBatch = options.maxBatch ?? 64;
    this.#order = options.order;
  }

  run(item: I): Promise<O> {
    return new Promise((resolve, reject) => {
      this.#pending.push({ item, resolve, reject });
      if (!this.#flushing) void this.#flush();
    });
  }

  async #flush(): Promise<void> {
    this.#flushing = true;
    try {
      while (this.#pending.length > 0) {
        const batch = this.#pending.splice(0, this.#maxBatch);
        const order = this.#order;
        if (order) batch.sort((a, b) => order(a.item, b.item));
        if (batch.length === 1) {
          await this.#alone(batch[0] as Pending<I, O>);
          continue;
        }
        try {
          const items = batch.map((entry) => entry.item);
          const outputs = await this.#db.transaction().execute((trx) => this.#work(trx, items));
          for (const [index, entry] of batch.entries()) entry.resolve(outputs[index] as O);
        } catch {
          for (const entry of batch) await this.#alone(entry);
        }
      }
    } finally {
      this.#flushing = false;
    }
  }

  async #alone(entry: Pending<I, O>): Promise<void> {
    try {
      const [output] = await this.#db.transaction().execute((trx) => this.#work(trx, [entry.item]));
      entry.resolve(output as O);
    } catch (error) {
      entry.reject(error);
    }
  }
}
