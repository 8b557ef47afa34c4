/**
 * Flush-while-busy batching. Items submitted while a batch is in flight gather and go together in
 * the next one: idle, an item goes on the next turn of the event loop; under load, one call carries
 * many. A failed batch is retried item by item, so one bad item fails alone.
 *
 * Each batch is taken one event-loop turn (setImmediate) after the previous one ended, not at once:
 * the callers a batch just answered usually submit again in the microtasks that follow, and
 * waiting that one turn lets them join the next batch instead of the first of them going alone and
 * the rest forming a second (measured on the charge ledger with 8 callers: batches alternated 1
 * and 7; with the turn they are 8). At idle the turn costs microseconds.
 */
export type RunBatch<I, O> = (items: readonly I[]) => Promise<O[]>;

export interface BatcherOptions<I> {
  /** Most items in one batch (default 64). */
  readonly maxBatch?: number;
  /** Order of the items within a batch, e.g. by row id so row locks are always taken in one order. */
  readonly order?: (a: I, b: I) => number;
}

interface Pending<I, O> {
  readonly item: I;
  readonly resolve: (output: O) => void;
  readonly reject: (error: unknown) => void;
}

function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

export class Batcher<I, O> {
  readonly #run: RunBatch<I, O>;
  readonly #maxBatch: number;
  readonly #order: ((a: I, b: I) => number) | undefined;
  #pending: Pending<I, O>[] = [];
  #flushing = false;

  constructor(run: RunBatch<I, O>, options: BatcherOptions<I> = {}) {
    const maxBatch = options.maxBatch ?? 64;
    if (!Number.isSafeInteger(maxBatch) || maxBatch < 1)
      throw new RangeError(`maxBatch must be an integer ≥ 1, got ${maxBatch}`);
    this.#run = run;
    this.#maxBatch = maxBatch;
    this.#order = options.order;
  }

  /** Resolves with this item's output once the batch that carried it has succeeded. */
  submit(item: I): Promise<O> {
    return new Promise((resolve, reject) => {
      this.#pending.push({ item, resolve, reject });
      if (!this.#flushing) void this.#flush();
    });
  }

  async #flush(): Promise<void> {
    this.#flushing = true;
    try {
      while (this.#pending.length > 0) {
        await nextTurn();
        const batch = this.#pending.splice(0, this.#maxBatch);
        const order = this.#order;
        if (order) batch.sort((a, b) => order(a.item, b.item));
        if (batch.length === 1) {
          await this.#alone(batch[0] as Pending<I, O>);
          continue;
        }
        try {
          const outputs = await this.#run(batch.map((entry) => entry.item));
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
      const [output] = await this.#run([entry.item]);
      entry.resolve(output as O);
    } catch (error) {
      entry.reject(error);
    }
  }
}
