import {
  type Database,
  deleteDeliveredOutbox,
  deleteEndedConsoleSessions,
  deleteExpiredKeys,
  deleteExpiredTasks,
  deleteIdleMcpSessions,
  deleteStaleInstances,
} from '@taskgate/db';
import type { Kysely } from 'kysely';

/** Delivered outbox rows are kept a week: long enough to answer "was it sent, and when?". */
export const DEFAULT_OUTBOX_RETENTION_MS = 7 * 24 * 60 * 60 * 1000;

/**
 * Instances stopped or silent this long are deleted, with their tool catalog rows. Longer than the
 * longest catalog window (TASKGATE_CATALOG_WINDOW_MS, at most 24 h), so no row that still keeps a
 * tool listed goes; and far longer than the sweeps' "lost" bound, for which a missing row is lost.
 */
export const INSTANCE_RETENTION_MS = 7 * 24 * 60 * 60 * 1000;

type LogFn = (fields: Record<string, unknown>, message: string) => void;

/**
 * Deletes terminal tasks past their ttl, idempotency keys past their retention window, delivered
 * outbox rows past theirs (a batch at a time), instances long gone (INSTANCE_RETENTION_MS) and MCP
 * sessions idle past their window. Reads already treat expired tasks and keys
 * as not found, so the sweep only reclaims space; several workers may sweep at once.
 */
export class RetentionSweeper {
  readonly #db: Kysely<Database>;
  readonly #intervalMs: number;
  readonly #outboxRetentionMs: number;
  readonly #logger: { readonly info: LogFn; readonly warn: LogFn };
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<number> | null = null;

  constructor(
    db: Kysely<Database>,
    intervalMs: number,
    logger: { readonly info: LogFn; readonly warn: LogFn },
    outboxRetentionMs = DEFAULT_OUTBOX_RETENTION_MS,
  ) {
    this.#db = db;
    this.#intervalMs = intervalMs;
    this.#outboxRetentionMs = outboxRetentionMs;
    this.#logger = logger;
  }

  start(): void {
    this.#timer = setInterval(() => {
      this.sweep().catch((error: Error) => this.#logger.warn({ error: error.message }, 'retention sweep failed'));
    }, this.#intervalMs);
    this.#timer.unref();
  }

  /** Deletes every expired task and key now; resolves with how many rows went. */
  async sweep(batch = 1_000): Promise<number> {
    this.#running ??= (async () => {
      const tasks = await this.#drain((limit) => deleteExpiredTasks(this.#db, limit), batch);
      const keys = await this.#drain((limit) => deleteExpiredKeys(this.#db, limit), batch);
      const outbox = await this.#drain(
        (limit) => deleteDeliveredOutbox(this.#db, this.#outboxRetentionMs, limit),
        batch,
      );
      // A few rows per deployment and restart: one statement, no batches.
      const instances = await deleteStaleInstances(this.#db, INSTANCE_RETENTION_MS);
      const sessions = await this.#drain((limit) => deleteIdleMcpSessions(this.#db, limit), batch);
      const consoleSessions = await this.#drain((limit) => deleteEndedConsoleSessions(this.#db, limit), batch);
      const total = tasks + keys + outbox + instances + sessions + consoleSessions;
      if (total > 0) {
        this.#logger.info(
          { tasks, idempotencyKeys: keys, deliveredOutbox: outbox, instances, mcpSessions: sessions, consoleSessions },
          'expired rows deleted',
        );
      }
      return total;
    })().finally(() => {
      this.#running = null;
    });
    return this.#running;
  }

  async #drain(deleteBatch: (limit: number) => Promise<number>, batch: number): Promise<number> {
    let total = 0;
    for (;;) {
      const deleted = await deleteBatch(batch);
      total += deleted;
      if (deleted < batch) return total;
    }
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await this.#running?.catch(() => {});
  }
}
