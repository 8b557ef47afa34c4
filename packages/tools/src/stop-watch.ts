import type { CancelSignal } from '@taskgate/reliability';

/**
 * A run's stop, as its metrics see it: when the first stop (a cancel, a clock, a shutdown)
 * reached the run and by which signal; how long the handler took to exit after it; and whether
 * the handler outlived its grace period (orphaned work). One per run; no I/O.
 */
export class StopWatch {
  readonly #graceMs: number;
  readonly #now: () => number;
  readonly #onOrphan: (delta: 1 | -1, signal: CancelSignal | null) => void;
  #stop: { readonly at: number; readonly signal: CancelSignal | null } | null = null;
  #timer: NodeJS.Timeout | undefined;
  #orphaned = false;
  #exited = false;
  #latencySeconds: number | null = null;

  constructor(options: {
    readonly graceMs: number;
    readonly now: () => number;
    readonly onOrphan: (delta: 1 | -1, signal: CancelSignal | null) => void;
  }) {
    this.#graceMs = options.graceMs;
    this.#now = options.now;
    this.#onOrphan = options.onOrphan;
  }

  /**
   * A stop reached the run (only the first counts for the latency). With `watch`, the handler is
   * orphaned work if it still runs a grace period later; a shutdown's request to stop at the next
   * checkpoint is not watched (the handler may use the grace period to finish), the release that
   * ends the grace is.
   */
  stopped(signal: CancelSignal | null, watch = true): void {
    if (this.#stop === null) {
      this.#stop = { at: this.#now(), signal };
      // Found after the handler returned (the final commit read the flag): nothing ran on.
      if (this.#exited) this.#latencySeconds = 0;
    }
    if (watch && this.#timer === undefined && !this.#exited) {
      const first = this.#stop.signal;
      this.#timer = setTimeout(() => {
        this.#orphaned = true;
        this.#onOrphan(1, first);
      }, this.#graceMs);
      this.#timer.unref();
    }
  }

  /** The handler returned or threw. */
  exited(): void {
    if (this.#exited) return;
    this.#exited = true;
    clearTimeout(this.#timer);
    if (this.#orphaned) this.#onOrphan(-1, this.#stop?.signal ?? null);
    if (this.#stop !== null) this.#latencySeconds = (this.#now() - this.#stop.at) / 1_000;
  }

  /** The stop and its latency, once the handler has exited after one; else null. */
  get measured(): { readonly signal: CancelSignal | null; readonly seconds: number } | null {
    if (this.#stop === null || this.#latencySeconds === null) return null;
    return { signal: this.#stop.signal, seconds: this.#latencySeconds };
  }
}
