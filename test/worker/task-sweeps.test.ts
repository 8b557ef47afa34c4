import { TaskEventsHub } from '@taskgate/api';
import {
  claimAttempt,
  ensureTaskQueue,
  findTask,
  LEGACY_TASK_QUEUE,
  listTaskEvents,
  registerInstance,
  releaseAttempt,
  requestCancel,
  type TaskJobData,
  type TaskNotification,
  type TaskRecord,
  TaskSweeper,
  type TaskSweeperOptions,
  toolQueue,
} from '@taskgate/db';
import { defineTool } from '@taskgate/sdk';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { barrier, type Platform, silentLogger, startPlatform } from '../support/task-platform.ts';

const database = useTestDatabase();
const TENANT = 'acme';
/** The chore tool's queue: where its tasks' jobs go. */
const TASK_QUEUE = toolQueue('chore');

/** A tool nobody will run in most of these tests: they play the workers by hand. */
const chore = defineTool<{ n?: number }>({
  name: 'chore',
  description: 'does nothing; the tests claim and release it themselves',
  inputSchema: { type: 'object', properties: { n: { type: 'number' } } },
  retry: 'safe',
  timeouts: { maxMs: 60_000 },
  async handler() {
    return { content: [{ type: 'text', text: 'done' }] };
  },
});

let platform: Platform;
beforeAll(async () => {
  platform = await startPlatform(database.url, { tools: [chore] as never });
});
afterAll(async () => {
  await platform.stop();
});

/** A sweeper of the test's own: it runs only when the test says, and may judge losses at once. */
function sweeper(overrides: Partial<TaskSweeperOptions> = {}): TaskSweeper {
  return new TaskSweeper({
    db: platform.db,
    announcer: platform.announcer,
    maxQueueMs: 3_600_000,
    reachableForMs: () => Number.POSITIVE_INFINITY,
    deadlineGraceMs: 0,
    logger: silentLogger,
    ...overrides,
  });
}

const create = (mode: 'task' | 'request' = 'task', instanceId?: string) =>
  instanceId === undefined
    ? platform.service.create(TENANT, { tool: 'chore', arguments: {}, mode })
    : platform.service.create(TENANT, { tool: 'chore', arguments: {}, mode }).then(async (task) => {
        await sql`UPDATE tasks SET api_instance_id = ${instanceId} WHERE id = ${task.id}::uuid`.execute(platform.db);
        return task;
      });

const history = async (id: string) =>
  (await listTaskEvents(platform.db, TENANT, id))
    .filter((event) => event.type === 'status_changed')
    .map((event) => ({ to: event.toStatus, reason: event.reason }));

/** Fetches this task's job from pg-boss, as a worker's fetch does (the job goes active). */
async function fetchJob(taskId: string) {
  for (let round = 0; round < 50; round++) {
    const jobs = await platform.boss.fetch<TaskJobData>(TASK_QUEUE, { batchSize: 100 });
    const mine = jobs.find((job) => job.data.taskId === taskId);
    // Others' jobs go back untouched (they are not this test's).
    const others = jobs.filter((job) => job !== mine).map((job) => ({ id: job.id, retryCount: job.retryCount }));
    if (others.length > 0) await platform.boss.fail(TASK_QUEUE, others);
    if (mine) return mine;
  }
  throw new Error(`no job for task ${taskId}`);
}

/** The max clock ran out `ms` ago (as if that much time had passed since the claim). */
const backdate = (id: string, ms: number) =>
  sql`UPDATE tasks SET max_deadline_at = now() - ${ms} * interval '1 millisecond' WHERE id = ${id}::uuid`.execute(
    platform.db,
  );

