import {
  claimAttempt,
  listOpenReconciliationItems,
  listTaskEvents,
  TaskAnnouncer,
  type TaskRecord,
} from '@taskgate/db';
import { defineTool, type RetryClass } from '@taskgate/sdk';
import { ToolRegistry } from '@taskgate/tools';
import { CancelWatcher, TaskRunner } from '@taskgate/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { type Platform, silentLogger, startPlatform, waitForTask } from '../support/task-platform.ts';

// The retry matrix, enforced by the worker when a task comes back after a lost attempt.
const database = useTestDatabase();
const ran: string[] = [];
const probe = (name: string, retry: RetryClass) =>
  defineTool<{ idempotencyKey?: string }>({
    name,
    description: `a ${retry} probe`,
    inputSchema: { type: 'object', properties: { idempotencyKey: { type: 'string' } } },
    retry,
    async handler(_input, ctx) {
      ran.push(`${name}#${ctx.attempt}`);
      return { content: [] };
    },
  });
/** Checkpoints every few ms until told to finish: a handler a draining worker can hand back. */
let finishLoops = false;
const loop = (name: string, retry: RetryClass) =>
  defineTool({
    name,
    description: `a ${retry} loop`,
    inputSchema: { type: 'object' },
    retry,
    async handler(_input, ctx) {
      ran.push(`${name}#${ctx.attempt}`);
      while (!finishLoops) {
        await ctx.checkpoint();
        await ctx.sleep(5);
      }
      return { content: [] };
    },
  });
const tools = [
  probe('safe_probe', 'safe'),
  probe('conditional_probe', 'conditional'),
  probe('unsafe_probe', 'unsafe'),
  loop('safe_loop', 'safe'),
  loop('unsafe_loop', 'unsafe'),
];
let platform: Platform;

beforeAll(async () => {
  // No live worker: the test plays the worker that died and the one that gets the re-delivery.
  platform = await startPlatform(database.url, { tools: tools as never });
});
afterAll(async () => {
  await platform.stop();
});

async function afterLostAttempt(tool: string, key?: string): Promise<TaskRecord> {
  const { task } = await platform.service.submit(
    'acme',
    { tool, arguments: {} },
    key === undefined ? {} : { idempotencyKey: key },
  );
  await claimAttempt(platform.writer, task.id, 'worker-that-died');
  const redelivered = await claimAttempt(platform.writer, task.id, 'next-worker');
  const watcher = new CancelWatcher({ db: platform.db, listener: null, pollIntervalMs: 60_000, logger: silentLogger });
  const runner = new TaskRunner({
    db: platform.db,
    announcer: new TaskAnnouncer(platform.db),
    tools: new ToolRegistry(tools as never),
    watcher,
    logger: silentLogger,
    checkpointReadIntervalMs: 250,
    progressWriteIntervalMs: 100,
  });
  await runner.run(redelivered);
  return platform.service.get('acme', task.id);
}

describe('a draining worker', () => {
  it('hands a retryable task back at its checkpoint, but lets an unsafe one use the grace period to finish', async () => {
    const worker = await platform.startWorker({ graceMs: 10_000, checkpointReadIntervalMs: 10_000 });
    const safe = await platform.service.create('acme', { tool: 'safe_loop', arguments: {} });
    const unsafe = await platform.service.create('acme', { tool: 'unsafe_loop', arguments: {} });
    await waitForTask(
      async () => ran,
      (entries) => entries.includes('safe_loop#1') && entries.includes('unsafe_loop#1'),
    );
    const stopping = worker.stop();
    // The safe task goes back to the queue at its next checkpoint...
    await waitForTask(
      () => listTaskEvents(platform.db, 'acme', safe.id),
      (events) => events.some((event) => event.type === 'attempt_released'),
    );
    // ...while the unsafe one keeps running (another worker would only refuse it), and finishes.
    expect((await platform.service.get('acme', unsafe.id)).status).toBe('working');
    finishLoops = true;
    await stopping;
    platform.worker = null;
    expect(await platform.service.get('acme', unsafe.id)).toMatchObject({ status: 'completed', attempt: 1 });
    expect(await platform.service.get('acme', safe.id)).toMatchObject({ status: 'working', attempt: 1 });
  });
});

describe('retry classes after a lost attempt', () => {
  it('runs a safe tool again', async () => {
    expect(await afterLostAttempt('safe_probe')).toMatchObject({ status: 'completed', attempt: 2 });
    expect(ran).toContain('safe_probe#2');
  });

  it('runs a conditional tool again only when it carries an idempotency key', async () => {
    expect(await afterLostAttempt('conditional_probe', 'k-1')).toMatchObject({ status: 'completed', attempt: 2 });
    const unkeyed = await afterLostAttempt('conditional_probe');
    expect(unkeyed).toMatchObject({ status: 'failed', attempt: 2 });
    expect(ran.filter((entry) => entry.startsWith('conditional_probe'))).toEqual(['conditional_probe#2']);
    const items = await listOpenReconciliationItems(platform.db, 'acme');
    expect(items.map((item) => item.taskId)).toContain(unkeyed.id);
  });

  it('never runs an unsafe tool again: its lost outcome becomes a reconciliation item', async () => {
    const task = await afterLostAttempt('unsafe_probe');
    expect(task).toMatchObject({ status: 'failed', attempt: 2 });
    expect(task.error).toMatchObject({
      message: expect.stringContaining('unsafe tool is never retried automatically'),
    });
    expect(ran.filter((entry) => entry.startsWith('unsafe_probe'))).toEqual([]);
    const items = await listOpenReconciliationItems(platform.db, 'acme');
    expect(items.find((item) => item.taskId === task.id)).toMatchObject({
      tool: 'unsafe_probe',
      reason: expect.stringContaining('attempt 1 was lost'),
    });
  });
});
