import { toolQueue } from '@taskgate/db';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { type Platform, startPlatform } from '../support/task-platform.ts';

const database = useTestDatabase();
let platform: Platform;
let failAfterEnqueue = false;

beforeAll(async () => {
  platform = await startPlatform(database.url, {
    service: {
      afterEnqueue: async () => {
        if (failAfterEnqueue) throw new Error('the process died right after the job was written');
      },
    },
  });
});
afterAll(async () => {
  await platform.stop();
});

async function counts(): Promise<{ tasks: number; jobs: number; events: number }> {
  const { rows } = await sql<{ tasks: number; jobs: number; events: number }>`
    SELECT (SELECT count(*)::int FROM tasks) AS tasks,
           (SELECT count(*)::int FROM pgboss.job WHERE starts_with(name, 'taskgate.tool.')) AS jobs,
           (SELECT count(*)::int FROM task_events) AS events`.execute(platform.db);
  return rows[0] as { tasks: number; jobs: number; events: number };
}

describe('creating a task', () => {
  it("writes the task row, its created event and its job in its tool's queue together, with the job id = the task id", async () => {
    const before = await counts();
    const task = await platform.service.create('acme', { tool: 'greet', arguments: { name: 'Ada' } });
    expect(await counts()).toEqual({ tasks: before.tasks + 1, jobs: before.jobs + 1, events: before.events + 1 });
    const job = await platform.boss.findJobs(toolQueue('greet'), { id: task.id });
    expect(job[0]?.data).toEqual({ taskId: task.id, tenantId: 'acme' });
    // The version it was accepted under, for the worker's skew check.
    expect(task.toolFingerprint).toBe(platform.tools.fingerprint('greet'));
    expect(task.toolFingerprint).toMatch(/^[0-9a-f]{64}$/);
  });

  it('a failure after the insert and the enqueue leaves neither the task nor the job', async () => {
    const before = await counts();
    failAfterEnqueue = true;
    try {
      await expect(platform.service.create('acme', { tool: 'greet', arguments: { name: 'Lost' } })).rejects.toThrow(
        'the process died right after the job was written',
      );
    } finally {
      failAfterEnqueue = false;
    }
    expect(await counts()).toEqual(before);
  });

  it('refuses an unknown tool and creates nothing', async () => {
    const before = await counts();
    await expect(platform.service.create('acme', { tool: 'launch_rockets', arguments: {} })).rejects.toMatchObject({
      code: 'TG_TOOL_UNKNOWN',
      message: 'there is no tool named "launch_rockets"',
    });
    expect(await counts()).toEqual(before);
  });

  it('refuses arguments that fail the tool’s input schema and creates nothing', async () => {
    const before = await counts();
    await expect(
      platform.service.create('acme', { tool: 'slow_compute', arguments: { seconds: -1, extra: true } }),
    ).rejects.toMatchObject({
      code: 'TG_TOOL_ARGUMENTS_INVALID',
      details: {
        errors: [
          { path: '/extra', message: 'must NOT have additional properties' },
          { path: '/seconds', message: 'must be >= 0' },
        ],
      },
    });
    await expect(platform.service.create('acme', { tool: 'greet', arguments: {} })).rejects.toMatchObject({
      details: { errors: [{ path: '/name', message: "must have required property 'name'" }] },
    });
    expect(await counts()).toEqual(before);
  });
});
