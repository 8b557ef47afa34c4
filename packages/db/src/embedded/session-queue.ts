import type { PGlite } from '@electric-sql/pglite';
import { errorResponse, isTerminate, queryMessage, ReadyForQueryScanner, syncMessage } from './wire-messages.ts';

/**
 * Serialises many client connections onto PGlite's single backend session.
 *
 * PGlite is one Postgres backend. Every connection the socket server accepts shares it, so the
 * bridge must never let one connection's messages land in the middle of another's unit of work.
 * The queue that ships with @electric-sql/pglite-socket 0.2.17 interleaves per *message*: under
 * concurrent extended-protocol traffic connection B's Parse overwrites connection A's unnamed
 * statement between A's Parse and Bind ("unnamed prepared statement does not exist", "portal does
 * not exist", rows of the wrong query) — measured in docs/embedded-postgres.md.
 *
 * This queue hands the backend to one connection at a time and lets it keep the backend until a
 * ReadyForQuery with status I: the end of a unit of work outside a transaction block. A
 * connection inside BEGIN … COMMIT, or between Parse and Sync, therefore runs alone; the others
 * wait. Isolation holds; concurrency does not — one transaction at a time, like SQLite.
 *
 * It implements the interface PGLiteSocketHandler expects of its queue (enqueue,
 * clearQueueForHandler, clearTransactionIfNeeded), so the package's own wire handling (startup,
 * SSL refusal, message framing) is kept.
 */

interface WorkItem {
  readonly handlerId: number;
  readonly kind: 'message' | 'abandon';
  readonly message: Uint8Array;
  readonly onData: (data: Uint8Array) => void;
  readonly enqueuedAt: number;
  readonly resolve: (bytes: number) => void;
  readonly reject: (error: Error) => void;
}

export interface SessionQueueOptions {
  /** A connection waiting longer than this for another's transaction gets a FATAL error. */
  readonly waitTimeoutMs: number;
  readonly now?: () => number;
  readonly onWaitTimeout?: (event: { handlerId: number; ownerId: number; waitedMs: number }) => void;
}

export interface SessionQueueStats {
  /** The connection that holds the backend, or null at a boundary. */
  readonly owner: number | null;
  readonly waiting: number;
}

export class SessionQueue {
  readonly #db: PGlite;
  readonly #options: SessionQueueOptions;
  readonly #now: () => number;
  #queue: WorkItem[] = [];
  #owner: number | null = null;
  #pumping = false;
  #timer: NodeJS.Timeout | undefined;
  #waiters = new Set<() => void>();

  constructor(db: PGlite, options: SessionQueueOptions) {
    this.#db = db;
    this.#options = options;
    this.#now = options.now ?? Date.now;
  }

