import { backoffDelay, type CancelSignal } from '@taskgate/reliability';

/**
 * Cancels of tasks whose request is gone that could not be written (the database unreachable as
 * the client went away), tried again until they land. Unwritten, such a task runs on — tied to
 * this instance, which is alive, so no sweeper takes it — until its max clock, doing what its
 * caller no longer wants. A retry that lands on a task already ended changes nothing (cancel is
 * idempotent). If this instance stops first, its stopped row has the sweeper cancel its
 * request-mode tasks, these among them.
 */
export interface CancelRetriesOptions {
  /** Writes the cancel, fenced by the task's adoptions as the gone request saw them; rejects when it could not. */
  readonly cancel: (
    tenantId: string,
    taskId: string,
    reason: string,
    adoptions: number,
    signal: CancelSignal,
  ) => Promise<unknown>;
  /** Whether a failure is worth another try (the database away), or final (the task is gone). */
  readonly retryable: (error: unknown) => boolean;
  readonly log: (fields: Record<string, unknown>, message: string) => void;
  /** The first retry's ceiling (default 1 s); each later one doubles, up to maxDelayMs (30 s). Full jitter under it (backoffDelay). */
  readonly firstDelayMs?: number;
  readonly maxDelayMs?: number;
  /**
   * Tries before giving up (default 80: their ceilings add up to about 38 minutes, and full jitter
   * halves that on average); the task's max clock ends it then.
   */
  readonly maxAttempts?: number;
  /** Cancels waiting at most (default 10,000): past it the oldest is given up, said in the log. */
  readonly maxPending?: number;
  /** A value in [0, 1), for the jitter: retries of cancels that failed together do not arrive together. */
  readonly random?: () => number;
  readonly setTimer?: (run: () => void, ms: number) => unknown;
  readonly clearTimer?: (timer: unknown) => void;
}

const MAX_REASON_CHARS = 1_000;

interface Pending {
  readonly tenantId: string;
  readonly taskId: string;
  readonly reason: string;
  readonly adoptions: number;
  readonly signal: CancelSignal;
  attempts: number;
  timer: unknown;
}

export class CancelRetries {
  readonly #options: CancelRetriesOptions;
  readonly #pending = new Map<string, Pending>();
  #stopped = false;

  constructor(options: CancelRetriesOptions) {
    this.#options = options;
  }

  /** How many cancels wait for their next try. */
  get pending(): number {
    return this.#pending.size;
  }

  /** A cancel that failed once: tried again after a delay, and again, until it lands. */
  add(tenantId: string, taskId: string, reason: string, adoptions = 0, signal: CancelSignal = 'other'): void {
    if (this.#stopped) return;
    const key = `${tenantId}\u0000${taskId}`;
    if (this.#pending.has(key)) return;
    const max = this.#options.maxPending ?? 10_000;
    while (this.#pending.size >= max) {
      const [oldestKey, oldest] = this.#pending.entries().next().value as [string, Pending];
      this.#drop(oldestKey, oldest);
      this.#options.log(
        { taskId: oldest.taskId, attempts: oldest.attempts },
        `a task's cancel was given up: more than ${max} wait to be retried; its max clock ends it`,
      );
    }
    // The reason comes from the client: kept short, as 10,000 waiting cancels may each hold one.
    const kept = reason.length > MAX_REASON_CHARS ? `${reason.slice(0, MAX_REASON_CHARS)}…` : reason;
    const entry: Pending = { tenantId, taskId, reason: kept, adoptions, signal, attempts: 1, timer: null };
    this.#pending.set(key, entry);
    this.#schedule(key, entry);
  }

  /** Clears every timer: the instance stops, and the sweeper cancels what it held. */
  stop(): void {
    this.#stopped = true;
    for (const [key, entry] of this.#pending) this.#drop(key, entry);
  }

  #schedule(key: string, entry: Pending): void {
    const jittered = backoffDelay(
      entry.attempts - 1,
      { baseMs: this.#options.firstDelayMs ?? 1_000, capMs: this.#options.maxDelayMs ?? 30_000 },
      this.#options.random ?? Math.random,
    );
    const run = () => void this.#retry(key, entry);
    // Unref'd: a retry never keeps a stopping process alive (the sweeper covers what it held).
    entry.timer = this.#options.setTimer ? this.#options.setTimer(run, jittered) : setTimeout(run, jittered).unref();
  }

  async #retry(key: string, entry: Pending): Promise<void> {
    if (this.#pending.get(key) !== entry) return;
    entry.timer = null;
    try {
      await this.#options.cancel(entry.tenantId, entry.taskId, entry.reason, entry.adoptions, entry.signal);
      this.#pending.delete(key);
      this.#options.log({ taskId: entry.taskId, attempts: entry.attempts + 1 }, "a task's cancel landed on a retry");
    } catch (error) {
      if (this.#pending.get(key) !== entry) return;
      entry.attempts += 1;
      const message = (error as Error).message;
      if (!this.#options.retryable(error)) {
        this.#pending.delete(key);
        this.#options.log({ taskId: entry.taskId, error: message }, "a task's cancel was given up: it cannot land");
        return;
      }
      if (entry.attempts >= (this.#options.maxAttempts ?? 80)) {
        this.#pending.delete(key);
        this.#options.log(
          { taskId: entry.taskId, attempts: entry.attempts, error: message },
          "a task's cancel was given up after its retries; its max clock ends it",
        );
        return;
      }
      if (!this.#stopped) this.#schedule(key, entry);
    }
  }

  #drop(key: string, entry: Pending): void {
    if (entry.timer !== null) (this.#options.clearTimer ?? clearTimeout)(entry.timer as NodeJS.Timeout);
    this.#pending.delete(key);
  }
}
