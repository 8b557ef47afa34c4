import { type Kysely, sql } from 'kysely';
import type { Database } from '../schema.ts';
import { TASK_CHANNEL, type TaskNotification } from './task-record.ts';
import { type AnnouncedTask, HeldChanges, type TaskChange, type TaskChanges, type TaskWriter } from './task-writer.ts';

type LogFn = (fields: Record<string, unknown>, message: string) => void;

/** Most notifications in one statement. */
const MAX_PER_STATEMENT = 1_000;
/** Longest payload that carries a progress value (Postgres refuses payloads of 8000 bytes and more). */
const MAX_PROGRESS_PAYLOAD_BYTES = 4_000;

/**
 * Announces task changes on TASK_CHANNEL after they commit, in a statement of its own.
 *
 * Why not pg_notify inside the writing transaction: Postgres serializes the commits of all
 * transactions that NOTIFY (a database-wide lock taken before the commit record and held through
 * its WAL flush), so notifying writers lose group commit. Measured here with pgbench: one-row
 * INSERT transactions went from 1.8k to 4.7k per second from 1 to 8 clients, the same with a
 * pg_notify inside from 1.5k to 2.5k. A statement that only notifies writes no WAL of its own
 * and holds the lock for microseconds (12k per second on one connection).
 *
 * The cost is that a notification is no longer atomic with its change: a process that dies between
 * the commit and the announcement loses the hint. Every listener already treats notifications as
 * hints and polls behind them (the worker's pump, the cancel watcher and its checkpoint re-read,
 * the API's waits), so a lost one delays what it announced, as a lost connection always could.
 * A notification still never precedes its commit: it is sent only after the commit returned.
 *
 * Announcements made in the same event-loop turn go in one statement; a failed statement is
 * logged and dropped (the polls cover it), never retried into a database that is struggling.
 */
export class TaskAnnouncer implements TaskChanges {
  readonly #db: Kysely<Database>;
  readonly #logger: { readonly warn: LogFn } | undefined;
  #pending: string[] = [];
  #flushing: Promise<void> | null = null;

  constructor(db: Kysely<Database>, options: { logger?: { readonly warn: LogFn } } = {}) {
    this.#db = db;
    this.#logger = options.logger;
  }

  /**
   * A writer for statements that commit on their own: each change is announced as its statement
   * returns. A transaction's writes go through transaction() instead, so nothing is announced
   * before it commits.
   */
  writer(db: Kysely<Database> = this.#db): TaskWriter {
    if (db.isTransaction) {
      throw new TypeError("a transaction's task writes are announced after its commit: use TaskAnnouncer.transaction");
    }
    return { db, changes: this };
  }

  /**
   * Runs `work` in a transaction whose task changes are announced once it has committed (and
   * dropped if it rolls back).
   */
  async transaction<T>(db: Kysely<Database>, work: (writer: TaskWriter) => Promise<T>): Promise<T> {
    const held = new HeldChanges();
    const result = await db.transaction().execute((trx) => work({ db: trx, changes: held }));
    held.release(this);
    return result;
  }

  /**
   * Announces changes that have committed (the writers call it; nothing else needs to). Does not
   * wait for the send.
   */
  changed(change: TaskChange, tasks: Iterable<AnnouncedTask | null | undefined>): void {
    for (const task of tasks) {
      if (!task) continue;
      const notification: TaskNotification = {
        id: task.id,
        tenant: task.tenantId,
        event: change,
        status: task.status,
        // New work names its tool, so that only the workers serving it fetch (one queue per tool).
        ...((change === 'created' || change === 'resumed') && task.tool !== undefined ? { tool: task.tool } : {}),
      };
      const withProgress =
        change === 'progress' && task.progress ? JSON.stringify({ ...notification, progress: task.progress }) : null;
      // A payload past Postgres's bound (8000 bytes) would fail the whole statement: a progress
      // message that long goes without its value, and listeners read the row for it.
      this.#pending.push(
        withProgress !== null && Buffer.byteLength(withProgress) <= MAX_PROGRESS_PAYLOAD_BYTES
          ? withProgress
          : JSON.stringify(notification),
      );
    }
    if (this.#pending.length > 0 && !this.#flushing) this.#flushing = this.#flush();
  }

  /** Resolves once every announcement made so far has been sent (or dropped): for shutdown. */
  async settled(): Promise<void> {
    while (this.#flushing) await this.#flushing;
  }

  async #flush(): Promise<void> {
    try {
      while (this.#pending.length > 0) {
        // One turn of the event loop, so the announcements of callers answered together go together.
        await new Promise((resolve) => setImmediate(resolve));
        const payloads = this.#pending.splice(0, MAX_PER_STATEMENT);
        try {
          await sql`SELECT pg_notify(${TASK_CHANNEL}, payload) FROM unnest(${payloads}::text[]) AS p(payload)`.execute(
            this.#db,
          );
        } catch (error) {
          this.#logger?.warn(
            { error: (error as Error).message, dropped: payloads.length },
            'task notifications not sent; listeners will see the changes at their next poll',
          );
        }
      }
    } finally {
      this.#flushing = null;
    }
  }
}
