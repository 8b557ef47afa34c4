import {
  type Database,
  ensureTaskQueue,
  isDatabaseUnavailable,
  LEGACY_TASK_QUEUE,
  legacyJobTools,
  lockLegacyJobs,
  type TaskJobData,
  type TaskQueues,
  toolQueue,
} from '@taskgate/db';
import type { Kysely } from 'kysely';
import { fromKysely, type PgBoss } from 'pg-boss';

type LogFn = (fields: Record<string, unknown>, message: string) => void;

export interface LegacyQueueDrainOptions {
  readonly db: Kysely<Database>;
  readonly boss: PgBoss;
  /** The worker's own queue cache: the tools' queues are ensured through it, before the move. */
  readonly queues: TaskQueues;
  /** Between drains (default 30 s): a job an old worker hands back reappears as `retry`. */
  readonly intervalMs?: number;
  /** Jobs moved per transaction (default 200). */
  readonly batch?: number;
  readonly logger: { readonly info: LogFn; readonly warn: LogFn };
}

/**
 * Moves the jobs an upgrade left in the single task queue of before (LEGACY_TASK_QUEUE) to their
 * tools' queues, so that tasks accepted before the upgrade still run, on a worker that serves their
 * tool. Chosen over moving them in migration 0007: the migration runs before pg-boss's schema is
 * installed on a fresh database and would have to write pg-boss's tables itself, and during a
 * rolling upgrade an API of the old release still sends there — a drain that runs on every worker,
 * at start and then periodically, catches those too.
 *
 * Every worker forwards every tool's jobs, not only its own: a move is not a claim. The job keeps
 * its id (pg-boss keys jobs by queue and id, and the task knows its job by id), and the move is one
 * transaction: insert into the tool's queue, delete from the legacy one. A job whose task is gone
 * or ended is deleted. Only waiting jobs move; an active one is its old worker's until it comes back.
 * The redelivery count starts again in the tool's queue (the task's own attempt count does not).
 */
export class LegacyQueueDrain {
  readonly #options: LegacyQueueDrainOptions;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<number> | null = null;
  #stopped = false;

  constructor(options: LegacyQueueDrainOptions) {
    this.#options = options;
  }

  start(): void {
    void this.#tick();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#running?.catch(() => {});
  }

  /** Moves every waiting legacy job now; resolves with how many jobs left the legacy queue. */
  drain(): Promise<number> {
    this.#running ??= this.#drainAll().finally(() => {
      this.#running = null;
    });
    return this.#running;
  }

  async #tick(): Promise<void> {
    try {
      await this.drain();
    } catch (error) {
      if (!isDatabaseUnavailable(error)) {
        this.#options.logger.warn({ error: (error as Error).message }, 'moving jobs out of the legacy queue failed');
      }
    }
    if (this.#stopped) return;
    this.#timer = setTimeout(() => void this.#tick(), this.#options.intervalMs ?? 30_000);
    this.#timer.unref();
  }

  async #drainAll(): Promise<number> {
    const { boss, db, queues, logger } = this.#options;
    // A fresh install never had the legacy queue: then there is nothing to do, ever (checked each
    // round all the same: an API of the old release creates it when it starts).
    if (!(await boss.getQueue(LEGACY_TASK_QUEUE))) return 0;
    // Into pg-boss's cache before the transaction, as the tools' queues below: the moves must not
    // need a connection of pg-boss's own (on the embedded Postgres it would wait for this one).
    await ensureTaskQueue(boss, LEGACY_TASK_QUEUE);
    let total = 0;
    for (;;) {
      const tools = await legacyJobTools(db);
      await queues.ensureAll(tools);
      // Also when no tool is named: jobs of tasks that are gone or ended are deleted all the same.
      const moved = await this.#moveBatch(new Set(tools));
      total += moved;
      if (moved === 0) break;
    }
    if (total > 0) logger.info({ jobs: total }, "moved jobs from the legacy task queue to their tools' queues");
    return total;
  }

  async #moveBatch(ensured: ReadonlySet<string>): Promise<number> {
    const { boss, db } = this.#options;
    return db.transaction().execute(async (trx) => {
      const jobs = await lockLegacyJobs(trx, this.#options.batch ?? 200);
      // A job of a tool that appeared since the tools were read is left for the next round.
      const moving = jobs.filter((job) => job.tool === null || ensured.has(job.tool));
      const byTool = new Map<string, { id: string; data: TaskJobData }[]>();
      for (const job of moving) {
        if (job.tool === null) continue;
        const list = byTool.get(job.tool) ?? [];
        list.push({ id: job.id, data: job.data });
        byTool.set(job.tool, list);
      }
      const adapter = fromKysely(trx);
      for (const [tool, list] of byTool) await boss.insert(toolQueue(tool), list, { db: adapter });
      if (moving.length > 0) {
        await boss.deleteJob(
          LEGACY_TASK_QUEUE,
          moving.map((job) => job.id),
          { db: adapter },
        );
      }
      return moving.length;
    });
  }
}
