import { type ClaimedAttempt, retryWhileUnavailable, type TaskJobData } from '@taskgate/db';
import { Batcher, backoffDelay, LoopSignals, shareSlots } from '@taskgate/reliability';
import { TaskReleasedError } from '@taskgate/sdk';
import type { Job, JobAttempt, PgBoss } from 'pg-boss';

type LogFn = (fields: Record<string, unknown>, message: string) => void;

const REFILL_LINGER_MS = 5;
/** Pauses between failed fetches while the database is unreachable: 250 ms doubling to 5 s, jittered. */
const FETCH_BACKOFF = { baseMs: 250, capMs: 5_000 };
/** A settle (complete, fail back) is retried through an outage for this long, then left to pg-boss's expiry. */
const SETTLE_RETRY_MS = 60_000;

export interface FetchedJob {
  /** The queue it was fetched from (its tool's). */
  readonly queue: string;
  readonly job: Job<TaskJobData>;
  /** Null when the task needs no run (it ended, or was cancelled or expired, before delivery). */
  readonly claim: ClaimedAttempt | null;
  /** With a null claim: the live worker that still holds the task (awaitHolder's case). */
  readonly heldBy?: string;
}

/** One queue the pump fetches from, with the most of its jobs that may run at once. */
export interface PumpQueue {
  readonly name: string;
  /** Per-tool concurrency (TASKGATE_TOOL_CONCURRENCY); the pump's own concurrency caps it too. */
  readonly concurrency: number;
}

/** So many jobs from one queue, in one fetch. */
export interface FetchRequest {
  readonly queue: string;
  readonly count: number;
}

export interface JobPumpOptions {
  readonly boss: PgBoss;
  /** The queues of the tools this worker serves. */
  readonly queues: readonly PumpQueue[];
  /** Jobs run at once, whatever their queue: the worker-wide cap. */
  readonly concurrency: number;
  /** The longest the pump sleeps when it has free slots and nothing woke it. */
  readonly pollIntervalMs: number;
  /** How often running jobs' heartbeats are refreshed (the queue expects one within 10 s). */
  readonly heartbeatIntervalMs: number;
  /** Fetches up to `count` jobs of each queue asked and claims their tasks, in one transaction. */
  readonly fetch: (requests: readonly FetchRequest[]) => Promise<FetchedJob[]>;
  readonly run: (claim: ClaimedAttempt | null, fetched: FetchedJob) => Promise<void>;
  readonly logger: { readonly info: LogFn; readonly warn: LogFn; readonly debug: LogFn };
}

/**
 * Fetches task jobs from pg-boss and keeps up to `concurrency` of them running.
 *
 * pg-boss's own work() loop fetches one job per wake-up when batchSize is 1 and then sleeps for
 * its polling interval, so a backlog created faster than notifications arrive drains a few jobs
 * per interval. This pump fetches as many jobs as it has free slots, fetches again at once while
 * fetches come back full, sleeps only when the queues are empty, and is woken by task-created
 * notifications (or its poll floor). Each job is settled on its own: completed, or failed back to
 * the queue (retry) when its task was released.
 *
 * Several queues (one per tool served): one fetch is still one transaction, with a fetch statement
 * for each queue that gets slots. Free slots are shared out fairly (shareSlots: round robin from a
 * moving start, each queue capped by its per-tool concurrency), and only over the queues believed
 * to have work — those a notification named, or whose last fetch came back full — so a worker of
 * many tools under load on one of them still fetches with one statement. Every poll interval, busy
 * or not, every queue counts as possibly holding work again: that floor is what finds work whose
 * notification was lost (the announcer drops a failed NOTIFY; the polls are what cover it).
 */
export class JobPump {
  readonly #options: JobPumpOptions;
  readonly #running = new Map<string, { job: Job<TaskJobData>; queue: string }>();
  readonly #runningByQueue = new Map<string, number>();
  #caps: ReadonlyMap<string, number>;
  /** Queues that may hold work: named by a wake-up, or full at their last fetch. */
  readonly #pending = new Set<string>();
  /** Queues named by a wake-up during the fetch under way: kept pending whatever it returns. */
  readonly #wokenDuringFetch = new Set<string>();
  /** When every queue was last counted as possibly holding work (the poll floor). */
  #floorAt = performance.now();
  #rotation = 0;
  /** Jobs whose attempt is over and whose retirement (complete, or fail back) is still on its way. */
  readonly #settling = new Set<Promise<void>>();
  readonly #signals = new LoopSignals();
  #wakeRequested = false;
  #fetchFailures = 0;
  /** Aborted by close(): a settle still waiting out an outage gives up (pg-boss's expiry covers it). */
  readonly #closing = new AbortController();
  #loop: Promise<void> | null = null;
  #heartbeat: NodeJS.Timeout | undefined;

