import { claimAttempt, findTask, listTaskEvents, type TaskRecord } from '@taskgate/db';
import { defineTool } from '@taskgate/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { type Barrier, barrier, type Platform, startPlatform, waitForTask } from '../support/task-platform.ts';

const database = useTestDatabase();
const TENANT = 'acme';

/** Handlers in these tests announce that they started and wait to be let go: order, not timing. */
const started = new Map<string, Barrier>();
const release = new Map<string, Barrier>();
const gate = (key: string) => {
  if (!started.has(key)) started.set(key, barrier());
  if (!release.has(key)) release.set(key, barrier());
  return { started: started.get(key) as Barrier, release: release.get(key) as Barrier };
};

/** Ignores its signal on purpose: it returns a result even after a cancel was requested. */
const stubborn = defineTool<{ key: string }>({
  name: 'stubborn',
  description: 'waits for the test, then returns without looking at its signal',
  inputSchema: { type: 'object', properties: { key: { type: 'string' } }, required: ['key'] },
  retry: 'safe',
  async handler({ key }) {
    const { started: s, release: r } = gate(key);
    s.resolve();
    await r.promise;
    return { content: [{ type: 'text', text: `done ${key}` }] };
  },
});

/** Cooperative: stops at its checkpoints. */
const looping = defineTool<{ key: string }>({
  name: 'looping',
  description: 'checkpoints every few milliseconds until cancelled',
  inputSchema: { type: 'object', properties: { key: { type: 'string' } }, required: ['key'] },
  retry: 'safe',
  async handler({ key }, ctx) {
    gate(key).started.resolve();
    for (;;) {
      await ctx.checkpoint();
      await ctx.sleep(5);
    }
  },
});

let platform: Platform;
beforeAll(async () => {
  platform = await startPlatform(database.url, { tools: [stubborn, looping] as never });
  await platform.startWorker();
});
afterAll(async () => {
  await platform.stop();
});

const read = (id: string) => () => platform.service.get(TENANT, id);
const terminal = (task: TaskRecord) => ['completed', 'failed', 'cancelled'].includes(task.status);
const eventTypes = async (id: string) =>
  (await listTaskEvents(platform.db, TENANT, id)).map((e) => `${e.type}${e.toStatus ? `:${e.toStatus}` : ''}`);

