/**
 * One terminal state per request. Completion and cancellation race (the client gives up a
 * millisecond before the work finishes, or just after); whichever reaches the coordinator first
 * decides, and the loser changes nothing. The transport asks it before writing anything:
 *   cancel first   → the request is `cancelled`; the late result is dropped, no response is sent
 *                    (MCP cancellation: "MUST NOT send any further messages for it");
 *   complete first → the response is sent; the late cancel is ignored.
 * Cancels that name no in-flight request — malformed, unknown, duplicate, already completed —
 * are ignored without a reply, as the spec asks. A request that may not be cancelled
 * (`initialize`) ignores cancels too.
 */

export type RequestId = string | number;
export type RequestState = 'in-flight' | 'completed' | 'cancelled';

/**
 * `generation` names this request among the ones that used its id (an id may be used again once
 * its request settled): a late completion of an earlier one must not complete this one.
 */
export type BeginResult =
  | { readonly ok: true; readonly generation: number }
  | { readonly ok: false; readonly reason: 'duplicate-id' };

/** What to do with a result that is ready: send it, or drop it because the request was cancelled. */
export type CompleteDecision = 'send' | 'drop';

export type CancelDecision =
  /** The request was in flight and is now cancelled: stop its work, send nothing more for it. */
  | { readonly cancelled: true; readonly reason: string | null }
  | {
      readonly cancelled: false;
      readonly why: 'unknown' | 'already-completed' | 'already-cancelled' | 'not-cancellable';
    };

export interface RequestCoordinatorOptions {
  /** Methods whose requests cannot be cancelled (default: initialize, as the MCP lifecycle requires). */
  readonly uncancellable?: readonly string[];
  /**
   * How many settled request ids are remembered, so a late cancel or a duplicate is recognised
   * as such (default 1024). Older ones are forgotten: a later cancel for them is "unknown",
   * which is ignored all the same.
   */
  readonly memory?: number;
}

interface Entry {
  readonly method: string;
  readonly generation: number;
  state: RequestState;
  cancelReason: string | null;
}

const INITIALIZE_ONLY: ReadonlySet<string> = new Set(['initialize']);

export class RequestCoordinator {
  readonly #entries = new Map<string, Entry>();
  /** Settled ids, oldest first (a Set keeps insertion order, and finds an id without a scan). */
  readonly #settled = new Set<string>();
  readonly #uncancellable: ReadonlySet<string>;
  readonly #memory: number;
  #generations = 0;

  constructor(options: RequestCoordinatorOptions = {}) {
    // The default set is shared: a 2026-07-28 POST is a connection, and a coordinator, of its own.
    this.#uncancellable = options.uncancellable ? new Set(options.uncancellable) : INITIALIZE_ONLY;
    this.#memory = options.memory ?? 1024;
  }

  /**
   * Registers a request. An id still in flight cannot be reused; a settled one can (clients number
   * their requests afresh when they reconnect), and then a late cancel names the new request.
   */
  begin(id: RequestId, method: string): BeginResult {
    const key = requestIdKey(id);
    if (this.#entries.get(key)?.state === 'in-flight') return { ok: false, reason: 'duplicate-id' };
    this.#settled.delete(key);
    this.#generations += 1;
    this.#entries.set(key, { method, generation: this.#generations, state: 'in-flight', cancelReason: null });
    return { ok: true, generation: this.#generations };
  }

  /**
   * The request's result (or error) is ready. Only the first terminal event counts. With
   * `generation` (begin's), a request whose id has since been taken by another (it was cancelled,
   * and the client used the id again) is dropped instead of completing the newer one.
   */
  complete(id: RequestId, generation?: number): CompleteDecision {
    const key = requestIdKey(id);
    const entry = this.#entries.get(key);
    if (entry?.state !== 'in-flight') return 'drop';
    if (generation !== undefined && entry.generation !== generation) return 'drop';
    entry.state = 'completed';
    this.#settle(key);
    return 'send';
  }

  /** A cancellation arrived (a notification, a closed stream, a closed pipe). */
  cancel(id: unknown, reason?: unknown): CancelDecision {
    if (!isRequestId(id)) return { cancelled: false, why: 'unknown' };
    const key = requestIdKey(id);
    const entry = this.#entries.get(key);
    if (!entry) return { cancelled: false, why: 'unknown' };
    if (entry.state === 'completed') return { cancelled: false, why: 'already-completed' };
    if (entry.state === 'cancelled') return { cancelled: false, why: 'already-cancelled' };
    if (this.#uncancellable.has(entry.method)) return { cancelled: false, why: 'not-cancellable' };
    entry.state = 'cancelled';
    entry.cancelReason = typeof reason === 'string' ? reason : null;
    this.#settle(key);
    return { cancelled: true, reason: entry.cancelReason };
  }

  /** Cancels everything in flight (the connection is gone); returns the ids that were cancelled. */
  cancelAll(reason: string): RequestId[] {
    const cancelled: RequestId[] = [];
    for (const [key, entry] of this.#entries) {
      if (entry.state !== 'in-flight') continue;
      const id = idOf(key);
      if (this.cancel(id, reason).cancelled) cancelled.push(id);
    }
    return cancelled;
  }

  state(id: RequestId): RequestState | 'unknown' {
    return this.#entries.get(requestIdKey(id))?.state ?? 'unknown';
  }

  get inFlight(): number {
    let count = 0;
    for (const entry of this.#entries.values()) if (entry.state === 'in-flight') count += 1;
    return count;
  }

  /** Keeps the last `memory` settled ids, so memory stays bounded on a long-lived connection. */
  #settle(key: string): void {
    this.#settled.add(key);
    while (this.#settled.size > this.#memory) {
      const oldest = this.#settled.values().next().value as string;
      this.#settled.delete(oldest);
      this.#entries.delete(oldest);
    }
  }
}

/** A map key for a JSON-RPC id: ids are strings or numbers, and 1 and "1" are different ids. */
export function requestIdKey(id: RequestId): string {
  return typeof id === 'number' ? `n:${id}` : `s:${id}`;
}

function idOf(key: string): RequestId {
  return key.startsWith('n:') ? Number(key.slice(2)) : key.slice(2);
}

function isRequestId(value: unknown): value is RequestId {
  return typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value));
}
