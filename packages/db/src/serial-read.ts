/**
 * One read at a time, none lost: a wake while a read runs makes exactly one more after it, which
 * serves every wake that came during the first (they all asked for state newer than it read).
 * For readers woken by NOTIFY and by a poll at once (content watches on both sides): a burst of
 * NOTIFYs costs two reads, not one per NOTIFY, and no wake goes unanswered.
 */
export class SerialRead {
  readonly #read: () => Promise<void>;
  readonly #onError: (error: Error) => void;
  #running: Promise<void> | null = null;
  #again = false;
  #stopped = false;

  /** `onError` hears a read that failed; the next wake reads again. */
  constructor(read: () => Promise<void>, onError: (error: Error) => void) {
    this.#read = read;
    this.#onError = onError;
  }

  wake(): void {
    if (this.#stopped) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.#running = this.#read()
      .catch((error: Error) => this.#onError(error))
      .finally(() => {
        this.#running = null;
        if (this.#again) {
          this.#again = false;
          this.wake();
        }
      });
  }

  /** No read starts after this; resolves once the one running (if any) has ended. */
  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#running;
  }
}
