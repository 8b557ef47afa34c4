import { claimAttempt, findTask, type TaskRecord } from '@taskgate/db';
import { defineTool } from '@taskgate/sdk';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { type Platform, startPlatform, waitForTask } from '../support/task-platform.ts';

const database = useTestDatabase();

const patient = defineTool({
  name: 'patient',
  description: 'checkpoints until a clock stops it',
  inputSchema: { type: 'object' },
  retry: 'safe',
  timeouts: { maxMs: 2_000 },
  async handler(_input, ctx) {
    for (;;) {
      await ctx.checkpoint();
      await ctx.sleep(5);
    }
  },
});

let platform: Platform;
beforeAll(async () => {
  platform = await startPlatform(database.url, { tools: [patient] as never });
});
afterAll(async () => {
  await platform.stop();
});

describe('the max clock of a later attempt', () => {
  it('runs on what is left of the task, and the timeout names the task’s whole limit', async () => {
    const task = await platform.service.create('acme', { tool: 'patient', arguments: {} });
    // Attempt 1 started 1.9 s ago on a worker that died; its job is still queued.
    await claimAttempt(platform.writer, task.id, 'worker-that-died');
    await sql`UPDATE tasks SET started_at = now() - interval '1900 milliseconds' WHERE id = ${task.id}::uuid`.execute(
      platform.db,
    );
    await platform.startWorker();
    const ended = await waitForTask(
      () => findTask(platform.db, 'acme', task.id),
      (current) => current?.status === 'failed',
    );
    const { attempt, statusMessage, error } = ended as TaskRecord;
    expect(attempt).toBe(2);
    expect(statusMessage).toBe('maximum timeout: the task ran for its limit of 2000 ms');
    expect(error).toEqual({
      code: -32001,
      message: 'maximum timeout: the task ran for its limit of 2000 ms',
      data: { clock: 'max', limitMs: 2_000 },
    });
  });
});
