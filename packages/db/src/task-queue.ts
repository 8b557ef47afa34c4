import type { PgBoss } from 'pg-boss';

/**
 * The pg-boss queues that carry tasks to workers: one per tool, `taskgate.tool.<name>`, so a
 * worker fetches only the jobs of the tools it serves (routing is the queue a job is in, and no
 * worker ever claims another tool's job). A job's id is its task's id (or the task's job_id for a
 * resumed run) and its data names the task; everything else lives in the tasks table. Jobs are
 * only a delivery mechanism: the task row, not the job, is the truth about a task.
 *
 * Tool names are 1-128 of A-Z a-z 0-9 _ . - (defineTool), all allowed in a pg-boss queue name
 * (\w . - /), and the prefix keeps them apart from any other queue in the schema.
 */
export const TOOL_QUEUE_PREFIX = 'taskgate.tool.';

/**
 * The one queue every task went to before per-tool queues (migration 0007's release). Nothing is
 * sent to it any more; workers forward what an upgrade left in it to the tools' queues
 * (LegacyQueueDrain in apps/worker), and the sweeper still looks there for a task's job.
 */
export const LEGACY_TASK_QUEUE = 'taskgate-tasks';

/** The queue of a tool's tasks. */
export function toolQueue(tool: string): string {
  return `${TOOL_QUEUE_PREFIX}${tool}`;
}

export interface TaskJobData {
  readonly taskId: string;
  readonly tenantId: string;
}

/**
 * Queue settings that matter, the same for every tool's queue:
 * - notify off: workers are woken by the task's own `created` notification (TaskAnnouncer, sent
 *   once the task and its job committed) and fetch with their own pump, so pg-boss's NOTIFY would be
 *   a second notification for nothing.
 * - heartbeatSeconds: a worker that dies (SIGKILL, OOM, lost host) stops heartbeating, and the
 *   supervising instance fails the job over to another worker. 10 s is pg-boss's minimum.
 * - expireInSeconds: the outer bound on one attempt; the task's own two clocks fire far earlier.
 * - retryLimit: redeliveries after a worker death or a graceful release. Whether a redelivered
 *   task may run again is the tool's retry class, decided by the worker, not here.
 * - deleteAfterSeconds: pg-boss's own retention of ended jobs; the sweeper looks back as far.
 */
export const TASK_QUEUE_OPTIONS = {
  notify: false,
  heartbeatSeconds: 10,
  expireInSeconds: 24 * 3600,
  retryLimit: 10,
  retryDelay: 0,
  deleteAfterSeconds: 24 * 3600,
} as const;

/**
 * Creates a tool's queue, or brings its settings up to date (heartbeatSeconds is fixed at
 * creation); also warms pg-boss's queue cache for it. Safe to run from any number of processes at
 * once: a create that loses the race finds the queue there.
 */
export async function ensureTaskQueue(boss: PgBoss, name: string): Promise<void> {
  const existing = await boss.getQueue(name);
  if (!existing) {
    await boss.createQueue(name, TASK_QUEUE_OPTIONS).catch(async (error: unknown) => {
      // Another process created it between the check and the create.
      if (!(await boss.getQueue(name))) throw error;
    });
    return;
  }
  // Always written, even when unchanged: updateQueue (like createQueue) is what loads the queue
  // into pg-boss's cache, which getQueue does not.
  const { heartbeatSeconds: _fixedAtCreation, ...updatable } = TASK_QUEUE_OPTIONS;
  await boss.updateQueue(name, updatable);
}

/**
 * The tools' queues one process has ensured: each once, the first time it is needed (a worker at
 * start for the tools it serves, an API before its first send to a tool). Concurrent callers share
 * one ensure; a failed one is tried again by the next caller.
 *
 * Ensured before the transaction that sends: pg-boss looks an unknown queue up on its own pool,
 * and on the embedded Postgres a second connection waits for the transaction it would serve.
 */
export class TaskQueues {
  readonly #boss: PgBoss;
  readonly #ensured = new Map<string, Promise<void>>();

  constructor(boss: PgBoss) {
    this.#boss = boss;
  }

  /** Whether `tool`'s queue is known here (ensured, or being ensured). */
  has(tool: string): boolean {
    return this.#ensured.has(tool);
  }

  ensure(tool: string): Promise<void> {
    let ensured = this.#ensured.get(tool);
    if (!ensured) {
      ensured = ensureTaskQueue(this.#boss, toolQueue(tool));
      this.#ensured.set(tool, ensured);
      ensured.catch(() => this.#ensured.delete(tool));
    }
    return ensured;
  }

  async ensureAll(tools: Iterable<string>): Promise<void> {
    await Promise.all([...tools].map((tool) => this.ensure(tool)));
  }
}
