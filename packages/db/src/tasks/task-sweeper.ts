import type { Kysely } from 'kysely';
import { isDatabaseUnavailable } from '../connection-errors.ts';
import type { Database } from '../schema.ts';
import type { TaskAnnouncer } from './task-announcer.ts';
import type { TaskRecord } from './task-record.ts';
import {
  cancelAbandonedInput,
  cancelOrphanedRequests,
  cancelUnheld,
  failOrphanedByEndedJobs,
  failPastMaxDeadline,
  failQueuedTooLong,
  failWithoutLiveJob,
} from './task-sweeps.ts';

type LogFn = (fields: Record<string, unknown>, message: string) => void;

export interface TaskSweeperOptions {
  readonly db: Kysely<Database>;
  readonly announcer: TaskAnnouncer;
  /** TASKGATE_MAX_QUEUE_MS: a task no worker started within this long of its creation fails. */
  readonly maxQueueMs: number;
  /** An instance silent for this long (and not stopped) is lost (default 10 s). */
  readonly lostAfterMs?: number;
  /** How long the database has answered this process without a break (its InstanceHeartbeat). */
  readonly reachableForMs: () => number;
  /** Told when a sweep found the database unreachable. */
  readonly onUnavailable?: () => void;
  /** Between sweeps, with ±25 % jitter so that sweepers started together drift apart (default 2 s). */
  readonly intervalMs?: number;
  /** How often the full pass over open tasks for a missing job runs (default 60 s). */
  readonly fullCheckIntervalMs?: number;
  /** A max deadline is the holding worker's own to enforce for this long after it passes (default 2 s). */
  readonly deadlineGraceMs?: number;
  /** Most tasks one statement ends (default 500); a sweep repeats a statement while it comes back full. */
  readonly batch?: number;
  readonly logger: { readonly info: LogFn; readonly warn: LogFn };
  readonly now?: () => number;
}

export interface SweepReport {
  readonly pastMaxDeadline: number;
  readonly queuedTooLong: number;
  readonly cancelledUnheld: number;
  readonly jobEnded: number;
  readonly orphanedRequests: number;
  readonly abandonedInput: number;
}

export const DEFAULT_LOST_AFTER_MS = 10_000;
export const DEFAULT_MAX_QUEUE_MS = 600_000;
const DEFAULT_SWEEP_INTERVAL_MS = 2_000;
/** pg-boss deletes ended jobs after a day (TASK_QUEUE_OPTIONS.deleteAfterSeconds); look no further back. */
const JOB_LOOKBACK_LIMIT_MS = 24 * 3600 * 1000;
/** The recent-jobs lookback overlaps the previous sweep by this much (clocks, slow commits). */
const JOB_LOOKBACK_OVERLAP_MS = 60_000;
const MAX_ROUNDS = 20;

/**
 * Ends, once each, the tasks nobody else will end: past their max clock, queued past the queue
 * bound, asked to cancel with nobody running them, abandoned by the queue (retries used up, job
 * gone), request-mode tasks whose API instance is lost, and parked ones no retry took up in time.
 * Any number of processes may run one: each statement locks with SKIP LOCKED and re-checks under
 * the lock (packages/db/src/tasks/task-sweeps.ts).
 *
 * Whatever depends on another instance being lost waits until this process has itself seen the
 * database answer for longer than the loss bound: after a Postgres restart every heartbeat is old,
 * and only a sweeper that has watched the others stay silent while the database was up may judge.
 */
export class TaskSweeper {
  readonly #options: TaskSweeperOptions;
  readonly #now: () => number;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<SweepReport> | null = null;
  #lastJobSweepAt: number | null = null;
  #lastFullCheckAt: number | null = null;
  #stopped = false;

  constructor(options: TaskSweeperOptions) {
    this.#options = options;
    this.#now = options.now ?? (() => performance.now());
  }

  start(): void {
    this.#schedule();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#running?.catch(() => {});
  }

