import {
  ChannelListener,
  CONTENT_WATCHES_CHANNEL,
  claimContentWatches,
  type Database,
  DEFAULT_WATCH_LEASE_MS,
  pairKey,
  recordContentChange,
  releaseContentWatches,
  SerialRead,
  type WantedWatch,
  wantedContentWatches,
} from '@taskgate/db';
import { type ContentRegistry, startResourceWatch } from '@taskgate/tools';
import type { Kysely } from 'kysely';

type LogFn = (fields: Record<string, unknown>, message: string) => void;

export interface ContentWatchRunnerOptions {
  readonly db: Kysely<Database>;
  /** This worker, as its watch leases name it. */
  readonly workerId: string;
  /** How long a lease lasts unrenewed (default DEFAULT_WATCH_LEASE_MS); well above pollMs. */
  readonly leaseMs?: number;
  /** The content tools this worker serves whose modules have a resource with `watch`, by tool name. */
  readonly registries: ReadonlyMap<string, ContentRegistry>;
  /** For the LISTEN connection; absent (embedded Postgres), polling only. */
  readonly listen?: { readonly connectionString: string; readonly applicationName: string };
  /** How often the wanted watches are re-read (default 1 s). */
  readonly pollMs?: number;
  /** The least time between two recorded changes of one watch (default DEFAULT_MIN_CHANGE_INTERVAL_MS). */
  readonly minIntervalMs?: number;
  /** How long a watch that failed to start is left to the other workers before this one tries it again (default 30 s). */
  readonly retryFailedMs?: number;
  /** The clock intervals and lease terms are measured with (default performance.now). */
  readonly now?: () => number;
  readonly logger: { readonly warn: LogFn };
}

/** The least time between two recorded changes of one watch, by default. */
export const DEFAULT_MIN_CHANGE_INTERVAL_MS = 250;

/** How long a watch that failed to start waits, by default, before this worker tries it again. */
export const DEFAULT_RETRY_FAILED_WATCH_MS = 30_000;

interface Running {
  /** Its (tenant, URI) lease. */
  readonly pair: string;
  /** When its lease may lapse (the options' clock): the watch is stopped before then unless renewed. */
  leaseEnds: number;
  stop: () => void;
  /** A change is being recorded; another came meanwhile and is recorded after it. */
  recording: boolean;
  again: boolean;
  /** When the last write started (the options' clock). */
  lastAt: number;
  /** A write waiting for minIntervalMs to pass since the last. */
  timer: NodeJS.Timeout | undefined;
}

/**
 * Runs, in the worker, the `watch` of each module resource an API instance holds a subscription
 * to (content_watches): one watch per (tenant, URI) however many instances and connections hold
 * it, started when a live instance holds it and stopped when none does. Each `changed()` moves the
 * rows' counts (one write at a time per watch, at most one per minIntervalMs).
 *
 * Of the workers serving the module, the one holding the pair's lease (content_watch_leases)
 * runs the watch: a change is counted once, and whatever the watch polls is polled once. A worker
 * that crashes keeps its leases until their term ends, so its watches' changes in that window
 * are not told; one that stops releases them and another worker takes over at once. A worker
 * that cannot renew a lease (its reads fail or stall) stops the watch a poll before the lease can
 * lapse, so two workers never run one watch; a watch that throws as it starts is released for
 * another worker (perhaps of another module version) to try, and tried here again later.
 */
export class ContentWatchRunner {
  readonly #options: ContentWatchRunnerOptions;
  readonly #running = new Map<string, Running>();
  /** Pairs whose watch failed to start here, with when this worker may try them again. */
  readonly #failed = new Map<string, number>();
  readonly #now: () => number;
  readonly #reads: SerialRead;
  #listener: ChannelListener | null = null;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;

