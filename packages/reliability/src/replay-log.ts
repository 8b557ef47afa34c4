/**
 * What one resumable SSE stream sent, so a client that reconnects with `Last-Event-ID` gets what
 * it missed (2025-11-25 transports "Resumability and Redelivery").
 *
 * Every event is a replaceable state signal under a key ("the tool list changed", "resource X
 * changed"): the log keeps the latest event of each key with its sequence number, and a replay is
 * every key whose latest event came after the client's last one, in order. That is what the
 * client would have read had it stayed, less what a later event of the same key superseded — the
 * same coalescing the live stream does. Memory is bounded by `maxKeys`: past it the oldest key is
 * forgotten, and a resume from before what was forgotten can no longer be answered exactly
 * (`after` says so with null, and the caller sends refetch hints instead).
 *
 * An event id is `<streamId>.<seq>`: unique across the streams of a session (each stream has its
 * own random id), and naming its stream, as the specification asks.
 */
export class ReplayLog<T> {
  readonly streamId: string;
  readonly #maxKeys: number;
  #seq = 0;
  /** The highest sequence number forgotten at the bound: resumes from before it are not exact. */
  #floor = 0;
  /** Latest event per key, in the order of their sequence numbers (Map keeps insertion order). */
  readonly #latest = new Map<string, { readonly seq: number; readonly value: T }>();

  constructor(streamId: string, maxKeys: number) {
    if (!/^[A-Za-z0-9-]{1,64}$/.test(streamId)) throw new RangeError(`streamId must be 1-64 of [A-Za-z0-9-]`);
    if (!Number.isSafeInteger(maxKeys) || maxKeys < 1) throw new RangeError(`maxKeys must be a positive integer`);
    this.streamId = streamId;
    this.#maxKeys = maxKeys;
  }

  /** The id of the last event appended (`<streamId>.0` before any): a priming event's id. */
  get lastId(): string {
    return `${this.streamId}.${this.#seq}`;
  }

  /** Records `value` as the latest of `key` and returns its event id. */
  append(key: string, value: T): string {
    this.#seq += 1;
    // Deleted first so the key moves to the end: the map stays in sequence order.
    this.#latest.delete(key);
    this.#latest.set(key, { seq: this.#seq, value });
    while (this.#latest.size > this.#maxKeys) {
      const [oldest, entry] = this.#latest.entries().next().value as [string, { seq: number }];
      this.#latest.delete(oldest);
      this.#floor = entry.seq;
    }
    return this.lastId;
  }

  /**
   * The events after `eventId`, oldest first, each with its id; null when `eventId` is not one of
   * this stream's (another stream's, another process's, malformed, from the future) or is older
   * than what the bound forgot.
   */
  after(eventId: string): { readonly id: string; readonly key: string; readonly value: T }[] | null {
    const dot = eventId.lastIndexOf('.');
    if (dot === -1 || eventId.slice(0, dot) !== this.streamId) return null;
    const digits = eventId.slice(dot + 1);
    if (!/^(0|[1-9][0-9]{0,15})$/.test(digits)) return null;
    const seq = Number(digits);
    if (seq > this.#seq || seq < this.#floor) return null;
    const missed: { id: string; key: string; value: T }[] = [];
    for (const [key, entry] of this.#latest) {
      if (entry.seq > seq) missed.push({ id: `${this.streamId}.${entry.seq}`, key, value: entry.value });
    }
    return missed;
  }
}
