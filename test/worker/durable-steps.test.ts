import { readSteps, recordStep, type TaskRecord } from '@taskgate/db';
import { defineTool } from '@taskgate/sdk';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { barrier, type Platform, startPlatform, waitForTask } from '../support/task-platform.ts';

// ctx.step: a multi-step handler resumes after its last recorded step when its task is re-delivered.
const database = useTestDatabase();
const runs = { one: 0, two: 0, three: 0 };
let stepTwoEntered = barrier();
let stepTwoGate = barrier();

const threeSteps = defineTool<{ order: string }>({
  name: 'three_steps',
  description: 'three durable steps with external effects',
  inputSchema: { type: 'object', properties: { order: { type: 'string' } }, required: ['order'] },
  retry: 'safe',
  async handler({ order }, ctx) {
    const paid = await ctx.step('charge card', async () => {
      runs.one += 1;
      return { paymentId: `pay-${order}-${runs.one}` };
    });
    const shipped = await ctx.step('ship', async () => {
      runs.two += 1;
      stepTwoEntered.resolve();
      // An external call that honours cancellation: it stops when the attempt is taken away.
      await Promise.race([
        stepTwoGate.promise,
        new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason))),
      ]);
      return { shipmentId: `ship-${order}-${runs.two}` };
    });
    const mailed = await ctx.step('mail receipt', async () => {
      runs.three += 1;
      return { mailed: true };
    });
    return { content: [], structuredContent: { ...paid, ...shipped, ...mailed } };
  },
});

let platform: Platform;
beforeAll(async () => {
  platform = await startPlatform(database.url, { tools: [threeSteps] as never });
  await platform.startWorker();
});
afterAll(async () => {
  await platform.stop();
});

describe('ctx.step', () => {
  it('resumes a re-delivered task after its last recorded step instead of repeating it', async () => {
    const task = await platform.service.create('acme', { tool: 'three_steps', arguments: { order: 'o1' } });
    await stepTwoEntered.promise;
    // Attempt 1 is taken away mid-step (what a worker death or a forced release looks like to it);
    // pg-boss re-delivers the job and attempt 2 starts.
    platform.worker?.runner.releaseAll('simulated loss of the attempt');
    await waitForTask(
      () => platform.service.get('acme', task.id),
      (current: TaskRecord) => current.attempt === 2,
    );
    stepTwoGate.resolve();
    const done = await waitForTask(
      () => platform.service.get('acme', task.id),
      (current: TaskRecord) => current.status === 'completed',
    );

    // The card was charged once; the interrupted step ran again; the last ran once.
    expect(runs).toEqual({ one: 1, two: 2, three: 1 });
    expect(done.result).toMatchObject({
      structuredContent: { paymentId: 'pay-o1-1', shipmentId: 'ship-o1-2', mailed: true },
    });
    const { rows } = await sql<{ name: string; attempt: number }>`
      SELECT name, attempt FROM task_steps WHERE task_id = ${task.id} ORDER BY created_at`.execute(platform.db);
    expect(rows).toEqual([
      { name: 'charge card', attempt: 1 },
      { name: 'ship', attempt: 2 },
      { name: 'mail receipt', attempt: 2 },
    ]);
  });

  it('refuses a step record from an attempt that no longer holds the task', async () => {
    stepTwoEntered = barrier();
    stepTwoGate = barrier();
    stepTwoGate.resolve();
    const task = await platform.service.create('acme', { tool: 'three_steps', arguments: { order: 'o2' } });
    await waitForTask(
      () => platform.service.get('acme', task.id),
      (current: TaskRecord) => current.status === 'completed',
    );
    // Attempt 0 never held it, and a finished task takes no more steps.
    expect(await recordStep(platform.db, { taskId: task.id, attempt: 0, name: 'late', result: 1 })).toBe(false);
    expect(await recordStep(platform.db, { taskId: task.id, attempt: 1, name: 'late', result: 1 })).toBe(false);
    expect([...(await readSteps(platform.db, task.id)).keys()].sort()).toEqual(['charge card', 'mail receipt', 'ship']);
  });
});
