import { claimAttempt, listReconciliationItems, registerInstance, toolQueue } from '@taskgate/db';
import { defineTool } from '@taskgate/sdk';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { barrier, type Platform, startPlatform, waitForTask } from '../support/task-platform.ts';

// pg-boss redelivers a job whose heartbeat lapsed: after an outage longer than the queue's 10 s
// heartbeat, a worker whose handler returned (its completion retrying until the database is back)
// or still runs may find its job failed over by the supervisor before its next touch. Whoever
// fetches the redelivery must not start a new attempt while that worker is alive: the holder's
// result would be fenced out (a safe tool runs twice) and an unsafe tool's second attempt refused
// into reconciliation, for work that finished. Forced by order: the handler waits at a barrier;
// the test lapses the job's heartbeat and runs the supervisor; the redelivery is fetched; then the
// handler returns.
const database = useTestDatabase();
const QUEUE = toolQueue('held_charge');
let platform: Platform;
let runs = 0;
const started = barrier();
const finish = barrier();

const heldCharge = defineTool({
  name: 'held_charge',
  description: 'an unsafe tool that waits for the test, then returns',
  inputSchema: { type: 'object' },
  retry: 'unsafe',
  timeouts: { idleMs: 120_000, maxMs: 120_000 },
  async handler() {
    runs += 1;
    started.resolve();
    await finish.promise;
    return { content: [{ type: 'text', text: 'charged once' }] };
  },
});

const quickSum = defineTool({
  name: 'quick_sum',
  description: 'a safe tool that returns at once',
  inputSchema: { type: 'object' },
  retry: 'safe',
  async handler() {
    return { content: [{ type: 'text', text: 'summed' }] };
  },
});

beforeAll(async () => {
  platform = await startPlatform(database.url, { tools: [heldCharge, quickSum] as never });
  await platform.startWorker({ concurrency: 2 });
});
afterAll(async () => {
  await platform?.stop();
});

const jobOf = (taskId: string) =>
  sql<{ state: string; retry_count: number }>`
    SELECT state, retry_count FROM pgboss.job WHERE name = ${QUEUE} AND data->>'taskId' = ${taskId}`
    .execute(platform.db)
    .then(({ rows }) => rows[0]);

describe('a redelivery of a task a live worker holds', () => {
  it('waits for the holder: the task ends with its one run, nothing re-run, nothing for reconciliation', async () => {
    const task = await platform.service.create('default', { tool: 'held_charge', arguments: {} });
    await started.promise;

    // What the supervisor does to a job not touched for 10 s, forced: the worker's own touch
    // (every 4 s) may refresh the heartbeat between the two statements, so until it takes.
    await waitForTask(
      async () => {
        await sql`UPDATE pgboss.job SET heartbeat_on = now() - interval '1 hour'
          WHERE name = ${QUEUE} AND data->>'taskId' = ${task.id} AND state = 'active'`.execute(platform.db);
        await platform.boss.supervise(QUEUE);
        return jobOf(task.id);
      },
      (job) => (job?.retry_count ?? 0) >= 1,
    );
    // Fetched again (the fetch and its claim commit together): the redelivery is under way.
    await waitForTask(
      () => jobOf(task.id),
      (job) => job?.state === 'active' && job.retry_count === 1,
    );
    expect(await platform.service.get('default', task.id)).toMatchObject({ status: 'working', attempt: 1 });

    finish.resolve();
    const ended = await waitForTask(
      () => platform.service.get('default', task.id),
      (current) => current?.status !== 'working',
    );
    expect(ended).toMatchObject({
      status: 'completed',
      attempt: 1,
      result: { content: [{ type: 'text', text: 'charged once' }] },
    });
    expect(runs).toBe(1);
    expect(await listReconciliationItems(platform.db, { tenantId: null, filter: 'all', limit: 10 })).toEqual([]);
    // The waiting delivery sees the task ended and retires its job.
    await waitForTask(
      () => jobOf(task.id),
      (job) => job?.state === 'completed',
    );
  });
});