describe('the task sweeper', () => {
  it('fails a task whose job used up its redeliveries, naming the attempts, and a later cancel then changes nothing', async () => {
    const task = await create();
    // A rolling deploy: each worker that takes the task is SIGTERMed and hands it back.
    for (let delivery = 0; delivery <= 10; delivery++) {
      const job = await fetchJob(task.id);
      const claim = await claimAttempt(platform.writer, task.id, `worker-${delivery}`);
      expect(claim?.task.attempt).toBe(delivery + 1);
      await releaseAttempt(platform.writer, task.id, delivery + 1, 'worker is shutting down');
      await platform.boss.fail(TASK_QUEUE, { id: job.id, retryCount: job.retryCount }, { reason: 'released' });
    }
    const [job] = await platform.boss.findJobs(TASK_QUEUE, { id: task.id });
    expect(job?.state).toBe('failed');
    expect((await findTask(platform.db, TENANT, task.id))?.status).toBe('working');

    const report = await sweeper().sweep();
    expect(report.jobEnded).toBe(1);
    const ended = (await findTask(platform.db, TENANT, task.id)) as TaskRecord;
    expect(ended.status).toBe('failed');
    expect(ended.statusMessage).toBe(
      'the queue gave up on the task after 11 attempt(s): its job is failed (retry limit 10 reached); no worker will run it again',
    );
    expect(ended.error).toMatchObject({ code: -32603, data: { attempts: 11, jobState: 'failed' } });
    expect(await history(task.id)).toEqual([{ to: 'failed', reason: 'job failed (swept)' }]);
    expect((await requestCancel(platform.writer, TENANT, task.id, 'too late')).recorded).toBe(false);
  });

  it('fails a task whose job is gone altogether (the full pass)', async () => {
    const task = await create();
    await sql`DELETE FROM pgboss.job WHERE name = ${TASK_QUEUE} AND id = ${task.id}::uuid`.execute(platform.db);
    expect((await sweeper().sweep()).jobEnded).toBe(1);
    expect(await findTask(platform.db, TENANT, task.id)).toMatchObject({
      status: 'failed',
      error: { data: { jobState: 'missing' } },
    });
  });

  it("looks for a task's job in the legacy single queue too: a live one there is left alone, a failed one ends it", async () => {
    // As an upgrade leaves it: the task's job in the queue of before, not (yet) in its tool's.
    await ensureTaskQueue(platform.boss, LEGACY_TASK_QUEUE);
    const waiting = await create();
    const failed = await create();
    for (const task of [waiting, failed]) {
      await sql`DELETE FROM pgboss.job WHERE name = ${TASK_QUEUE} AND id = ${task.id}::uuid`.execute(platform.db);
      await platform.boss.insert(LEGACY_TASK_QUEUE, [{ id: task.id, data: { taskId: task.id, tenantId: TENANT } }]);
    }
    await sql`UPDATE pgboss.job SET state = 'failed', completed_on = now()
              WHERE name = ${LEGACY_TASK_QUEUE} AND id = ${failed.id}::uuid`.execute(platform.db);
    expect((await sweeper().sweep()).jobEnded).toBe(1);
    expect((await findTask(platform.db, TENANT, waiting.id))?.status).toBe('working');
    expect(await findTask(platform.db, TENANT, failed.id)).toMatchObject({
      status: 'failed',
      error: { data: { jobState: 'failed' } },
    });
    await sql`DELETE FROM pgboss.job WHERE name = ${LEGACY_TASK_QUEUE}`.execute(platform.db);
    await sql`UPDATE tasks SET status = 'cancelled', finished_at = now() WHERE id = ${waiting.id}::uuid`.execute(
      platform.db,
    );
  });

  it('fails a task whose max clock ran out while it waited in the queue after a hand-back', async () => {
    const task = await create();
    await fetchJob(task.id);
    await claimAttempt(platform.writer, task.id, 'worker-released');
    await releaseAttempt(platform.writer, task.id, 1, 'worker is shutting down');
    await backdate(task.id, 1_000);

    expect((await sweeper().sweep()).pastMaxDeadline).toBe(1);
    expect(await findTask(platform.db, TENANT, task.id)).toMatchObject({
      status: 'failed',
      statusMessage: 'maximum timeout: the task ran for its limit of 60000 ms',
      error: { code: -32001, data: { clock: 'max', limitMs: 60_000 } },
    });
    expect(await history(task.id)).toEqual([
      { to: 'failed', reason: 'timeout:max (swept: nobody ended it at its deadline)' },
    ]);
  });

  it('fails a running task whose worker is gone once its max clock ran out, and leaves it to a live worker within the grace', async () => {
    const task = await create();
    await fetchJob(task.id);
    await claimAttempt(platform.writer, task.id, 'worker-that-vanished');
    await backdate(task.id, 1_000);

    // Within the grace, the holding worker's own timer is the one to end it.
    expect((await sweeper({ deadlineGraceMs: 60_000 }).sweep()).pastMaxDeadline).toBe(0);
    expect((await sweeper().sweep()).pastMaxDeadline).toBe(1);
    expect((await findTask(platform.db, TENANT, task.id))?.status).toBe('failed');
    // Fenced: the vanished worker's late completion changes nothing.
    expect((await findTask(platform.db, TENANT, task.id))?.workerId).toBeNull();
  });

  it('leaves a task past its max clock to the live worker holding it (its handler may have returned), and fails it once that worker is lost', async () => {
    // The holder's completion may be waiting out an outage or a lock: its handler returned before
    // the deadline, and a sweep that failed the task would fail work that succeeded.
    await registerInstance(platform.db, { id: 'worker-writing', kind: 'worker', host: 'test', pid: 6 });
    const task = await create();
    await fetchJob(task.id);
    await claimAttempt(platform.writer, task.id, 'worker-writing');
    await backdate(task.id, 60_000);
    expect((await sweeper().sweep()).pastMaxDeadline).toBe(0);
    // Back from a Postgres restart: every heartbeat is old, and none of it proves a loss.
    await sql`UPDATE instances SET heartbeat_at = now() - interval '1 minute' WHERE id = 'worker-writing'`.execute(
      platform.db,
    );
    expect((await sweeper({ reachableForMs: () => 3_000 }).sweep()).pastMaxDeadline).toBe(0);
    expect((await findTask(platform.db, TENANT, task.id))?.status).toBe('working');
    // Silent for a minute while this sweeper watched the database answer: lost.
    expect((await sweeper().sweep()).pastMaxDeadline).toBe(1);
    expect(await findTask(platform.db, TENANT, task.id)).toMatchObject({
      status: 'failed',
      error: { code: -32001, data: { clock: 'max' } },
    });
  });

  it('fails a task no worker started within the queue bound, naming the tool', async () => {
    const task = await create();
    // Younger than the bound: left alone. A bound of 0 has passed for every task already created.
    expect((await sweeper({ maxQueueMs: 60_000 }).sweep()).queuedTooLong).toBe(0);
    expect((await sweeper({ maxQueueMs: 0 }).sweep()).queuedTooLong).toBe(1);
    expect(await findTask(platform.db, TENANT, task.id)).toMatchObject({
      status: 'failed',
      statusMessage: 'no worker started chore within 0 ms (TASKGATE_MAX_QUEUE_MS); is a worker serving it running?',
      error: { code: -32001, data: { clock: 'queue', limitMs: 0, tool: 'chore' } },
    });
    expect(await history(task.id)).toEqual([{ to: 'failed', reason: 'timeout:queue (swept: no worker started it)' }]);
  });

  it('cancels at once a task asked to cancel that no worker holds, or whose worker is gone', async () => {
    const queued = await create();
    const held = await create();
    await fetchJob(held.id);
    await claimAttempt(platform.writer, held.id, 'worker-sigkilled');
    await requestCancel(platform.writer, TENANT, queued.id, 'not needed');
    await requestCancel(platform.writer, TENANT, held.id, 'not needed');

    // A sweeper that has not yet watched the database long enough may not call a worker lost.
    const young = await sweeper({ reachableForMs: () => 1_000 }).sweep();
    expect(young.cancelledUnheld).toBe(1);
    expect((await findTask(platform.db, TENANT, queued.id))?.statusMessage).toBe('cancelled before a worker ran it');
    expect((await findTask(platform.db, TENANT, held.id))?.status).toBe('working');

    expect((await sweeper().sweep()).cancelledUnheld).toBe(1);
    expect(await findTask(platform.db, TENANT, held.id)).toMatchObject({
      status: 'cancelled',
      statusMessage: 'cancelled; the worker running it was lost',
    });
    expect(await history(held.id)).toEqual([
      { to: 'cancelled', reason: 'cancel requested; the worker holding the task was lost (swept)' },
    ]);
  });

  it('leaves a task whose job ended to the live worker that holds it, and fails it once that worker is lost', async () => {
    // A worker runs the task on while its job's retries were spent elsewhere (deliveries that
    // waited for it and were handed back by draining workers): its result must still land.
    await registerInstance(platform.db, { id: 'worker-holding', kind: 'worker', host: 'test', pid: 7 });
    const task = await create();
    await fetchJob(task.id);
    await claimAttempt(platform.writer, task.id, 'worker-holding');
    await sql`UPDATE pgboss.job SET state = 'failed', completed_on = now()
              WHERE name = ${TASK_QUEUE} AND id = ${task.id}::uuid`.execute(platform.db);
    const report = await sweeper({ fullCheckIntervalMs: 0 }).sweep();
    expect(report.jobEnded).toBe(0);
    expect((await findTask(platform.db, TENANT, task.id))?.status).toBe('working');
    // A sweeper that has not watched the database long enough cannot judge it lost either.
    await sql`UPDATE instances SET heartbeat_at = now() - interval '1 minute' WHERE id = 'worker-holding'`.execute(
      platform.db,
    );
    expect((await sweeper({ reachableForMs: () => 0, fullCheckIntervalMs: 0 }).sweep()).jobEnded).toBe(0);
    expect((await sweeper().sweep()).jobEnded).toBe(1);
    expect(await findTask(platform.db, TENANT, task.id)).toMatchObject({
      status: 'failed',
      error: { data: { jobState: 'failed' } },
    });
  });

  it('leaves a cancel-requested task to the live worker that holds it', async () => {
    await registerInstance(platform.db, { id: 'worker-alive', kind: 'worker', host: 'test', pid: 1 });
    const task = await create();
    await fetchJob(task.id);
    await claimAttempt(platform.writer, task.id, 'worker-alive');
    await requestCancel(platform.writer, TENANT, task.id, 'stop');
    expect((await sweeper().sweep()).cancelledUnheld).toBe(0);
    expect((await findTask(platform.db, TENANT, task.id))?.status).toBe('working');
  });

  it('cancels the request-mode tasks of a lost API instance, and only those', async () => {
    await registerInstance(platform.db, { id: 'api-lost', kind: 'api', host: 'test', pid: 1 });
    await registerInstance(platform.db, { id: 'api-alive', kind: 'api', host: 'test', pid: 2 });
    await registerInstance(platform.db, { id: 'worker-busy', kind: 'worker', host: 'test', pid: 3 });
    const queued = await create('request', 'api-lost');
    const running = await create('request', 'api-lost');
    const durable = await create('task');
    const elsewhere = await create('request', 'api-alive');
    await fetchJob(running.id);
    await claimAttempt(platform.writer, running.id, 'worker-busy');
    // The instance stopped heartbeating (a SIGKILL) a minute ago.
    await sql`UPDATE instances SET heartbeat_at = now() - interval '1 minute' WHERE id = 'api-lost'`.execute(
      platform.db,
    );

    const report = await sweeper({ lostAfterMs: 10_000 }).sweep();
    expect(report.orphanedRequests).toBe(2);
    expect(await findTask(platform.db, TENANT, queued.id)).toMatchObject({
      status: 'cancelled',
      cancelReason: "the request's API instance was lost",
      statusMessage: "cancelled: the request's API instance was lost",
    });
    // The live worker holding it stops at its next checkpoint: the flag is set, the task still runs.
    expect(await findTask(platform.db, TENANT, running.id)).toMatchObject({
      status: 'working',
      cancelReason: "the request's API instance was lost",
    });
    expect((await findTask(platform.db, TENANT, durable.id))?.cancelRequestedAt).toBeNull();
    expect((await findTask(platform.db, TENANT, elsewhere.id))?.cancelRequestedAt).toBeNull();
    // Repeated sweeps change nothing more.
    expect((await sweeper({ lostAfterMs: 10_000 }).sweep()).orphanedRequests).toBe(0);
  });

  it('counts an instance that stopped gracefully as gone at once', async () => {
    await registerInstance(platform.db, { id: 'api-stopped', kind: 'api', host: 'test', pid: 4 });
    const task = await create('request', 'api-stopped');
    await sql`UPDATE instances SET stopped_at = now() WHERE id = 'api-stopped'`.execute(platform.db);
    expect((await sweeper({ lostAfterMs: 3_600_000 }).sweep()).orphanedRequests).toBe(1);
    expect((await findTask(platform.db, TENANT, task.id))?.status).toBe('cancelled');
  });

  it('does not judge instances lost before it has watched the database answer for the whole bound', async () => {
    await registerInstance(platform.db, { id: 'api-after-restart', kind: 'api', host: 'test', pid: 5 });
    const task = await create('request', 'api-after-restart');
    await sql`UPDATE instances SET heartbeat_at = now() - interval '1 minute' WHERE id = 'api-after-restart'`.execute(
      platform.db,
    );
    // Back from a Postgres restart 3 s ago: every heartbeat is old, and none of it proves a loss.
    expect((await sweeper({ lostAfterMs: 10_000, reachableForMs: () => 3_000 }).sweep()).orphanedRequests).toBe(0);
    expect((await findTask(platform.db, TENANT, task.id))?.status).toBe('working');
  });

  it('ends each task once when several sweepers run at the same time', async () => {
    const tasks = await Promise.all(Array.from({ length: 30 }, () => create()));
    const reports = await Promise.all([1, 2, 3].map(() => sweeper({ maxQueueMs: 0, batch: 7 }).sweep()));
    expect(reports.reduce((sum, report) => sum + report.queuedTooLong, 0)).toBeGreaterThanOrEqual(30);
    for (const task of tasks) {
      expect(await history(task.id)).toEqual([{ to: 'failed', reason: 'timeout:queue (swept: no worker started it)' }]);
    }
  });

  it('leaves a task whose row another transaction holds (a final commit) to that transaction', async () => {
    const task = await create();
    const held = barrier();
    const release = barrier();
    const holder = platform.db.transaction().execute(async (trx) => {
      await sql`SELECT 1 FROM tasks WHERE id = ${task.id}::uuid FOR NO KEY UPDATE`.execute(trx);
      held.resolve();
      await release.promise;
    });
    await held.promise;
    expect((await sweeper({ maxQueueMs: 0 }).sweep()).queuedTooLong).toBe(0);
    release.resolve();
    await holder;
    expect((await sweeper({ maxQueueMs: 0 }).sweep()).queuedTooLong).toBe(1);
  });

  it('announces what it ended, so a caller waiting on the task hears of it', async () => {
    const task = await create();
    const hub = new TaskEventsHub({ connectionString: database.url, listen: true, logger: silentLogger });
    await hub.start();
    try {
      const heard = new Promise<TaskNotification | null>((resolve) => hub.subscribe(task.id, resolve));
      await sweeper({ maxQueueMs: 0 }).sweep();
      expect(await heard).toMatchObject({ id: task.id, event: 'status', status: 'failed' });
    } finally {
      await hub.stop();
    }
  });
});
