import { type Database, deleteExpiredTasks } from '@taskgate/db';
import type { Kysely } from 'kysely';

type LogFn = (fields: Record<string, unknown>, message: string) => void;

/**
 * Deletes terminal tasks past their ttl, a batch at a time. Reads already treat an expired task as
 * not found, so the sweep only reclaims space; several workers may sweep at once.
 */
export class RetentionSweeper {
  readonly #db: Kysely<Database>;
  readonly #intervalMs: number;
  readonly #logger: { readonly info: LogFn; readonly warn: LogFn };
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<number> | null = null;

  constructor(db: Kysely<Database>, intervalMs: number, logger: { readonly info: LogFn; readonly warn: LogFn }) {
    this.#db = db;
    this.#intervalMs = intervalMs;
    this.#logger = logger;
  }

  start(): void {
    this.#timer = setInterval(() => {
      this.sweep().catch((error: Error) => this.#logger.warn({ error: error.message }, 'retention sweep failed'));
    }, this.#intervalMs);
    this.#timer.unref();
  }

  /** Deletes every expired task now; resolves with how many. */
  async sweep(batch = 1_000): Promise<number> {
    this.#running ??= (async () => {
      let total = 0;
      for (;;) {
        const deleted = await deleteExpiredTasks(this.#db, batch);
        total += deleted;
        if (deleted < batch) break;
      }
      if (total > 0) this.#logger.info({ deleted: total }, 'expired tasks deleted');
      return total;
    })().finally(() => {
      this.#running = null;
    });
    return this.#running;
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await this.#running?.catch(() => {});
  }
}
