import { claimAttempt, listTaskEvents, TaskAnnouncer } from '@taskgate/db';
import { defineTool } from '@taskgate/sdk';
import { ToolRegistry } from '@taskgate/tools';
import { CancelWatcher, TaskRunner } from '@taskgate/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { type Platform, silentLogger, startPlatform } from '../support/task-platform.ts';

// Progress that arrives just as the max clock runs out is what finds the expiry. The worker then
// re-arms its deadline timer; the task must still fail at once by the max clock, not run on.
const database = useTestDatabase();

// The worker's clock, moved by the handler so the order is forced, not timed.
let offsetMs = 0;
const clock = () => Date.now() + offsetMs;

const lateReporter = defineTool({
  name: 'late_reporter',
  description: 'reports progress only after its max clock has run out, then waits a minute',
  inputSchema: { type: 'object' },
  retry: 'safe',
  timeouts: { idleMs: 500, maxMs: 2_000 },
  async handler(_input, ctx) {
    offsetMs = 10_000;
    ctx.progress(1);
    await ctx.sleep(60_000);
    return { content: [{ type: 'text', text: 'should have been stopped' }] };
  },
});

let platform: Platform;
beforeAll(async () => {
  platform = await startPlatform(database.url, { tools: [lateReporter] as never });
});
afterAll(async () => {
  await platform.stop();
});

describe('a clock that runs out as progress arrives', () => {
  it('ends the task failed by the max clock at once, although the progress call found the expiry first', async () => {
    const task = await platform.service.create('acme', { tool: 'late_reporter', arguments: {} });
    const claim = await claimAttempt(platform.writer, task.id, 'clock-test-worker');
    const watcher = new CancelWatcher({
      db: platform.db,
      listener: null,
      pollIntervalMs: 60_000,
      logger: silentLogger,
    });
    const runner = new TaskRunner({
      db: platform.db,
      announcer: new TaskAnnouncer(platform.db),
      tools: new ToolRegistry([lateReporter] as never),
      watcher,
      logger: silentLogger,
      checkpointReadIntervalMs: 250,
      progressWriteIntervalMs: 100,
      now: clock,
    });
    const began = Date.now();
    await runner.run(claim);
    // Well inside the handler's one-minute sleep: the deadline fired, the sleep was aborted.
    expect(Date.now() - began).toBeLessThan(5_000);
    // run() returns only once the timeout's terminal write has landed.
    const ended = await platform.service.get('acme', task.id);
    expect(ended.status).toBe('failed');
    expect(ended.error).toMatchObject({ data: { clock: 'max', limitMs: 2_000 } });
    const history = await listTaskEvents(platform.db, 'acme', task.id);
    expect(history.at(-1)).toMatchObject({ toStatus: 'failed', reason: 'timeout:max' });
  });
});
