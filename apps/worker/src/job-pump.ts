import { type ClaimedAttempt, retryWhileUnavailable, type TaskJobData } from '@taskgate/db';
import { Batcher, backoffDelay, LoopSignals } from '@taskgate/reliability';
import { TaskReleasedError } from '@taskgate/sdk';
import type { Job, JobAttempt, PgBoss } from 'pg-boss';

type LogFn = (fields: Record<string, unknown>, message: string) => void;

const REFILL_LINGER_MS = 5;
/** Pauses between failed fetches while the database is unreachable: 250 ms doubling to 5 s, jittered. */
const FETCH_BACKOFF = { baseMs: 250, capMs: 5_000 };
/** A settle (complete, fail back) is retried through an outage for this long, then left to pg-boss's expiry. */
const SETTLE_RETRY_MS = 60_000;

export interface FetchedJob {
  readonly job: Job<TaskJobData>;
  /** Null when the task needs no run (it ended, or was cancelled or expired, before delivery). */
  readonly claim: ClaimedAttempt | null;
}

export interface JobPumpOptions {
  readonly boss: PgBoss;
  readonly queue: string;
  /** Jobs run at once. */
  readonly concurrency: number;
  /** The longest the pump sleeps when it has free slots and nothing woke it. */
  readonly pollIntervalMs: number;
  /** How often running jobs' heartbeats are refreshed (the queue expects one within 10 s). */
  readonly heartbeatIntervalMs: number;
  /** Fetches up to `count` jobs and claims their tasks, in one transaction. */
  readonly fetch: (count: number) => Promise<FetchedJob[]>;
  readonly run: (claim: ClaimedAttempt | null) => Promise<void>;
  readonly logger: { readonly info: LogFn; readonly warn: LogFn; readonly debug: LogFn };
}

/**
 * Fetches task jobs from pg-boss and keeps up to `concurrency` of them running.
 *
 * pg-boss's own work() loop fetches one job per wake-up when batchSize is 1 and then sleeps for
 * its polling interval, so a backlog created faster than notifications arrive drains a few jobs
 * per interval. This pump fetches as many jobs as it has free slots, fetches again at once while
 * fetches come back full, sleeps only when the queue is empty, and is woken by task-created
 * notifications (or its poll floor). Each job is settled on its own: completed, or failed back to
 * the queue (retry) when its task was released.
 */
export class JobPump {
  readonly #options: JobPumpOptions;
  readonly #running = new Map<string, Job<TaskJobData>>();
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

  readonly #completions: Batcher<JobAttempt, undefined>;

  constructor(options: JobPumpOptions) {
    this.#options = options;
    this.#completions = new Batcher(
      async (attempts) => {
        await options.boss.complete(options.queue, [...attempts]);
        return attempts.map(() => undefined);
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

  /** New work may be waiting (a task was created): fetch now instead of at the next poll. */
  wake(): void {
    this.#wakeRequested = true;
    this.#signals.wake();
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
      this.#wakeRequested = false;
      let fetched = 0;
      try {
        const jobs = await this.#options.fetch(free);
        fetched = jobs.length;
        if (this.#fetchFailures > 0) {
          this.#options.logger.info({ failures: this.#fetchFailures }, 'fetching jobs works again');
          this.#fetchFailures = 0;
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
      if (fetched === free || this.#wakeRequested) continue;
      await this.#signals.waitFor('wake', this.#options.pollIntervalMs);
    }
  }

  #start({ job, claim }: FetchedJob): void {
    this.#running.set(job.id, job);
    const attempt = { id: job.id, retryCount: job.retryCount };
    // A slot is for a running handler: it frees as soon as the attempt is over (its task row is
    // terminal, or released). The job's retirement is bookkeeping that may wait for a batch;
    // close() waits for the retirements under way (never for an attempt still running), so a
    // stopping worker does not leave finished jobs active.
    const retire = (work: () => Promise<unknown>) => {
      this.#running.delete(job.id);
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
    this.#options.run(claim).then(
      // The task row is already terminal; this only retires the delivery, many jobs per statement.
      () => retire(() => this.#completions.submit(attempt)),
      (error: unknown) => {
        if (!(error instanceof TaskReleasedError)) {
          this.#options.logger.warn(
            { jobId: job.id, error: (error as Error).message },
            'task attempt failed; the job goes back to the queue',
          );
        }
        retire(() => this.#options.boss.fail(this.#options.queue, attempt, { reason: (error as Error).message }));
      },
    );
  }

  async #touch(): Promise<void> {
    const attempts = [...this.#running.values()].map((job) => ({ id: job.id, retryCount: job.retryCount }));
    if (attempts.length === 0) return;
    try {
      await this.#options.boss.touch(this.#options.queue, attempts);
    } catch (error) {
      this.#options.logger.warn({ error: (error as Error).message }, 'job heartbeat failed');
    }
  }
}