  stats(): SessionQueueStats {
    return { owner: this.#owner, waiting: this.#queue.length };
  }

  getQueueLength(): number {
    return this.#queue.length;
  }

  /** Resolves once some connection's work is queued behind another connection that holds the backend. */
  whenBlocked(): Promise<void> {
    if (this.#isBlocked()) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.add(resolve));
  }

  enqueue(handlerId: number, message: Uint8Array, onData: (data: Uint8Array) => void): Promise<number> {
    // Terminate is answered by closing the socket; the close runs clearTransactionIfNeeded.
    if (isTerminate(message)) return Promise.resolve(0);
    return this.#push(handlerId, 'message', message, onData);
  }

  /** Drops a disconnected connection's queued work (PGLiteSocketHandler.detach calls this first). */
  clearQueueForHandler(handlerId: number): void {
    const dropped = this.#queue.filter((item) => item.handlerId === handlerId && item.kind === 'message');
    this.#queue = this.#queue.filter((item) => !dropped.includes(item));
    for (const item of dropped) item.reject(new Error('connection closed'));
  }

  /**
   * A disconnected connection that held the backend: finish its unit and roll back its transaction.
   * Queued as the owner's own work so it can never run while another connection holds the backend.
   */
  clearTransactionIfNeeded(handlerId: number): Promise<void> {
    if (this.#owner !== handlerId) return Promise.resolve();
    return this.#push(handlerId, 'abandon', new Uint8Array(0), () => {}).then(() => undefined);
  }

  #push(handlerId: number, kind: WorkItem['kind'], message: Uint8Array, onData: WorkItem['onData']): Promise<number> {
    return new Promise<number>((resolve, reject) => {
      this.#queue.push({ handlerId, kind, message, onData, enqueuedAt: this.#now(), resolve, reject });
      void this.#pump();
    });
  }

  #next(): WorkItem | undefined {
    const index = this.#owner === null ? 0 : this.#queue.findIndex((item) => item.handlerId === this.#owner);
    if (index === -1 || index >= this.#queue.length) return undefined;
    return this.#queue.splice(index, 1)[0];
  }

  async #pump(): Promise<void> {
    if (this.#pumping) return;
    this.#pumping = true;
    try {
      for (let item = this.#next(); item; item = this.#next()) {
        if (item.kind === 'abandon') {
          await this.#abandon(item);
        } else {
          await this.#execute(item);
        }
      }
    } finally {
      this.#pumping = false;
      this.#armTimer();
      if (this.#isBlocked()) this.#notifyBlocked();
    }
  }

  async #execute(item: WorkItem): Promise<void> {
    this.#owner = item.handlerId;
    const scanner = new ReadyForQueryScanner();
    let bytes = 0;
    try {
      await this.#db.runExclusive(() =>
        this.#db.execProtocolRawStream(item.message, {
          onRawData: (data) => {
            bytes += data.length;
            scanner.push(data);
            item.onData(data);
          },
        }),
      );
    } catch (error) {
      // PGlite itself failed (not an SQL error, which arrives as an ErrorResponse). Free the
      // backend so one broken connection cannot stop the others.
      this.#owner = null;
      item.reject(error instanceof Error ? error : new Error(String(error)));
      return;
    }
    if (scanner.lastStatus === 'I') this.#owner = null;
    item.resolve(bytes);
  }

  async #abandon(item: WorkItem): Promise<void> {
    if (this.#owner === item.handlerId) {
      try {
        await this.#db.runExclusive(async () => {
          // Sync closes an unfinished extended-protocol batch; then roll back any open transaction.
          await this.#db.execProtocolRawStream(syncMessage(), { onRawData: () => {} });
          if (this.#db.isInTransaction()) {
            await this.#db.execProtocolRawStream(queryMessage('ROLLBACK'), { onRawData: () => {} });
          }
        });
      } finally {
        this.#owner = null;
      }
    }
    item.resolve(0);
  }

  #isBlocked(): boolean {
    return this.#owner !== null && this.#queue.some((item) => item.handlerId !== this.#owner);
  }

  #notifyBlocked(): void {
    const waiters = [...this.#waiters];
    this.#waiters.clear();
    for (const resolve of waiters) resolve();
  }

  /** Schedules the wait-timeout check for the oldest connection queued behind the owner. */
  #armTimer(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const owner = this.#owner;
    if (owner === null) return;
    const waiting = this.#queue.filter((item) => item.handlerId !== owner);
    if (waiting.length === 0) return;
    const oldest = Math.min(...waiting.map((item) => item.enqueuedAt));
    const delay = Math.max(0, oldest + this.#options.waitTimeoutMs - this.#now());
    this.#timer = setTimeout(() => this.#expireWaiters(), delay);
    this.#timer.unref();
  }

  #expireWaiters(): void {
    const owner = this.#owner;
    if (owner === null) return;
    const now = this.#now();
    const expiredHandlers = new Set(
      this.#queue
        .filter((item) => item.handlerId !== owner && now - item.enqueuedAt >= this.#options.waitTimeoutMs)
        .map((item) => item.handlerId),
    );
    for (const handlerId of expiredHandlers) {
      const items = this.#queue.filter((item) => item.handlerId === handlerId);
      this.#queue = this.#queue.filter((item) => item.handlerId !== handlerId);
      const waitedMs = now - Math.min(...items.map((item) => item.enqueuedAt));
      this.#options.onWaitTimeout?.({ handlerId, ownerId: owner, waitedMs });
      const text =
        `embedded Postgres: waited ${waitedMs} ms while another connection held a transaction; ` +
        'embedded mode runs one transaction at a time (set DATABASE_URL to use a real Postgres) [TG_EMBEDDED_TRANSACTION_WAIT]';
      // FATAL and then the handler closes the socket: the client sees why, and its pool replaces
      // the connection. SQLSTATE 55P03 is lock_not_available.
      items[0]?.onData(errorResponse('FATAL', '55P03', text));
      for (const item of items) item.reject(new Error(text));
    }
    this.#armTimer();
  }
}