  readonly #refillAt: number;

  readonly #completions: Batcher<{ queue: string; attempt: JobAttempt }, undefined>;

  constructor(options: JobPumpOptions) {
    this.#options = options;
    this.#caps = new Map(options.queues.map((queue) => [queue.name, Math.min(queue.concurrency, options.concurrency)]));
    for (const queue of options.queues) this.#pending.add(queue.name);
    this.#completions = new Batcher(
      async (items) => {
        // pg-boss completes per queue: one statement for each queue in the batch.
        for (const [queue, attempts] of groupByQueue(items)) await options.boss.complete(queue, attempts);
        return items.map(() => undefined);
      },
      { maxBatch: 100 },
    );
    this.#refillAt = Math.max(1, Math.floor(options.concurrency / 4));
  }

  get running(): number {
    return this.#running.size;
  }

  start(): void {
    this.#loop = this.#pump();
    this.#heartbeat = setInterval(() => void this.#touch(), this.#options.heartbeatIntervalMs);
    this.#heartbeat.unref();
  }

  /** Jobs of `queue` running now. */
  runningIn(queue: string): number {
    return this.#runningByQueue.get(queue) ?? 0;
  }

  /**
   * New work may be waiting (a task was created): fetch now instead of at the next poll. With a
   * queue, only that one (a queue this pump does not fetch is ignored); without, all of them.
   */
  wake(queue?: string): void {
    if (queue !== undefined && !this.#caps.has(queue)) return;
    for (const name of queue === undefined ? this.#caps.keys() : [queue]) {
      this.#pending.add(name);
      this.#wokenDuringFetch.add(name);
    }
    this.#wakeRequested = true;
    this.#signals.wake();
  }

  /**
   * The queues to fetch from now on (the worker's tools changed: a gateway's downstream listed new
   * ones). A new queue is fetched at once; jobs running from a queue no longer listed go on, and
   * complete as before.
   */
  setQueues(queues: readonly PumpQueue[]): void {
    const before = this.#caps;
    this.#caps = new Map(queues.map((queue) => [queue.name, Math.min(queue.concurrency, this.#options.concurrency)]));
    for (const name of [...this.#pending]) if (!this.#caps.has(name)) this.#pending.delete(name);
    const added = [...this.#caps.keys()].filter((name) => !before.has(name));
    for (const name of added) {
      this.#pending.add(name);
      this.#wokenDuringFetch.add(name);
    }
    if (added.length > 0) {
      this.#wakeRequested = true;
      this.#signals.wake();
    }
  }

  /** Stops fetching; jobs already running go on (the runner drains them). */
  async stopFetching(): Promise<void> {
    this.#signals.close();
    await this.#loop;
  }

  /** After the running jobs have settled: waits for their retirements, then stops the heartbeats. */
  async close(): Promise<void> {
    this.#closing.abort();
    await Promise.all([...this.#settling]);
    clearInterval(this.#heartbeat);
  }

  async #pump(): Promise<void> {
    const { concurrency } = this.#options;
    while (!this.#signals.closed) {
      let free = concurrency - this.#running.size;
      if (free === 0) {
        await this.#signals.waitFor('slot');
        continue;
      }
      // A fetch is a transaction of its own: when only a slot or two are free, linger a moment for
      // more to free up and fetch them together (never long: a free slot must not sit idle).
      if (this.#running.size > 0 && free < this.#refillAt) {
        await this.#signals.waitFor('slot', REFILL_LINGER_MS);
        free = concurrency - this.#running.size;
      }
      const requests = this.#plan(free);
      if (requests.length === 0) {
        // Every queue with room is believed empty (or every queue with work is at its cap).
        await this.#idle();
        continue;
      }
      this.#wakeRequested = false;
      this.#wokenDuringFetch.clear();
      try {
        const jobs = await this.#options.fetch(requests);
        if (this.#fetchFailures > 0) {
          this.#options.logger.info({ failures: this.#fetchFailures }, 'fetching jobs works again');
          this.#fetchFailures = 0;
        }
        const got = new Map<string, number>();
        for (const entry of jobs) got.set(entry.queue, (got.get(entry.queue) ?? 0) + 1);
        // A queue that gave fewer than asked is drained, unless a wake-up named it meanwhile (the
        // fetch's snapshot may not have seen that task). A full one probably has more.
        for (const { queue, count } of requests) {
          if ((got.get(queue) ?? 0) < count && !this.#wokenDuringFetch.has(queue)) this.#pending.delete(queue);
        }
        for (const entry of jobs) this.#start(entry);
      } catch (error) {
        // While the database is down every fetch fails: back off (capped, jittered, so workers
        // that lost it together do not return in step) and say so once, not once per attempt.
        const delay = backoffDelay(Math.min(this.#fetchFailures, 30), FETCH_BACKOFF, Math.random);
        const fields = { error: (error as Error).message, retryInMs: delay };
        const message = 'fetching jobs failed; retrying with backoff';
        // Called on the logger: pino's methods need it as `this`.
        if (this.#fetchFailures === 0) this.#options.logger.warn(fields, message);
        else this.#options.logger.debug(fields, message);
        this.#fetchFailures += 1;
        await this.#signals.waitFor('wake', delay);
        continue;
      }
      // A full batch means there is probably more; a wake-up during the fetch may be a task the
      // fetch's snapshot did not see. Either way, go round again at once.
      if (this.#wakeRequested || this.#plan(this.#options.concurrency - this.#running.size).length > 0) continue;
      await this.#idle();
    }
  }

  /** This fetch's share of `free` slots per queue, over the queues that may have work. */
  #plan(free: number): FetchRequest[] {
    const now = performance.now();
    if (now - this.#floorAt >= this.#options.pollIntervalMs) {
      for (const queue of this.#caps.keys()) this.#pending.add(queue);
      this.#floorAt = now;
    }
    const rooms = [...this.#pending].map((queue) => ({
      queue,
      room: (this.#caps.get(queue) ?? 0) - this.runningIn(queue),
    }));
    const shares = shareSlots(free, rooms, this.#rotation++);
    return [...shares].map(([queue, count]) => ({ queue, count }));
  }

  /**
   * Sleeps until a wake-up (it named its queues), a freed slot (a queue at its cap may have room
   * now: it stayed pending) or the poll floor, whichever comes first.
   */
  async #idle(): Promise<void> {
    this.#wakeRequested = false;
    const untilFloor = this.#floorAt + this.#options.pollIntervalMs - performance.now();
    await this.#signals.waitFor('wake', Math.max(1, untilFloor));
  }

  #start(fetched: FetchedJob): void {
    const { queue, job, claim } = fetched;
    const key = `${queue}/${job.id}`;
    this.#running.set(key, { job, queue });
    this.#runningByQueue.set(queue, this.runningIn(queue) + 1);
    const attempt = { id: job.id, retryCount: job.retryCount };
    // A slot is for a running handler: it frees as soon as the attempt is over (its task row is
    // terminal, or released). The job's retirement is bookkeeping that may wait for a batch;
    // close() waits for the retirements under way (never for an attempt still running), so a
    // stopping worker does not leave finished jobs active.
    const retire = (work: () => Promise<unknown>) => {
      this.#running.delete(key);
      this.#runningByQueue.set(queue, this.runningIn(queue) - 1);
      this.#signals.slotFreed();
      // Through a resolved promise, so that even a synchronous throw becomes a logged rejection.
      // Through an outage, retried: a job left active would wait out its heartbeat expiry first.
      const retiring: Promise<void> = Promise.resolve()
        .then(() => retryWhileUnavailable(work, { giveUpAfterMs: SETTLE_RETRY_MS, signal: this.#closing.signal }))
        .then(() => undefined)
        .catch((error: Error) =>
          this.#options.logger.warn({ jobId: job.id, error: error.message }, 'settling the job failed'),
        )
        .finally(() => this.#settling.delete(retiring));
      this.#settling.add(retiring);
    };
    this.#options.run(claim, fetched).then(
      // The task row is already terminal; this only retires the delivery, many jobs per statement.
      () => retire(() => this.#completions.submit({ queue, attempt })),
      (error: unknown) => {
        if (!(error instanceof TaskReleasedError)) {
          this.#options.logger.warn(
            { jobId: job.id, error: (error as Error).message },
            'task attempt failed; the job goes back to the queue',
          );
        }
        retire(() => this.#options.boss.fail(queue, attempt, { reason: (error as Error).message }));
      },
    );
  }

  async #touch(): Promise<void> {
    const items = [...this.#running.values()].map(({ job, queue }) => ({
      queue,
      attempt: { id: job.id, retryCount: job.retryCount },
    }));
    try {
      for (const [queue, attempts] of groupByQueue(items)) await this.#options.boss.touch(queue, attempts);
    } catch (error) {
      this.#options.logger.warn({ error: (error as Error).message }, 'job heartbeat failed');
    }
  }
}

function groupByQueue(items: readonly { queue: string; attempt: JobAttempt }[]): Map<string, JobAttempt[]> {
  const byQueue = new Map<string, JobAttempt[]>();
  for (const { queue, attempt } of items) {
    const attempts = byQueue.get(queue) ?? [];
    attempts.push(attempt);
    byQueue.set(queue, attempts);
  }
  return byQueue;
}
