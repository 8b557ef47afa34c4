import { revisionInfo } from '@taskgate/protocol';

/** Most messages in one JSON-RPC batch, on either transport: its answer waits for all its requests. */
export const MAX_BATCH_ELEMENTS = 100;

/**
 * Why a batch of `count` messages in `revision` is refused as a whole, or null: a revision without
 * batches, an empty batch (JSON-RPC 2.0 "Batch"), more than MAX_BATCH_ELEMENTS. `unit` is what a
 * client sends instead ("line", "POST").
 */
export function batchRefusal(revision: string, count: number, unit: string): string | null {
  if (revisionInfo(revision)?.batches !== true) {
    return `JSON-RPC batches are not part of revision ${revision}: send one message per ${unit}`;
  }
  if (count === 0) return 'an empty JSON-RPC batch';
  if (count > MAX_BATCH_ELEMENTS) return `a JSON-RPC batch of at most ${MAX_BATCH_ELEMENTS} messages, not ${count}`;
  return null;
}

/**
 * The answer to one JSON-RPC batch (a revision with batches: basic/index "Batching"): the
 * responses of its requests, written together as one array once every request has settled
 * (JSON-RPC 2.0 "Batch"). A request that gets no response (its cancel won) leaves nothing in it;
 * a batch of notifications and responses only is answered with nothing at all.
 */
export class BatchAnswer {
  readonly #write: (line: string) => void;
  readonly #responses: string[] = [];
  #open = 0;
  #sealed = false;
  #written = false;

  constructor(write: (line: string) => void) {
    this.#write = write;
  }

  /** A response known at once (a malformed element, a refused id). */
  add(response: string): void {
    this.#responses.push(response);
  }

  /** A request whose response comes later, through settle(). */
  expect(): void {
    this.#open += 1;
  }

  /** A request expected has its response, or none (`null`: cancelled). */
  settle(response: string | null): void {
    this.#open -= 1;
    if (response !== null) this.#responses.push(response);
    this.#writeIfDone();
  }

  /** Every element has been read: the answer goes out as soon as the last request settles. */
  seal(): void {
    this.#sealed = true;
    this.#writeIfDone();
  }

  #writeIfDone(): void {
    if (!this.#sealed || this.#open > 0 || this.#written) return;
    this.#written = true;
    if (this.#responses.length > 0) this.#write(`[${this.#responses.join(',')}]`);
  }
}
