/**
 * The bounded buffer between a task and one SSE connection.
 *
 * A slow consumer must not grow memory without bound, so the buffer has a fixed capacity. What may be
 * lost is decided by kind: a replaceable item (a progress or status update) only describes state that
 * the consumer can refetch, so it can be coalesced or dropped as long as the consumer is told to
 * refetch; a final item (a final response) exists nowhere else on this connection, so it is never
 * dropped, and when keeping it would mean dropping another final the push is refused instead.
 */
export type BufferItem<T> =
  | { readonly kind: 'replaceable'; readonly key: string; readonly value: T }
  | { readonly kind: 'final'; readonly value: T };

export type CoalesceMode = 'adjacent' | 'by-key';

export interface BoundedBufferOptions {
  /** Maximum number of items held. */
  readonly capacity: number;
  /**
   * `adjacent` replaces the last item when it has the same key, which keeps the relative order of
   * different keys intact; `by-key` replaces an item with the same key anywhere and moves the new
   * value to the end, which saves more room. Defaults to `adjacent`.
   */
  readonly coalesce?: CoalesceMode | undefined;
}

export type PushResult =
  | { readonly accepted: true }
  | { readonly accepted: false; readonly reason: 'would_drop_final' | 'full_of_finals' };

const ACCEPTED: PushResult = { accepted: true };

export class BoundedBuffer<T> {
  readonly #capacity: number;
  readonly #coalesce: CoalesceMode;
  // Capacities are small (tens of items), so plain array splicing beats a ring buffer on clarity.
  readonly #items: BufferItem<T>[] = [];
  #dropped = 0;
  #needsRefetch = false;

  constructor(options: BoundedBufferOptions) {
    if (!Number.isSafeInteger(options.capacity) || options.capacity < 1) {
      throw new RangeError(`capacity must be an integer of at least 1, got ${options.capacity}`);
    }
    const coalesce = options.coalesce ?? 'adjacent';
    if (coalesce !== 'adjacent' && coalesce !== 'by-key') {
      throw new RangeError(`coalesce must be 'adjacent' or 'by-key', got ${String(coalesce)}`);
    }
    this.#capacity = options.capacity;
    this.#coalesce = coalesce;
  }

  get capacity(): number {
    return this.#capacity;
  }

  get size(): number {
    return this.#items.length;
  }

  /** How many replaceable items were lost for lack of room; coalesced items are not counted. */
  get dropped(): number {
    return this.#dropped;
  }

  /** True once an item was dropped: the consumer's view is incomplete and must be refetched. */
  get needsRefetch(): boolean {
    return this.#needsRefetch;
  }

  push(item: BufferItem<T>): PushResult {
    if (item.kind === 'replaceable' && this.#coalesceInto(item)) return ACCEPTED;
    if (this.#items.length < this.#capacity) {
      this.#items.push(item);
      return ACCEPTED;
    }
    const victim = this.#items.findIndex((held) => held.kind === 'replaceable');
    if (victim === -1) {
      // Full of finals. A final is refused rather than dropped, so the producer still holds it; a
      // replaceable item is simply lost, like any other dropped update.
      if (item.kind === 'final') return { accepted: false, reason: 'would_drop_final' };
      this.#recordDrop();
      return { accepted: false, reason: 'full_of_finals' };
    }
    this.#items.splice(victim, 1);
    this.#recordDrop();
    this.#items.push(item);
    return ACCEPTED;
  }

  shift(): BufferItem<T> | undefined {
    return this.#items.shift();
  }

  /** Reads and clears the refetch flag, so each loss triggers one refetch. */
  takeRefetchFlag(): boolean {
    const flag = this.#needsRefetch;
    this.#needsRefetch = false;
    return flag;
  }

  #coalesceInto(item: BufferItem<T> & { kind: 'replaceable' }): boolean {
    if (this.#coalesce === 'adjacent') {
      const lastIndex = this.#items.length - 1;
      const last = this.#items[lastIndex];
      if (last?.kind !== 'replaceable' || last.key !== item.key) return false;
      this.#items[lastIndex] = item;
      return true;
    }
    const index = this.#items.findIndex((held) => held.kind === 'replaceable' && held.key === item.key);
    if (index === -1) return false;
    this.#items.splice(index, 1);
    this.#items.push(item);
    return true;
  }

  #recordDrop(): void {
    this.#dropped += 1;
    this.#needsRefetch = true;
  }
}
