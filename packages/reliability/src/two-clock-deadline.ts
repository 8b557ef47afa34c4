/**
 * Two-clock timeouts for a running tool call.
 *
 * The idle clock catches a call that has stopped making progress; only real progress resets it.
 * Keepalives deliberately have no way in: a server that sends pings forever while doing nothing must
 * still time out. The max clock runs from the start and nothing resets it, so a call that keeps
 * reporting progress cannot run forever either.
 */
export type DeadlineClock = 'idle' | 'max';

export interface DeadlineLimits {
  /** Longest allowed gap between progress reports; undefined means no idle limit. */
  readonly idleMs?: number | undefined;
  /** Longest allowed total run time from start; undefined means no maximum. */
  readonly maxMs?: number | undefined;
}

export interface DeadlineExpiry {
  readonly clock: DeadlineClock;
  readonly deadlineAt: number;
  readonly limitMs: number;
}

export interface NextDeadline {
  readonly clock: DeadlineClock;
  readonly at: number;
}

function checkLimit(field: string, value: number | undefined): void {
  if (value === undefined) return;
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw new RangeError(`${field} must be a positive integer number of milliseconds, got ${value}`);
  }
}

function checkInstant(field: string, value: number): void {
  if (!Number.isFinite(value)) throw new RangeError(`${field} must be a finite time in milliseconds, got ${value}`);
}

export class TwoClockDeadline {
  readonly #idleMs: number | undefined;
  readonly #maxMs: number | undefined;
  readonly #startedAt: number;
  #lastProgressAt: number;
  // Once a deadline has been seen to pass, the call has timed out for good: a late or out-of-order
  // progress report must not turn an expired call back into a live one.
  #expiry: DeadlineExpiry | null = null;

  /**
   * `idleFrom` (default `startedAt`) is where the idle clock starts: a retried call's new attempt
   * starts it afresh while the max clock keeps the call's first start.
   */
  constructor(limits: DeadlineLimits, startedAt: number, idleFrom: number = startedAt) {
    checkLimit('idleMs', limits.idleMs);
    checkLimit('maxMs', limits.maxMs);
    checkInstant('startedAt', startedAt);
    checkInstant('idleFrom', idleFrom);
    if (idleFrom < startedAt)
      throw new RangeError(`idleFrom (${idleFrom}) must not be before startedAt (${startedAt})`);
    this.#idleMs = limits.idleMs;
    this.#maxMs = limits.maxMs;
    this.#startedAt = startedAt;
    this.#lastProgressAt = idleFrom;
  }

  get startedAt(): number {
    return this.#startedAt;
  }

  get lastProgressAt(): number {
    return this.#lastProgressAt;
  }

  /** Real progress only. Ignored once any deadline has been reached, and never moves the clock back. */
  recordProgress(at: number): void {
    checkInstant('at', at);
    if (this.expired(at) !== null) return;
    if (at > this.#lastProgressAt) this.#lastProgressAt = at;
  }

  /**
   * Which clock has run out by `at` (the current time, not a what-if: an expiry seen here is kept),
   * or null. When both run out at the same instant, `max` wins.
   */
  expired(at: number): DeadlineExpiry | null {
    checkInstant('at', at);
    if (this.#expiry !== null) return this.#expiry;
    const maxAt = this.#maxDeadline();
    const idleAt = this.#idleDeadline();
    if (maxAt !== undefined && this.#maxMs !== undefined && at >= maxAt) {
      this.#expiry = { clock: 'max', deadlineAt: maxAt, limitMs: this.#maxMs };
    } else if (idleAt !== undefined && this.#idleMs !== undefined && at >= idleAt) {
      this.#expiry = { clock: 'idle', deadlineAt: idleAt, limitMs: this.#idleMs };
    }
    return this.#expiry;
  }

  /**
   * The earliest deadline, so the caller can arm a single timer and call `expired()` when it fires.
   * Null when there is no limit; the deadline that ran out once the call has been seen to expire.
   * An idle deadline at or beyond the max deadline can never fire first, so the max deadline is
   * reported instead.
   */
  next(): NextDeadline | null {
    // Once a clock has run out, the answer stays that deadline (now in the past), so a caller that
    // re-arms its timer (say on progress that arrived exactly as the clock ran out, which is what
    // recorded the expiry) fires at once and acts on it, instead of arming nothing and never
    // ending the call.
    if (this.#expiry !== null) return { clock: this.#expiry.clock, at: this.#expiry.deadlineAt };
    const maxAt = this.#maxDeadline();
    const idleAt = this.#idleDeadline();
    if (idleAt !== undefined && (maxAt === undefined || idleAt < maxAt)) return { clock: 'idle', at: idleAt };
    if (maxAt !== undefined) return { clock: 'max', at: maxAt };
    return null;
  }

  #idleDeadline(): number | undefined {
    return this.#idleMs === undefined ? undefined : this.#lastProgressAt + this.#idleMs;
  }

  #maxDeadline(): number | undefined {
    return this.#maxMs === undefined ? undefined : this.#startedAt + this.#maxMs;
  }
}
