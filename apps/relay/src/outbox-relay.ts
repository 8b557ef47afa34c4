import {
  type ClaimedOutboxEvent,
  claimDueOutbox,
  compareIds,
  type Database,
  markDelivered,
  markFailed,
  type OutboxFailure,
  releaseOutboxClaims,
  retryWhileUnavailable,
} from '@taskgate/db';
import { processMetrics, type TaskgateMetrics } from '@taskgate/metrics';
import { type BackoffOptions, Batcher, backoffDelay, LoopSignals } from '@taskgate/reliability';
import type { Kysely } from 'kysely';
import { retryDelay } from './delivery-schedule.ts';
import type { SendResult } from './webhook-sink.ts';

type LogFn = (fields: Record<string, unknown>, message: string) => void;

/** A free slot or two is not worth a claim of its own at once; wait this long for more. */
const REFILL_LINGER_MS = 5;
/** Pauses between failed claims while the database is unreachable: 250 ms doubling to 5 s, jittered. */
const CLAIM_BACKOFF = { baseMs: 250, capMs: 5_000 };

export interface OutboxRelayOptions {
  readonly db: Kysely<Database>;
  readonly relayId: string;
  /** Sends one event to every sink; resolves (never rejects) with the attempt's result. */
  readonly deliver: (event: ClaimedOutboxEvent, signal: AbortSignal) => Promise<SendResult>;
  /** Deliveries in flight at once; a claim takes at most the free slots. */
  readonly concurrency: number;
  /** How long a claim holds its rows; a delivery must start and settle well within it. */
  readonly leaseMs: number;
  /** The attempt that fails with this many attempts made moves the row to dead-letter. */
  readonly maxAttempts: number;
  /** The longest the relay sleeps with free slots and no wake-up. */
  readonly pollIntervalMs: number;
  readonly backoff: BackoffOptions;
  /** Full jitter's source, in [0, 1) (default Math.random). */
  readonly random?: () => number;
  readonly logger: { readonly info: LogFn; readonly warn: LogFn };
  /** Where deliveries and their lag are counted (default: the process's). */
  readonly metrics?: TaskgateMetrics;
  readonly now?: () => number;
}

type Settlement = { readonly event: ClaimedOutboxEvent } & SendResult;

/**
 * The delivery loop: keeps up to `concurrency` deliveries in flight, claims due rows a batch ahead
 * of them, and settles finished deliveries in set-based batches (flush-while-busy).
 * Per-aggregate order needs nothing here: the claim hands out only the oldest pending row of an
 * aggregate, and the next becomes due once this one's settlement commits.
 */
export class OutboxRelay {
  readonly #options: OutboxRelayOptions;
  readonly #settlements: Batcher<Settlement, undefined>;
  readonly #inFlight = new Set<string>();
  readonly #ready: ClaimedOutboxEvent[] = [];
  readonly #work = new Set<Promise<void>>();
  readonly #abort = new AbortController();
  readonly #signals = new LoopSignals();
  #wakeRequested = false;
  #claimFailures = 0;
  #retryTimer: NodeJS.Timeout | undefined;
  #retryAt = Number.POSITIVE_INFINITY;
  #loop: Promise<void> | null = null;

