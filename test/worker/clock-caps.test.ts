import { cappedClocks } from '@taskgate/api';
import type { TaskRecord } from '@taskgate/db';
import { defineTool } from '@taskgate/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { type Platform, startPlatform, waitForTask } from '../support/task-platform.ts';

// The server's ceiling on tools' clocks (TASKGATE_MAX_CALL_MS, TASKGATE_MAX_IDLE_MS).
const database = useTestDatabase();
const sleeper = defineTool({
  name: 'sleeper',
  description: 'sleeps for a long time and declares no clocks of its own',
  inputSchema: { type: 'object' },
  retry: 'safe',
  async handler(_input, ctx) {
    await ctx.sleep(30_000);
    return { content: [] };
  },
});
let platform: Platform;
beforeAll(async () => {
  platform = await startPlatform(database.url, { tools: [sleeper] as never, service: { clockCaps: { maxMs: 300 } } });
  await platform.startWorker();
});
afterAll(async () => {
  await platform.stop();
});

describe('clock caps', () => {
  it('give a tool without a max clock the server ceiling, so the call ends', async () => {
    const task = await platform.service.create('acme', { tool: 'sleeper', arguments: {} });
    expect(task).toMatchObject({ maxTimeoutMs: 300, idleTimeoutMs: null });
    const ended = await waitForTask(
      () => platform.service.get('acme', task.id),
      (current: TaskRecord) => current.status !== 'working',
    );
    expect(ended).toMatchObject({ status: 'failed', error: { data: { clock: 'max', limitMs: 300 } } });
  });

  it('keep the smaller of the tool clock and the ceiling', () => {
    const tool = defineTool({
      name: 't',
      description: 't',
      inputSchema: { type: 'object' },
      retry: 'safe',
      timeouts: { idleMs: 5_000, maxMs: 1_000 },
      handler: async () => ({ content: [] }),
    });
    expect(cappedClocks(tool, { idleMs: 2_000, maxMs: 60_000 })).toEqual({ idleTimeoutMs: 2_000, maxTimeoutMs: 1_000 });
    expect(cappedClocks(tool, undefined)).toEqual({ idleTimeoutMs: 5_000, maxTimeoutMs: 1_000 });
    expect(cappedClocks({ ...tool, timeouts: {} }, { maxMs: 9 })).toEqual({ idleTimeoutMs: null, maxTimeoutMs: 9 });
  });
});
