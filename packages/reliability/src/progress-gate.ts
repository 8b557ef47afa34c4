/**
 * Progress discipline for one progress token.
 *
 * MCP requires progress values to increase with every notification, so a value that does not is
 * dropped rather than forwarded. A chatty tool must not flood the client either: updates leave at
 * one per interval on average, a token bucket of `burst` updates letting a short run through at
 * once (a tool reporting three steps 50 ms apart is told as three steps), and what arrives while
 * the bucket is empty is held, only the latest surviving, because an older progress value carries
 * nothing the newer one does not. After the task is terminal nothing
 * leaves at all: a progress notification after the final result would contradict it.
 */
export interface ProgressUpdate {
  readonly progress: number;
  readonly total?: number | undefined;
  readonly message?: string | undefined;
}

export interface ProgressGateOptions {
  /** One emission per this many milliseconds, sustained; 0 means no rate limit. */
  readonly intervalMs: number;
  /** How many emissions may leave back to back before the interval applies (default 1). */
  readonly burst?: number;
}

export class ProgressGate {
  readonly #intervalMs: number;
  readonly #burst: number;
  /** Emissions allowed now (fractional while refilling), as of #tokensAt; undefined before the first offer. */
  #tokens: number;
  #tokensAt: number | undefined;
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
    const burst = options.burst ?? 1;
    if (!Number.isSafeInteger(burst) || burst < 1) {
      throw new RangeError(`burst must be a positive integer, got ${burst}`);
    }
    this.#intervalMs = options.intervalMs;
    this.#burst = burst;
    this.#tokens = burst;
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
      this.#tokens -= 1;
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
    this.#tokens -= 1;
    return update;
  }

  /** When `due()` will next release something, for arming a timer; null when nothing is held. */
  nextDueAt(): number | null {
    if (this.#held === null || this.#tokensAt === undefined) return null;
    return this.#tokensAt + Math.max(0, 1 - this.#tokens) * this.#intervalMs;
  }

  /** The task reached a terminal status: drop anything held and refuse everything after. */
  close(): void {
    this.#closed = true;
    this.#held = null;
  }

  #isOpen(now: number): boolean {
    if (this.#intervalMs === 0) {
      this.#tokens = this.#burst;
      return true;
    }
    // A clock that steps back refills nothing (and does not move the bucket's time back).
    if (this.#tokensAt === undefined) this.#tokensAt = now;
    else if (now > this.#tokensAt) {
      this.#tokens = Math.min(this.#burst, this.#tokens + (now - this.#tokensAt) / this.#intervalMs);
      this.#tokensAt = now;
    }
    // A hair under one counts as one: fractions of refill may sum to 0.9999999999999999.
    return this.#tokens >= 1 - 1e-9;
  }
}

function isWellFormed(update: ProgressUpdate): boolean {
  if (!Number.isFinite(update.progress)) return false;
  return update.total === undefined || Number.isFinite(update.total);
}

function checkNow(now: number): void {
  if (!Number.isFinite(now)) throw new RangeError(`now must be a finite time in milliseconds, got ${now}`);
}