  constructor(options: ContentWatchRunnerOptions) {
    this.#options = options;
    this.#now = options.now ?? (() => performance.now());
    // A lease is renewed once less than half its term is left, and a watch stops a poll before
    // its lease may lapse: under four polls a term, healthy watches would stop between reads.
    const leaseMs = options.leaseMs ?? DEFAULT_WATCH_LEASE_MS;
    if (!(leaseMs > 4 * (options.pollMs ?? 1_000))) {
      throw new RangeError(
        `a watch lease (${leaseMs} ms) must outlast four polls (${options.pollMs ?? 1_000} ms each)`,
      );
    }
    this.#reads = new SerialRead(
      () => this.#read(),
      (error) => options.logger.warn({ error: error.message }, 'reading content watches failed'),
    );
  }

  async start(): Promise<void> {
    const { listen, logger } = this.#options;
    if (listen) {
      this.#listener = new ChannelListener({
        connectionString: listen.connectionString,
        applicationName: listen.applicationName,
        channel: CONTENT_WATCHES_CHANNEL,
        name: 'content watch listener',
        logger,
        // A tool's rows moved, or (no tool) a worker released leases.
        onNotification: (tool) => {
          if (!tool || this.#options.registries.has(tool)) this.readNow();
        },
        onConnected: () => this.readNow(),
      });
      await this.#listener.start().catch((error: Error) => {
        logger.warn({ error: error.message }, 'the content watch listener did not start; polling only');
      });
    }
    this.#timer = setInterval(() => {
      this.#stopLapsing();
      this.readNow();
    }, this.#options.pollMs ?? 1_000);
    this.#timer.unref();
    this.readNow();
  }

  /** How many watches run now (for tests and logs). */
  get running(): number {
    return this.#running.size;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#timer);
    await this.#listener?.stop();
    await this.#reads.stop();
    for (const key of [...this.#running.keys()]) this.#stopWatch(key);
    // The other workers take what this one watched at their next read, not at its leases' end.
    await releaseContentWatches(this.#options.db, this.#options.workerId).catch((error: Error) =>
      this.#options.logger.warn({ error: error.message }, "releasing this worker's watch leases failed"),
    );
  }

  /** Reads the wanted watches now (one read at a time: a wake during one makes one more after it). */
  readNow(): void {
    this.#reads.wake();
  }

  async #read(): Promise<void> {
    const { db, registries, workerId, leaseMs } = this.#options;
    const startedAt = this.#now();
    for (const [pair, until] of this.#failed) if (until <= startedAt) this.#failed.delete(pair);
    const wanted = (await wantedContentWatches(db, [...registries.keys()])).filter(
      (watch) =>
        !this.#failed.has(pairKey(watch.tenantId, watch.uri)) &&
        registries.get(watch.tool)?.resolve(watch.uri)?.definition.watch !== undefined,
    );
    // Measured from before the claim is sent: Postgres starts each lease's term after that.
    const sentAt = this.#now();
    const leased = await claimContentWatches(db, workerId, wanted, leaseMs === undefined ? {} : { leaseMs });
    if (this.#stopped) return;
    const margin = this.#options.pollMs ?? 1_000;
    const now = this.#now();
    const keys = new Set<string>();
    /** The (tenant, URI) pairs started this read: one watch each, whichever tool names it. */
    const pairs = new Set<string>();
    for (const watch of wanted) {
      const pair = pairKey(watch.tenantId, watch.uri);
      const leftMs = leased.get(pair);
      const leaseEnds = sentAt + (leftMs ?? 0) - margin;
      // Failed to start while this read was under way, or a lease too near its end to run on:
      // not started (a running one stops), and the next read gives up or renews it.
      if (leftMs === undefined || pairs.has(pair) || this.#failed.has(pair) || leaseEnds <= now) continue;
      pairs.add(pair);
      const key = keyOf(watch);
      keys.add(key);
      const running = this.#running.get(key);
      if (running) running.leaseEnds = leaseEnds;
      else this.#startWatch(key, watch, leaseEnds);
    }
    for (const key of [...this.#running.keys()]) if (!keys.has(key)) this.#stopWatch(key);
  }

  /** Stops the watches whose lease this worker could not renew in time: another may take them soon. */
  #stopLapsing(): void {
    const now = this.#now();
    for (const [key, running] of this.#running) {
      if (running.leaseEnds > now) continue;
      this.#options.logger.warn(
        { uri: running.pair.split('\n')[1] },
        'a content watch lease could not be renewed in time; the watch stopped until the next read holds it',
      );
      this.#stopWatch(key);
    }
  }

  /** A watch threw as it started: its lease goes to the other workers, and this one tries it later. */
  #startFailed(key: string, running: Running, watch: WantedWatch): void {
    if (this.#running.get(key) !== running) return;
    this.#stopWatch(key);
    const retryMs = this.#options.retryFailedMs ?? DEFAULT_RETRY_FAILED_WATCH_MS;
    this.#failed.set(running.pair, this.#now() + retryMs);
    this.#options.logger.warn(
      { uri: watch.uri, tool: watch.tool, retryMs },
      "a resource's watch failed to start; its lease goes to another worker, and this one tries again later",
    );
    // The next read leaves the pair out of its claim, which deletes the lease and tells the others.
    this.readNow();
  }

  #startWatch(key: string, watch: WantedWatch, leaseEnds: number): void {
    const target = this.#options.registries.get(watch.tool)?.resolve(watch.uri);
    if (!target?.definition.watch) return;
    const minIntervalMs = this.#options.minIntervalMs ?? DEFAULT_MIN_CHANGE_INTERVAL_MS;
    const now = this.#now;
    const running: Running = {
      pair: pairKey(watch.tenantId, watch.uri),
      leaseEnds,
      stop: () => {},
      recording: false,
      again: false,
      lastAt: -Infinity,
      timer: undefined,
    };
    const record = () => {
      running.recording = true;
      running.lastAt = now();
      recordContentChange(this.#options.db, { tenantId: watch.tenantId, uri: watch.uri })
        .catch((error: Error) =>
          this.#options.logger.warn({ uri: watch.uri, error: error.message }, 'recording a content change failed'),
        )
        .finally(() => {
          running.recording = false;
          if (running.again) {
            running.again = false;
            changed();
          }
        });
    };
    // At most one write per minIntervalMs per watch, trailing: a resource that changes in a tight
    // loop costs Postgres and its subscribers a few notifications a second, and the last change is
    // always told (subscribers re-read, so one notification covers every change before it).
    const changed = () => {
      if (this.#running.get(key) !== running || running.timer !== undefined) return;
      if (running.recording) {
        running.again = true;
        return;
      }
      const wait = running.lastAt + minIntervalMs - now();
      if (wait <= 0) return record();
      running.timer = setTimeout(() => {
        running.timer = undefined;
        if (this.#running.get(key) === running) record();
      }, wait);
      running.timer.unref();
    };
    // In the map before the watch starts: a watch may call changed() at once.
    this.#running.set(key, running);
    running.stop = startResourceWatch(
      target,
      watch.uri,
      changed,
      { tenant: watch.tenantId },
      (fields, message) => this.#options.logger.warn(fields, message),
      () => this.#startFailed(key, running, watch),
    );
  }

  #stopWatch(key: string): void {
    const running = this.#running.get(key);
    this.#running.delete(key);
    if (!running) return;
    clearTimeout(running.timer);
    running.stop();
  }
}

function keyOf(watch: WantedWatch): string {
  return `${watch.tool}\n${watch.tenantId}\n${watch.uri}`;
}
