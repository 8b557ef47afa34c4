import { completeAttempt, type Database, type TaskRecord } from '@taskgate/db';
import type { Kysely } from 'kysely';

interface Pending {
  readonly id: string;
  readonly attempt: number;
  readonly result: unknown;
  readonly reason: string;
  readonly resolve: (task: TaskRecord | null) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Commits task completions together: while one transaction of completions is in flight, the next
 * ones gather, then commit as one. Each completion keeps its own conditional UPDATE (lock, cancel
 * check, transition), so batching changes how many commits there are, not who wins a race. Idle,
 * a completion goes at once; under load, one WAL flush covers many tasks.
 */
export class CompletionBatcher {
  readonly #db: Kysely<Database>;
  readonly #maxBatch: number;
  #pending: Pending[] = [];
  #flushing = false;

  constructor(db: Kysely<Database>, maxBatch = 64) {
    this.#db = db;
    this.#maxBatch = maxBatch;
  }

  /** Resolves with the completed task, or null when a cancel or another attempt got there first. */
  complete(id: string, attempt: number, result: unknown, reason: string): Promise<TaskRecord | null> {
    return new Promise((resolve, reject) => {
      this.#pending.push({ id, attempt, result, reason, resolve, reject });
      if (!this.#flushing) void this.#flush();
    });
  }

  async #flush(): Promise<void> {
    this.#flushing = true;
    try {
      while (this.#pending.length > 0) {
        // Row locks taken in id order, as claims take them, so two batches never wait on each other in a cycle.
        const batch = this.#pending.splice(0, this.#maxBatch).sort((a, b) => (a.id < b.id ? -1 : 1));
        try {
          const results = await this.#db.transaction().execute(async (trx) => {
            const completed: (TaskRecord | null)[] = [];
            for (const entry of batch) {
              completed.push(await completeAttempt(trx, entry.id, entry.attempt, entry.result, entry.reason));
            }
            return completed;
          });
          for (const [index, entry] of batch.entries()) entry.resolve(results[index] ?? null);
        } catch {
          // One bad completion must not fail the others: take them one by one.
          await Promise.all(
            batch.map((entry) =>
              completeAttempt(this.#db, entry.id, entry.attempt, entry.result, entry.reason).then(
                entry.resolve,
                entry.reject,
              ),
            ),
          );
        }
      }
    } finally {
      this.#flushing = false;
    }
  }
}
