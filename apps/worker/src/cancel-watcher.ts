import { type Database, readCancelStates, type TaskListener } from '@taskgate/db';
import type { Kysely } from 'kysely';

type LogFn = (fields: Record<string, unknown>, message: string) => void;

export interface CancelWatcherOptions {
  readonly db: Kysely<Database>;
  /**
   * The worker's LISTEN connection (the fast path). Null where NOTIFY cannot reach this process
   * (the embedded Postgres); the poll then carries cancels alone.
   */
  readonly listener: TaskListener | null;
  /** How often the watched tasks' cancel flags are read from the database (the floor). */
  readonly pollIntervalMs: number;
  readonly logger: { readonly debug: LogFn; readonly warn: LogFn };
}

type OnCancel = (how: 'notification' | 'poll') => void;

/**
 * Wakes the worker that holds a task when its cancel is requested. NOTIFY is a latency hint, never
 * the only path: the same flags are polled for every task this worker holds, so a lost
 * notification (a dropped listener connection, a NOTIFY that went elsewhere) only delays a cancel.
 */
export class CancelWatcher {
  readonly #options: CancelWatcherOptions;
  readonly #watched = new Map<string, OnCancel>();
  #pollTimer: NodeJS.Timeout | undefined;
  #stopped = false;

  constructor(options: CancelWatcherOptions) {
    this.#options = options;
    options.listener?.onNotification((notification) => {
      if (notification.event === 'cancel') this.#watched.get(notification.id)?.('notification');
    });
  }

  start(): void {
    this.#schedulePoll();
  }

  /** Calls onCancel at most once, when the task's cancel is requested. Returns the unwatch function. */
  watch(taskId: string, onCancel: OnCancel): () => void {
    let fired = false;
    const once: OnCancel = (how) => {
      if (fired) return;
      fired = true;
      onCancel(how);
    };
    this.#watched.set(taskId, once);
    return () => {
      if (this.#watched.get(taskId) === once) this.#watched.delete(taskId);
    };
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#pollTimer);
  }

  /** Reads the watched tasks' flags now (after a lost LISTEN connection came back). */
  pollNow(): void {
    this.#poll().catch((error: Error) => this.#options.logger.warn({ error: error.message }, 'cancel poll failed'));
  }

  #schedulePoll(): void {
    if (this.#stopped) return;
    this.#pollTimer = setTimeout(() => {
      this.#poll()
        .catch((error: Error) => this.#options.logger.warn({ error: error.message }, 'cancel poll failed'))
        .finally(() => this.#schedulePoll());
    }, this.#options.pollIntervalMs);
    this.#pollTimer.unref();
  }

  async #poll(): Promise<void> {
    const ids = [...this.#watched.keys()];
    if (ids.length === 0) return;
    for (const state of await readCancelStates(this.#options.db, ids)) {
      if (state.cancelRequested) this.#watched.get(state.id)?.('poll');
    }
  }
}
