import { type DeadlineClock, type DeadlineLimits, TwoClockDeadline } from '@taskgate/reliability';

/** setTimeout and clearTimeout, injected so tests move time themselves. */
export interface Timers {
  readonly now: () => number;
  readonly setTimeout: (run: () => void, ms: number) => unknown;
  readonly clearTimeout: (handle: unknown) => void;
}

export const systemTimers: Timers = {
  now: () => performance.now(),
  setTimeout: (run, ms) => setTimeout(run, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/**
 * A call's two clocks, armed: `idleMs` without progress, or `maxMs` in all, and `onExpired` runs
 * once with the clock that ran out. Only `progress()` resets the idle clock — nothing a transport
 * does by itself (an SSE keepalive, a ping) can reach it — and nothing resets the max clock.
 * One timer at a time: progress only moves a deadline later, so the timer is re-armed when it
 * fires early rather than on every progress report.
 */
export class CallClocks {
  readonly #deadline: TwoClockDeadline;
  readonly #timers: Timers;
  readonly #onExpired: (clock: DeadlineClock, limitMs: number) => void;
  #timer: unknown = null;
  #done = false;

  /**
   * `startedAt` is when the call began, for a retry's attempt: the max clock runs from there (it
   * is never reset, not even by a new attempt), the idle clock from now.
   */
  constructor(
    limits: DeadlineLimits,
    timers: Timers,
    onExpired: (clock: DeadlineClock, limitMs: number) => void,
    startedAt?: number,
  ) {
    const now = timers.now();
    this.#deadline = new TwoClockDeadline(limits, Math.min(startedAt ?? now, now), now);
    this.#timers = timers;
    this.#onExpired = onExpired;
    this.#arm();
  }

  /** Real progress arrived. */
  progress(): void {
    if (!this.#done) this.#deadline.recordProgress(this.#timers.now());
  }

  /** The call ended: no clock fires from now on. */
  stop(): void {
    this.#done = true;
    if (this.#timer !== null) this.#timers.clearTimeout(this.#timer);
    this.#timer = null;
  }

  #arm(): void {
    const next = this.#deadline.next();
    if (next === null) return;
    this.#timer = this.#timers.setTimeout(() => this.#fire(), Math.max(0, next.at - this.#timers.now()));
  }

  #fire(): void {
    this.#timer = null;
    if (this.#done) return;
    const expiry = this.#deadline.expired(this.#timers.now());
    if (expiry === null) {
      this.#arm();
      return;
    }
    this.#done = true;
    this.#onExpired(expiry.clock, expiry.limitMs);
  }
}