describe('a task from creation to its one terminal state', () => {
  it('runs greet to completed and records its history', async () => {
    const created = await platform.service.create(TENANT, { tool: 'greet', arguments: { name: 'Ada' } });
    expect(created).toMatchObject({ status: 'working', tool: 'greet', attempt: 0, tenantId: TENANT });
    const done = await waitForTask(read(created.id), terminal);
    expect(done).toMatchObject({ status: 'completed', attempt: 1, error: null });
    expect(done.result).toEqual({
      content: [{ type: 'text', text: 'Hello, Ada!' }],
      structuredContent: { greeting: 'Hello, Ada!' },
    });
    expect(done.expiresAt?.getTime()).toBe((done.finishedAt as Date).getTime() + 3_600_000);
    expect(await eventTypes(created.id)).toEqual(['created:working', 'attempt_started', 'status_changed:completed']);
  });

  it('completes a tool error as a result with isError, and fails a protocol error', async () => {
    const toolError = await platform.service.create(TENANT, { tool: 'failing_job', arguments: {} });
    const protocolError = await platform.service.create(TENANT, { tool: 'protocol_error_job', arguments: {} });
    expect(await waitForTask(read(toolError.id), terminal)).toMatchObject({
      status: 'completed',
      result: { content: [{ type: 'text', text: 'failing_job failed on purpose' }], isError: true },
    });
    expect(await waitForTask(read(protocolError.id), terminal)).toMatchObject({
      status: 'failed',
      result: null,
      error: { code: -32603, message: 'protocol_error_job failed on purpose', data: { tool: 'protocol_error_job' } },
    });
  });

  it('acknowledges a cancel without ending the task; the task ends cancelled once its handler unwinds', async () => {
    const task = await platform.service.create(TENANT, { tool: 'looping', arguments: { key: 'ack' } });
    await gate('ack').started.promise;
    const acknowledged = await platform.service.cancel(TENANT, task.id, 'user closed the dialog');
    expect(acknowledged.status).toBe('working');
    expect(acknowledged.cancelRequestedAt).toBeInstanceOf(Date);
    expect(acknowledged.cancelReason).toBe('user closed the dialog');
    const done = await waitForTask(read(task.id), terminal);
    expect(done.status).toBe('cancelled');
    const history = await listTaskEvents(platform.db, TENANT, task.id);
    expect(history.map((e) => e.type)).toEqual([
      'created',
      'attempt_started',
      'cancel_requested',
      'cancel_observed',
      'status_changed',
    ]);
    expect(history[2]?.reason).toBe('user closed the dialog');
  });

  it('cancel first, complete second: the task ends cancelled and the result is discarded', async () => {
    const task = await platform.service.create(TENANT, { tool: 'stubborn', arguments: { key: 'cancel-first' } });
    await gate('cancel-first').started.promise;
    expect((await platform.service.cancel(TENANT, task.id, null)).status).toBe('working');
    gate('cancel-first').release.resolve();
    const done = await waitForTask(read(task.id), terminal);
    expect(done).toMatchObject({ status: 'cancelled', result: null });
    const observed = (await listTaskEvents(platform.db, TENANT, task.id)).find((e) => e.type === 'cancel_observed');
    expect(observed).toBeDefined();
  });

  it('complete first, cancel second: the late cancel is acknowledged and changes nothing', async () => {
    const task = await platform.service.create(TENANT, { tool: 'stubborn', arguments: { key: 'complete-first' } });
    await gate('complete-first').started.promise;
    gate('complete-first').release.resolve();
    const done = await waitForTask(read(task.id), terminal);
    expect(done.status).toBe('completed');
    const late = await platform.service.cancel(TENANT, task.id, 'too late');
    expect(late).toMatchObject({ status: 'completed', cancelRequestedAt: null, result: done.result });
    expect(await eventTypes(task.id)).toEqual(['created:working', 'attempt_started', 'status_changed:completed']);
  });

  it('cancelling an unknown id or another tenant’s task is not found', async () => {
    const task = await platform.service.create(TENANT, { tool: 'greet', arguments: { name: 'Grace' } });
    await expect(platform.service.cancel('globex', task.id, null)).rejects.toMatchObject({ code: 'TG_TASK_NOT_FOUND' });
    await expect(platform.service.cancel(TENANT, '00000000-0000-4000-8000-000000000000', null)).rejects.toMatchObject({
      code: 'TG_TASK_NOT_FOUND',
    });
    await expect(platform.service.get(TENANT, 'not-a-uuid')).rejects.toMatchObject({ code: 'TG_TASK_NOT_FOUND' });
  });

  it('runs a task again after its previous attempt was lost, recording the lost attempt', async () => {
    await platform.worker?.stop();
    platform.worker = null;
    const task = await platform.service.create(TENANT, { tool: 'greet', arguments: { name: 'Lin' } });
    // A worker that claimed the task and vanished without a trace.
    expect(await claimAttempt(platform.writer, task.id, 'worker-that-died')).not.toBeNull();
    await platform.startWorker();
    const done = await waitForTask(read(task.id), terminal);
    expect(done).toMatchObject({ status: 'completed', attempt: 2 });
    const history = await listTaskEvents(platform.db, TENANT, task.id);
    expect(history.map((e) => [e.type, e.attempt])).toEqual([
      ['created', null],
      ['attempt_started', 1],
      ['attempt_lost', 1],
      ['attempt_started', 2],
      ['status_changed', 2],
    ]);
    expect(history[2]?.data).toEqual({ worker: 'worker-that-died' });
    expect(await findTask(platform.db, TENANT, task.id)).toMatchObject({ workerId: null });
  });
});