  /** One sweep now (the timer runs one every interval); concurrent calls share it. */
  sweep(): Promise<SweepReport> {
    this.#running ??= this.#sweep().finally(() => {
      this.#running = null;
    });
    return this.#running;
  }

  #schedule(): void {
    if (this.#stopped) return;
    const interval = this.#options.intervalMs ?? DEFAULT_SWEEP_INTERVAL_MS;
    this.#timer = setTimeout(
      () => {
        this.sweep()
          .catch((error: Error) => {
            if (isDatabaseUnavailable(error)) this.#options.onUnavailable?.();
            else this.#options.logger.warn({ error: error.message }, 'task sweep failed; it runs again shortly');
          })
          .finally(() => this.#schedule());
      },
      Math.round(interval * (0.75 + Math.random() / 2)),
    );
    this.#timer.unref();
  }

  async #sweep(): Promise<SweepReport> {
    const { announcer, db, logger } = this.#options;
    const writer = announcer.writer(db);
    const batch = this.#options.batch ?? 500;
    const lostAfterMs = this.#options.lostAfterMs ?? DEFAULT_LOST_AFTER_MS;
    const mayJudgeLoss = this.#options.reachableForMs() > lostAfterMs;
    const startedAt = this.#now();

    // Cancels first: a queued task that was asked to cancel ends cancelled, not failed by the bound.
    const cancelledUnheld = await drain(
      (limit) => cancelUnheld(writer, mayJudgeLoss ? lostAfterMs : null, limit),
      batch,
    );
    const orphanedRequests = mayJudgeLoss
      ? await drain((limit) => cancelOrphanedRequests(writer, lostAfterMs, limit), batch)
      : [];
    const abandonedInput = await drain((limit) => cancelAbandonedInput(writer, limit), batch);
    const pastMaxDeadline = await drain(
      (limit) =>
        failPastMaxDeadline(writer, this.#options.deadlineGraceMs ?? 2_000, mayJudgeLoss ? lostAfterMs : null, limit),
      batch,
    );
    const queuedTooLong = await drain((limit) => failQueuedTooLong(writer, this.#options.maxQueueMs, limit), batch);

    const lookbackMs =
      this.#lastJobSweepAt === null
        ? JOB_LOOKBACK_LIMIT_MS
        : Math.min(JOB_LOOKBACK_LIMIT_MS, startedAt - this.#lastJobSweepAt + JOB_LOOKBACK_OVERLAP_MS);
    const jobEnded = await drain(
      (limit) => failOrphanedByEndedJobs(writer, lookbackMs, mayJudgeLoss ? lostAfterMs : null, limit),
      batch,
    );
    this.#lastJobSweepAt = startedAt;
    if (
      this.#lastFullCheckAt === null ||
      startedAt - this.#lastFullCheckAt >= (this.#options.fullCheckIntervalMs ?? 60_000)
    ) {
      jobEnded.push(
        ...(await drain((limit) => failWithoutLiveJob(writer, mayJudgeLoss ? lostAfterMs : null, limit), batch)),
      );
      this.#lastFullCheckAt = startedAt;
    }

    const report: SweepReport = {
      pastMaxDeadline: pastMaxDeadline.length,
      queuedTooLong: queuedTooLong.length,
      cancelledUnheld: cancelledUnheld.length,
      jobEnded: jobEnded.length,
      orphanedRequests: orphanedRequests.length,
      abandonedInput: abandonedInput.length,
    };
    const swept = [
      ...pastMaxDeadline,
      ...queuedTooLong,
      ...cancelledUnheld,
      ...jobEnded,
      ...orphanedRequests,
      ...abandonedInput,
    ];
    if (swept.length > 0) {
      logger.info(
        { ...report, tasks: swept.slice(0, 20).map((task) => ({ id: task.id, tool: task.tool, status: task.status })) },
        'ended tasks nobody else would end',
      );
    }
    return report;
  }
}

/** Runs a sweep statement until it comes back short of a full batch. */
async function drain(statement: (limit: number) => Promise<TaskRecord[]>, batch: number): Promise<TaskRecord[]> {
  const all: TaskRecord[] = [];
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const ended = await statement(batch);
    all.push(...ended);
    if (ended.length < batch) break;
  }
  return all;
}
