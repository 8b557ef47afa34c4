/**
 * Progress discipline for one progress token.
 *
 * MCP requires progress values to increase with every notification, so a value that does not is
 * dropped rather than forwarded. A chatty tool must not flood the client either: at most one update
 * leaves per interval, and when several arrive inside one interval only the latest survives, because
 * an older progress value carries nothing the newer one does not. After the task is terminal nothing
 * leaves at all: a progress notification after the final result would contradict it.
 */
export interface ProgressUpdate {
  readonly progress: number;
  readonly total?: number | undefined;
  readonly message?: string | undefined;
}

export interface ProgressGateOptions {
  /** Minimum gap between two emissions, in milliseconds; 0 means no rate limit. */
  readonly intervalMs: number;
}

export class ProgressGate {
  readonly #intervalMs: number;
  #lastEmittedAt: number | undefined;
  // The highest value accepted so far, emitted or held: later offers are compared with it, so a held
  // value that is later overtaken can never be followed by a smaller one.
  #highest: number | undefined;
  #held: ProgressUpdate | null = null;
  #closed = false;

  constructor(options: ProgressGateOptions) {
    if (!Number.isSafeInteger(options.intervalMs) || options.intervalMs < 0) {
      throw new RangeError(
        `intervalMs must be a non-negative integer number of milliseconds, got ${options.intervalMs}`,
      );
    }
    this.#intervalMs = options.intervalMs;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** The update to emit now, or null when it is dropped or held for later. */
  offer(update: ProgressUpdate, now: number): ProgressUpdate | null {
    checkNow(now);
    if (this.#closed || !isWellFormed(update)) return null;
    if (this.#highest !== undefined && update.progress <= this.#highest) return null;
    this.#highest = update.progress;
    const copy = { ...update };
    if (this.#isOpen(now)) {
      // Anything held is older and smaller than this update, so it is superseded, not delayed.
      this.#held = null;
      this.#lastEmittedAt = now;
      return copy;
    }
    this.#held = copy;
    return null;
  }

  /** The held update, once its interval has passed; null otherwise. */
  due(now: number): ProgressUpdate | null {
    checkNow(now);
    if (this.#held === null || !this.#isOpen(now)) return null;
    const update = this.#held;
    this.#held = null;
    this.#lastEmittedAt = now;
    return update;
  }

  /** When `due()` will next release something, for arming a timer; null when nothing is held. */
  nextDueAt(): number | null {
    if (this.#held === null) return null;
    return this.#lastEmittedAt === undefined ? null : this.#lastEmittedAt + this.#intervalMs;
  }

  /** The task reached a terminal status: drop anything held and refuse everything after. */
  close(): void {
    this.#closed = true;
    this.#held = null;
  }

  #isOpen(now: number): boolean {
    return this.#lastEmittedAt === undefined || now - this.#lastEmittedAt >= this.#intervalMs;
  }
}

function isWellFormed(update: ProgressUpdate): boolean {
  if (!Number.isFinite(update.progress)) return false;
  return update.total === undefined || Number.isFinite(update.total);
}

function checkNow(now: number): void {
  if (!Number.isFinite(now)) throw new RangeError(`now must be a finite time in milliseconds, got ${now}`);
}
