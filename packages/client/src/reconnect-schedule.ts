import { deterministicJitter, type Jitter, jitteredDelay } from '@taskgate/reliability';

export interface ReconnectOptions {
  /** The first ceiling (default 250 ms); it doubles per failed attempt. */
  readonly baseMs?: number;
  /**
   * The largest ceiling (default 8 s: it stops doubling after the fifth attempt). Every client is
   * back within it of the server's return, and once the ceilings have reached it (an outage of
   * about 10 s) the returns are spread with a peak of at most twice the mean, the limit for a
   * uniform draw (bench/reconnect-storm.ts; a 30 s cap gave 4.6× after a 10 s outage).
   */
  readonly capMs?: number;
  /** Seeds the jitter with the attempt: every client its own spread, a replay the same delays. */
  readonly clientId?: string;
  /** Default full; the others are for comparison (bench/reconnect-storm.ts). */
  readonly jitter?: Jitter;
}

/**
 * When to try a dropped stream again: capped exponential backoff with full jitter. Clients that
 * lost the server together (an outage, a deploy) come back spread over the whole window instead
 * of in lockstep; a success resets the schedule.
 */
export class ReconnectSchedule {
  readonly #options: { baseMs: number; capMs: number };
  readonly #jitter: Jitter;
  readonly #random: (attempt: number) => number;
  #attempt = 0;

  constructor(options: ReconnectOptions = {}) {
    this.#options = { baseMs: options.baseMs ?? 250, capMs: options.capMs ?? 8_000 };
    this.#jitter = options.jitter ?? 'full';
    const seed = options.clientId;
    this.#random = seed === undefined ? () => Math.random() : (attempt) => deterministicJitter(seed, attempt);
  }

  /** The attempts made since the last success. */
  get attempt(): number {
    return this.#attempt;
  }

  /** The delay before the next attempt. */
  next(): number {
    const attempt = this.#attempt;
    this.#attempt += 1;
    return jitteredDelay(this.#jitter, attempt, this.#options, () => this.#random(attempt));
  }

  /** The stream is back: the next failure starts from the first ceiling again. */
  reset(): void {
    this.#attempt = 0;
  }
}
