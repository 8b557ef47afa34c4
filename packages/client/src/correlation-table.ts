/**
 * The client's side of JSON-RPC correlation: which request each response answers.
 *
 * Ids are the client's own, monotonic for its whole life and never reused — across reconnects
 * too, since the SDK client restarts its counter on every connection and a 2025-11-25 session
 * resumed by a new connection could otherwise hear a late answer to an old id 3 as the answer to
 * a new id 3. A request the caller gave up on (cancelled, timed out) is not forgotten at once: its
 * id stays as a tombstone for `tombstoneMs`, so a response that crosses the cancel on the wire
 * is recognised as late and dropped without a word — not reported as an unknown id, never
 * delivered. Tombstones are bounded in time and in number, oldest first.
 */

export interface CorrelationOptions {
  /** How long an abandoned id is remembered (default 60 s: longer than any sane in-flight race). */
  readonly tombstoneMs?: number;
  /** At most this many tombstones; the oldest goes first (default 10,000). */
  readonly maxTombstones?: number;
  /** A monotonic clock in milliseconds. */
  readonly now: () => number;
}

export type Settlement<T> =
  /** A response to a request still waiting: hand it to its waiter. */
  | { readonly kind: 'deliver'; readonly entry: T }
  /** A response to a request given up on: drop it silently (counted in `stats.lateDropped`). */
  | { readonly kind: 'late'; readonly entry: T }
  /** A response to an id this client never sent, or forgot long ago (counted in `stats.unknown`). */
  | { readonly kind: 'unknown' };

export interface CorrelationStats {
  readonly pending: number;
  readonly tombstones: number;
  /** Late responses dropped since the table was made. */
  readonly lateDropped: number;
  /** Responses to ids never sent or long forgotten. */
  readonly unknown: number;
}

interface Tombstone<T> {
  readonly entry: T;
  readonly until: number;
}

export class CorrelationTable<T> {
  readonly #tombstoneMs: number;
  readonly #maxTombstones: number;
  readonly #now: () => number;
  readonly #pending = new Map<number, T>();
  // A Map keeps insertion order, which is also expiry order: every tombstone lives as long.
  readonly #tombstones = new Map<number, Tombstone<T>>();
  #lastId = 0;
  #lateDropped = 0;
  #unknown = 0;

  constructor(options: CorrelationOptions) {
    this.#tombstoneMs = positive('tombstoneMs', options.tombstoneMs ?? 60_000);
    this.#maxTombstones = positive('maxTombstones', options.maxTombstones ?? 10_000);
    this.#now = options.now;
  }

  /** A new request: its wire id, never handed out before. */
  open(entry: T): number {
    this.#lastId += 1;
    this.#pending.set(this.#lastId, entry);
    return this.#lastId;
  }

  /** The entry of a request still waiting, if it is. */
  get(id: number): T | undefined {
    return this.#pending.get(id);
  }

  /** A response arrived for `id`: what to do with it. The id is done with either way. */
  settle(id: unknown): Settlement<T> {
    this.#sweep();
    if (typeof id !== 'number') {
      this.#unknown += 1;
      return { kind: 'unknown' };
    }
    const entry = this.#pending.get(id);
    if (entry !== undefined) {
      this.#pending.delete(id);
      return { kind: 'deliver', entry };
    }
    const tombstone = this.#tombstones.get(id);
    if (tombstone !== undefined) {
      // One late answer per id: a second one is as unknown as any other stray.
      this.#tombstones.delete(id);
      this.#lateDropped += 1;
      return { kind: 'late', entry: tombstone.entry };
    }
    this.#unknown += 1;
    return { kind: 'unknown' };
  }

  /**
   * The caller gave up on `id` (cancelled it, or a clock ran out): a response from now on is late.
   * Returns the entry if the request was still waiting, else undefined (it was already answered,
   * and there is nothing to tombstone).
   */
  abandon(id: number): T | undefined {
    const entry = this.#pending.get(id);
    if (entry === undefined) return undefined;
    this.#pending.delete(id);
    this.#sweep();
    this.#tombstones.set(id, { entry, until: this.#now() + this.#tombstoneMs });
    while (this.#tombstones.size > this.#maxTombstones) {
      const oldest = this.#tombstones.keys().next().value as number;
      this.#tombstones.delete(oldest);
    }
    return entry;
  }

  /**
   * The connection these requests went out on is gone: every waiting entry is handed back (its
   * waiter must be failed) and becomes a tombstone, since a 2025-11-25 session resumed on a new
   * connection may still deliver its answer. Ids keep counting up: no connection reuses one.
   */
  drain(): T[] {
    const waiting = [...this.#pending.keys()];
    return waiting.map((id) => this.abandon(id) as T);
  }

  get stats(): CorrelationStats {
    this.#sweep();
    return {
      pending: this.#pending.size,
      tombstones: this.#tombstones.size,
      lateDropped: this.#lateDropped,
      unknown: this.#unknown,
    };
  }

  #sweep(): void {
    const now = this.#now();
    for (const [id, tombstone] of this.#tombstones) {
      if (tombstone.until > now) break;
      this.#tombstones.delete(id);
    }
  }
}

function positive(field: string, value: number): number {
  if (!Number.isSafeInteger(value) || value <= 0)
    throw new RangeError(`${field} must be a positive integer, got ${value}`);
  return value;
}