// The rule the worker's claims follow (claimAttempts with a ClaimRule), on rows written by hand.
describe('claiming a task another worker holds', () => {
  // The test plays every worker here: the file's own must not fetch these tasks.
  beforeAll(async () => {
    await platform.worker?.stop();
    platform.worker = null;
  });
  const heldBy = async (holder: string) => {
    const task = await platform.service.create('default', { tool: 'held_charge', arguments: {} });
    expect(await claimAttempt(platform.writer, task.id, holder)).not.toBeNull();
    return task.id;
  };
  const beat = (id: string, agoMs: number) =>
    sql`UPDATE instances SET heartbeat_at = now() - ${agoMs} * interval '1 millisecond' WHERE id = ${id}`.execute(
      platform.db,
    );

  it('takes it only from a holder silent for the loss bound, judged by a claimant that watched that long', async () => {
    await registerInstance(platform.db, { id: 'holder-alive', kind: 'worker', host: 'test', pid: 1 });
    await registerInstance(platform.db, { id: 'holder-silent', kind: 'worker', host: 'test', pid: 2 });
    const alive = await heldBy('holder-alive');
    const silent = await heldBy('holder-silent');
    const vanished = await heldBy('holder-without-a-row');
    await beat('holder-alive', 1_000);
    await beat('holder-silent', 20_000);
    const rule = { holderLostAfterMs: 10_000 };

    expect(await claimAttempt(platform.writer, alive, 'claimant', rule)).toBeNull();
    // A claimant that has not watched the database answer for the bound (just started, or back
    // from an outage, when every heartbeat is old) judges nobody lost.
    expect(await claimAttempt(platform.writer, silent, 'claimant', { holderLostAfterMs: null })).toBeNull();
    expect(await claimAttempt(platform.writer, silent, 'claimant', rule)).toMatchObject({
      task: { attempt: 2 },
      lostWorker: 'holder-silent',
    });
    expect(await claimAttempt(platform.writer, vanished, 'claimant', rule)).toMatchObject({ task: { attempt: 2 } });
    // Never from itself, however silent its row: its own attempt is running here.
    await registerInstance(platform.db, { id: 'claimant-itself', kind: 'worker', host: 'test', pid: 3 });
    const own = await heldBy('claimant-itself');
    await beat('claimant-itself', 60_000);
    expect(await claimAttempt(platform.writer, own, 'claimant-itself', rule)).toBeNull();
  });
});

// A task the database says a worker holds, which no run of that worker has: a previous process
// with the same worker id died holding it (the row's worker is "alive" again, so no claim and no
// sweep would end it), or an attempt ended without its final write and its hand-back. The worker
// audits itself: at start, and every so often after.
describe('tasks a worker holds but does not run', () => {
  it('are handed back by its audit: at start (and run again), and later while it runs', async () => {
    const atStart = await platform.service.create('default', { tool: 'quick_sum', arguments: {} });
    expect(await claimAttempt(platform.writer, atStart.id, 'worker-reused')).not.toBeNull();
    const worker = await platform.startWorker({ workerId: 'worker-reused', strayAuditIntervalMs: 100 });
    try {
      const first = await waitForTask(
        () => platform.service.get('default', atStart.id),
        (task) => task?.status === 'completed',
      );
      expect(first).toMatchObject({ attempt: 2, result: { content: [{ type: 'text', text: 'summed' }] } });

      // Later: a task left under this worker's id while it runs (as a failed hand-back leaves it),
      // quiet past the audit's bound.
      const later = await platform.service.create('default', { tool: 'quick_sum', arguments: {} });
      await sql`UPDATE pgboss.job SET state = 'cancelled' WHERE data->>'taskId' = ${later.id}`.execute(platform.db);
      await sql`UPDATE tasks SET attempt = 1, worker_id = 'worker-reused', started_at = now(),
                  heartbeat_at = now() - interval '1 minute'
                WHERE id = ${later.id}::uuid`.execute(platform.db);
      await waitForTask(
        () => platform.service.get('default', later.id),
        (task) => task !== null && task.status === 'working',
      );
      const released = await waitForTask(
        () =>
          sql<{ worker_id: string | null }>`SELECT worker_id FROM tasks WHERE id = ${later.id}::uuid`
            .execute(platform.db)
            .then(({ rows }) => rows[0]),
        (row) => row?.worker_id === null,
      );
      expect(released).toEqual({ worker_id: null });
    } finally {
      await worker.stop();
      platform.worker = null;
    }
  });
});