  constructor(options: OutboxRelayOptions) {
    this.#options = options;
    this.#settlements = new Batcher((items) => this.#settle(items), {
      maxBatch: 500,
      order: (a, b) => compareIds(a.event.id, b.event.id),
    });
  }

  get inFlight(): number {
    return this.#inFlight.size;
  }

  start(): void {
    this.#loop = this.#pump();
  }

  /** Rows may be due (a NOTIFY, a settlement that unblocked an aggregate): claim now, not at the next poll. */
  wake(): void {
    this.#wakeRequested = true;
    this.#signals.wake();
  }

  /**
   * Stops claiming, hands back the claimed rows not yet sent, and waits up to `graceMs` for
   * deliveries in flight to finish and settle; the rest are aborted unsettled, and their rows go
   * to whichever relay claims them after the lease.
   */
  async stop(graceMs: number): Promise<void> {
    this.#signals.close();
    clearTimeout(this.#retryTimer);
    await this.#loop;
    const unsent = this.#ready.splice(0);
    await releaseOutboxClaims(this.#options.db, this.#options.relayId, unsent).catch((error: Error) => {
      this.#options.logger.warn({ error: error.message, rows: unsent.length }, 'could not hand back unsent rows');
    });
    const drained = await settledWithin([...this.#work], graceMs);
    if (!drained) {
      this.#options.logger.warn(
        { inFlight: this.#inFlight.size },
        'grace period over: aborting deliveries; their rows are redelivered after the lease',
      );
      this.#abort.abort();
      await Promise.allSettled([...this.#work]);
    }
  }

  /**
   * Claims run one batch ahead of the deliveries: up to `concurrency` rows wait in #ready while as
   * many are in flight, so a free slot takes the next row at once instead of waiting for a claim's
   * round trip. A row waits there at most one request timeout (a third of the lease) before its
   * own request starts, so claim, wait, request and settlement still fit inside the lease.
   */
  async #pump(): Promise<void> {
    const { concurrency } = this.#options;
    const refillAt = Math.max(1, Math.floor(concurrency / 4));
    while (!this.#signals.closed) {
      let room = 2 * concurrency - this.#inFlight.size - this.#ready.length;
      if (room < refillAt) {
        await this.#signals.waitFor('slot');
        continue;
      }
      if (this.#inFlight.size > 0 && room < concurrency) {
        await this.#signals.waitFor('slot', REFILL_LINGER_MS);
        room = 2 * concurrency - this.#inFlight.size - this.#ready.length;
      }
      if (this.#signals.closed) break;
      const want = Math.min(room, concurrency);
      this.#wakeRequested = false;
      let claimed = 0;
      try {
        const events = await claimDueOutbox(this.#options.db, this.#options.relayId, want, this.#options.leaseMs);
        claimed = events.length;
        if (this.#claimFailures > 0) {
          this.#options.logger.info({ failures: this.#claimFailures }, 'claiming outbox rows works again');
          this.#claimFailures = 0;
        }
        this.#ready.push(...events);
        this.#fillSlots();
      } catch (error) {
        // While the database is down every claim fails: back off, capped and jittered, and say so once.
        const delay = backoffDelay(
          Math.min(this.#claimFailures, 30),
          CLAIM_BACKOFF,
          this.#options.random ?? Math.random,
        );
        if (this.#claimFailures === 0) {
          this.#options.logger.warn(
            { error: (error as Error).message, retryInMs: delay },
            'claiming outbox rows failed; retrying with backoff',
          );
        }
        this.#claimFailures += 1;
        await this.#signals.waitFor('wake', delay);
        continue;
      }
      // A full claim means there is probably more; a wake-up during the claim may be a row its
      // snapshot did not see. Either way, go round again at once.
      if (claimed === want || this.#wakeRequested) continue;
      await this.#signals.waitFor('wake', this.#options.pollIntervalMs);
    }
  }

  #fillSlots(): void {
    // Once stopping, what is still in #ready is handed back rather than sent.
    while (this.#inFlight.size < this.#options.concurrency && !this.#signals.closed) {
      const event = this.#ready.shift();
      if (!event) return;
      this.#dispatch(event);
    }
  }

  #dispatch(event: ClaimedOutboxEvent): void {
    this.#inFlight.add(event.id);
    const work = (async () => {
      let result: SendResult;
      try {
        result = await this.#options.deliver(event, this.#abort.signal);
      } catch (error) {
        result = { ok: false, error: `delivery failed: ${(error as Error).message}` };
      }
      this.#inFlight.delete(event.id);
      this.#fillSlots();
      this.#signals.slotFreed();
      if (this.#abort.signal.aborted) return;
      // A delivery already made is worth recording through a short outage: unrecorded, it is sent
      // again after the lease (at least once, still, but twice where once was enough).
      await retryWhileUnavailable(() => this.#settlements.submit({ event, ...result }), {
        giveUpAfterMs: this.#options.leaseMs / 2,
        signal: this.#abort.signal,
      }).catch((error: Error) => {
        // The lease runs out and another claim delivers the row again: at least once, still.
        this.#options.logger.warn({ id: event.id, error: error.message }, 'settling an outbox row failed');
      });
    })();
    this.#work.add(work);
    void work.finally(() => this.#work.delete(work));
  }

  async #settle(items: readonly Settlement[]): Promise<undefined[]> {
    const { db, relayId, maxAttempts, backoff } = this.#options;
    const delivered = items.filter((item) => item.ok).map(({ event }) => event);
    const failures: OutboxFailure[] = [];
    let soonestRetry = Number.POSITIVE_INFINITY;
    for (const item of items) {
      if (item.ok) continue;
      const { id, attempts } = item.event;
      const retryInMs = retryDelay(attempts, maxAttempts, backoff, this.#options.random ?? Math.random);
      if (retryInMs !== null) soonestRetry = Math.min(soonestRetry, retryInMs);
      else this.#options.logger.warn({ id, attempts, error: item.error }, 'outbox row moved to dead-letter');
      failures.push({ id, attempts, error: item.error.slice(0, 1_000), retryInMs });
    }
    await markDelivered(db, relayId, delivered);
    await markFailed(db, relayId, failures);
    const metrics = this.#options.metrics ?? processMetrics();
    const now = (this.#options.now ?? Date.now)();
    for (const event of delivered) {
      metrics.outboxDeliveries.inc({ outcome: 'delivered' });
      // The commit's time is the database's and now is this process's: on hosts kept in step by
      // NTP that is milliseconds of error on a figure measured in tenths of seconds and up.
      metrics.outboxDeliveryLag.observe(Math.max(0, (now - event.createdAt.getTime()) / 1_000));
    }
    for (const failure of failures) {
      metrics.outboxDeliveries.inc({ outcome: failure.retryInMs === null ? 'dead' : 'failed' });
    }
    // A settled row may have been the head of its aggregate, holding the next event back.
    this.wake();
    if (soonestRetry !== Number.POSITIVE_INFINITY) this.#wakeAfter(soonestRetry);
    return items.map(() => undefined);
  }

  /** A retry due sooner than the next poll gets a timer of its own (only the earliest is kept). */
  #wakeAfter(ms: number): void {
    const at = Date.now() + ms;
    if (this.#signals.closed || ms >= this.#options.pollIntervalMs || at >= this.#retryAt) return;
    clearTimeout(this.#retryTimer);
    this.#retryAt = at;
    this.#retryTimer = setTimeout(() => {
      this.#retryAt = Number.POSITIVE_INFINITY;
      this.wake();
    }, ms);
    this.#retryTimer.unref();
  }
}

async function settledWithin(work: readonly Promise<void>[], ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  const done = Promise.allSettled(work).then(() => true as const);
  const drained = await Promise.race([done, timeout]);
  clearTimeout(timer);
  return drained;
}
