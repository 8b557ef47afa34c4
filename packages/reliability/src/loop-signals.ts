/**
 * What a fetch loop sleeps on (the worker's job pump, the outbox relay): a slot freeing up, or a
 * wake-up (new work announced), or a timeout. The loop itself is the one waiter.
 *
 * A signal with no waiter is dropped, not latched. That is safe because a loop checks its state
 * and starts its wait in the same synchronous step, so nothing can happen between the two; a
 * wake-up that arrives while the loop is busy (fetching) is the loop's own flag to keep.
 */
export class LoopSignals {
  #onSlot: (() => void) | null = null;
  #onWake: (() => void) | null = null;
  #closed = false;

  /** True once close() was called: the loop should end. */
  get closed(): boolean {
    return this.#closed;
  }

  /** A slot freed up: ends a wait of either kind. */
  slotFreed(): void {
    this.#onSlot?.();
  }

  /** New work may be waiting: ends a 'wake' wait. */
  wake(): void {
    this.#onWake?.();
  }

  /** Ends the current wait, and every later wait returns at once. */
  close(): void {
    this.#closed = true;
    this.#onSlot?.();
  }

  /**
   * Sleeps until a slot frees ('slot'), or until a slot, a wake-up or `ms` passes ('wake'; `ms`
   * also bounds a 'slot' wait when given). Always a real wait on a timer or an event, never an
   * already-settled promise (a loop of those would starve the event loop), unless closed.
   */
  waitFor(kind: 'slot' | 'wake', ms?: number): Promise<void> {
    if (this.#closed) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = ms === undefined ? undefined : setTimeout(() => done(), ms);
      const done = () => {
        clearTimeout(timer);
        this.#onSlot = null;
        this.#onWake = null;
        resolve();
      };
      this.#onSlot = done;
      if (kind === 'wake') this.#onWake = done;
    });
  }
}
