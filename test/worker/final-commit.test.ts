import { claimAttempt, findTask, listTaskEvents, type TaskRecord } from '@taskgate/db';
import { defineTool, type ToolResult } from '@taskgate/sdk';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { testClient } from '../support/pg-clients.ts';
import { type Barrier, barrier, type Platform, startPlatform, waitForTask } from '../support/task-platform.ts';

const database = useTestDatabase();
const TENANT = 'acme';
const handlerStarted = new Map<string, Barrier>();
const handlerRelease = new Map<string, Barrier>();
const lockHeld = new Map<string, Barrier>();
const lockRelease = new Map<string, Barrier>();
const get = (map: Map<string, Barrier>, key: string) => {
  if (!map.has(key)) map.set(key, barrier());
  return map.get(key) as Barrier;
};

/** Writes a "local effect" row inside the completion transaction via ctx.commit. */
const withEffect = defineTool<{ key: string }>({
  name: 'with_effect',
  description: 'records an effect row in the transaction that completes the task',
  inputSchema: { type: 'object', properties: { key: { type: 'string' } }, required: ['key'] },
  retry: 'safe',
  async handler({ key }, ctx) {
    get(handlerStarted, key).resolve();
    await get(handlerRelease, key).promise;
    return ctx.commit(async ({ db: trx }): Promise<ToolResult> => {
      await sql`INSERT INTO effect_probe (key) VALUES (${key})`.execute(trx);
      return { content: [{ type: 'text', text: `effect ${key}` }] };
    });
  },
});

let platform: Platform;
const taskKeys = new Map<string, string>();
beforeAll(async () => {
  const client = testClient({ connectionString: database.url });
  await client.connect();
  await client.query('CREATE TABLE effect_probe (key text PRIMARY KEY)');
  await client.end();
  platform = await startPlatform(database.url, { tools: [withEffect] as never });
  await platform.startWorker({
    hooks: {
      afterCompletionLock: async (taskId) => {
        const key = taskKeys.get(taskId);
        if (!key?.startsWith('hold-lock')) return;
        get(lockHeld, key).resolve();
        await get(lockRelease, key).promise;
      },
    },
  });
});
afterAll(async () => {
  await platform.stop();
});

const terminal = (task: TaskRecord) => ['completed', 'failed', 'cancelled'].includes(task.status);
async function effects(): Promise<string[]> {
  const { rows } = await sql<{ key: string }>`SELECT key FROM effect_probe ORDER BY key`.execute(platform.db);
  return rows.map((row) => row.key);
}
async function create(key: string): Promise<TaskRecord> {
  const task = await platform.service.create(TENANT, { tool: 'with_effect', arguments: { key } });
  taskKeys.set(task.id, key);
  return task;
}

describe('the final commit is the last checkpoint', () => {
  it('commits the local effect with the completion when no cancel came', async () => {
    const task = await create('plain');
    get(handlerRelease, 'plain').resolve();
    expect((await waitForTask(() => platform.service.get(TENANT, task.id), terminal)).status).toBe('completed');
    expect(await effects()).toContain('plain');
  });

  it('a cancel requested before the commit rolls the effect back and ends the task cancelled', async () => {
    const task = await create('cancelled-before-commit');
    await get(handlerStarted, 'cancelled-before-commit').promise;
    await platform.service.cancel(TENANT, task.id, 'changed my mind');
    get(handlerRelease, 'cancelled-before-commit').resolve();
    const done = await waitForTask(() => platform.service.get(TENANT, task.id), terminal);
    expect(done).toMatchObject({ status: 'cancelled', result: null });
    expect(await effects()).not.toContain('cancelled-before-commit');
  });

  it('a cancel that arrives while the completion holds the row waits, then finds the task completed', async () => {
    const key = 'hold-lock-1';
    const task = await create(key);
    get(handlerRelease, key).resolve();
    await get(lockHeld, key).promise;
    // The completion holds the row lock now; the cancel must queue behind it.
    const cancel = platform.service.cancel(TENANT, task.id, 'racing the commit');
    await waitForTask(
      async () => {
        const { rows } = await sql<{ waiting: number }>`
          SELECT count(*)::int AS waiting FROM pg_stat_activity
          WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%cancel_requested_at AS requested_before%'`.execute(
          platform.db,
        );
        return rows[0]?.waiting ?? 0;
      },
      (waiting) => waiting > 0,
    );
    get(lockRelease, key).resolve();
    const acknowledged = await cancel;
    expect(acknowledged).toMatchObject({ status: 'completed', cancelRequestedAt: null });
    expect(await effects()).toContain(key);
    const history = await listTaskEvents(platform.db, TENANT, task.id);
    expect(history.map((event) => event.type)).not.toContain('cancel_requested');
  });

  it('a claim that arrives while the completion holds the row waits, then finds nothing to run', async () => {
    const key = 'hold-lock-claim';
    const task = await create(key);
    get(handlerRelease, key).resolve();
    await get(lockHeld, key).promise;
    const claim = claimAttempt(platform.writer, task.id, 'newer-worker');
    get(lockRelease, key).resolve();
    expect(await claim).toBeNull();
    expect(await findTask(platform.db, TENANT, task.id)).toMatchObject({ status: 'completed', attempt: 1 });
    expect(await effects()).toContain(key);
  });

  it('an attempt that lost its task to a newer attempt cannot complete it (the write is fenced)', async () => {
    const key = 'fenced';
    const task = await create(key);
    await get(handlerStarted, key).promise;
    // Attempt 1 is presumed lost while its handler still runs; attempt 2 takes the task.
    expect(await claimAttempt(platform.writer, task.id, 'newer-worker')).toMatchObject({
      lostWorker: expect.any(String),
    });
    get(handlerRelease, key).resolve();
    await waitForTask(
      () => listTaskEvents(platform.db, TENANT, task.id),
      () => platform.worker?.runner.inFlight === 0,
    );
    expect(await findTask(platform.db, TENANT, task.id)).toMatchObject({
      status: 'working',
      attempt: 2,
      workerId: 'newer-worker',
    });
    expect(await effects()).not.toContain(key);
  });
});
