import type { PgBoss } from 'pg-boss';

/**
 * The pg-boss queue that carries tasks to workers. A job's id is its task's id and its data names
 * the task; everything else lives in the tasks table. Jobs are only a delivery mechanism: the task
 * row, not the job, is the truth about a task.
 */
export const TASK_QUEUE = 'taskgate-tasks';

export interface TaskJobData {
  readonly taskId: string;
  readonly tenantId: string;
}

/**
 * Queue settings that matter:
 * - notify off: workers are woken by the task's own `created` notification (TaskAnnouncer, sent
 *   once the task and its job committed) and fetch with their own pump, so pg-boss's NOTIFY would be
 *   a second notification for nothing.
 * - heartbeatSeconds: a worker that dies (SIGKILL, OOM, lost host) stops heartbeating, and the
 *   supervising instance fails the job over to another worker. 10 s is pg-boss's minimum.
 * - expireInSeconds: the outer bound on one attempt; the task's own two clocks fire far earlier.
 * - retryLimit: redeliveries after a worker death or a graceful release. Whether a redelivered
 *   task may run again is the tool's retry class, decided by the worker, not here.
 */
export const TASK_QUEUE_OPTIONS = {
  notify: false,
  heartbeatSeconds: 10,
  expireInSeconds: 24 * 3600,
  retryLimit: 10,
  retryDelay: 0,
  deleteAfterSeconds: 24 * 3600,
} as const;

/** Creates the queue, or brings its settings up to date; also warms pg-boss's queue cache. */
export async function ensureTaskQueue(boss: PgBoss): Promise<void> {
  const existing = await boss.getQueue(TASK_QUEUE);
  if (!existing) {
    await boss.createQueue(TASK_QUEUE, TASK_QUEUE_OPTIONS).catch(async (error: unknown) => {
      // Another process created it between the check and the create.
      if (!(await boss.getQueue(TASK_QUEUE))) throw error;
    });
    return;
  }
  const { heartbeatSeconds: _fixedAtCreation, ...updatable } = TASK_QUEUE_OPTIONS;
  await boss.updateQueue(TASK_QUEUE, updatable);
}
