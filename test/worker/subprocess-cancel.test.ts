import { randomInt } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { TaskEventsHub } from '@taskgate/api';
import { defineTool } from '@taskgate/sdk';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { perRequestMessage } from '../support/mcp-http.ts';
import { countOf, type Scrape, sampleValue, scrape, scrapeUntil, upperBoundOf } from '../support/metrics.ts';
import { liveProcessesWith } from '../support/process-tree.ts';
import { connectStdio, testCore } from '../support/stdio-client.ts';
import { type Platform, serveApi, silentLogger, startPlatform, waitForTask } from '../support/task-platform.ts';

// sleep_subprocess (examples/demo) runs a shell with two sleeping children through ctx.spawn().
// Whatever stops its task — a cancel over REST or tasks/cancel, a stdio notifications/cancelled,
// a closed HTTP stream, a clock, the worker handing the task back at shutdown — must end all
// three processes: checked in /proc once the task has ended. Each call sleeps a unique number of
// seconds, which is how /proc tells its processes from everything else on the machine.
const database = useTestDatabase();
let platform: Platform;
let hub: TaskEventsHub;
let api: Awaited<ReturnType<typeof serveApi>>;

/** The same tree under a 600 ms max clock. */
const clocked = defineTool<{ seconds: number }>({
  name: 'sleep_tree_clocked',
  description: 'a process tree that outlives its max clock',
  inputSchema: { type: 'object', properties: { seconds: { type: 'number' } }, required: ['seconds'] },
  retry: 'safe',
  timeouts: { maxMs: 600 },
  subprocessGraceMs: 1_000,
  async handler({ seconds }, ctx) {
    await ctx.spawn('sh', ['-c', 'sleep "$1" & sleep "$1" & wait', 'tree', String(seconds)]);
    return { content: [{ type: 'text', text: 'slept' }] };
  },
});

/** The same tree under a 500 ms idle clock, with no progress: the idle clock ends it. */
const idle = defineTool<{ seconds: number }>({
  name: 'sleep_tree_idle',
  description: 'a process tree that reports no progress',
  inputSchema: { type: 'object', properties: { seconds: { type: 'number' } }, required: ['seconds'] },
  retry: 'safe',
  timeouts: { idleMs: 500 },
  subprocessGraceMs: 1_000,
  async handler({ seconds }, ctx) {
    await ctx.spawn('sh', ['-c', 'sleep "$1" & sleep "$1" & wait', 'tree', String(seconds)]);
    return { content: [{ type: 'text', text: 'slept' }] };
  },
});

/** Mistakes a handler makes: a spawn it never awaits, and one left running when a sibling fails. */
const careless = defineTool<{ seconds: number; mistake: 'unawaited' | 'sibling-failed' }>({
  name: 'careless_spawn',
  description: 'returns or fails while a tree it started still runs',
  inputSchema: {
    type: 'object',
    properties: { seconds: { type: 'number' }, mistake: { type: 'string' } },
    required: ['seconds', 'mistake'],
  },
  retry: 'safe',
  subprocessGraceMs: 60_000,
  async handler({ seconds, mistake }, ctx) {
    const tree = ctx.spawn('sh', ['-c', 'sleep "$1" & sleep "$1" & wait', 'tree', String(seconds)]);
    while (treeOf(seconds).length < 3) await new Promise((resolve) => setTimeout(resolve, 10));
    if (mistake === 'sibling-failed') await Promise.all([tree, ctx.spawn('/no/such/tool')]);
    return { content: [{ type: 'text', text: 'returned' }] };
  },
});
/** A tree that ignores SIGTERM, with a minute's grace: a stopping worker must not wait for it. */
const stubborn = defineTool<{ seconds: number }>({
  name: 'stubborn_tree',
  description: 'a process tree that ignores SIGTERM',
  inputSchema: { type: 'object', properties: { seconds: { type: 'number' } }, required: ['seconds'] },
  retry: 'safe',
  subprocessGraceMs: 60_000,
  async handler({ seconds }, ctx) {
    await ctx.spawn('sh', ['-c', 'trap "" TERM; sleep "$1" & sleep "$1" & wait', 'tree', String(seconds)]);
    return { content: [{ type: 'text', text: 'slept' }] };
  },
});

/** A tree that ignores SIGTERM, with a short grace: it outlives its grace, and is SIGKILLed then. */
const stubbornShort = defineTool<{ seconds: number }>({
  ...stubborn,
  name: 'stubborn_tree_short',
  subprocessGraceMs: 300,
} as never);
/** A handler that never looks at its signal: a cancel cannot stop it, only its own end. */
let releaseDeaf = (): void => {};
const deaf = defineTool({
  name: 'deaf_handler',
  description: 'ignores its signal until the test lets it go',
  inputSchema: { type: 'object' },
  retry: 'safe',
  subprocessGraceMs: 200,
  async handler() {
    await new Promise<void>((resolve) => {
      releaseDeaf = resolve;
    });
    return { content: [{ type: 'text', text: 'done at last' }] };
  },
});

beforeAll(async () => {
  platform = await startPlatform(database.url, { tools: [clocked, idle, careless, stubborn, stubbornShort, deaf] });
  await platform.startWorker();
  hub = new TaskEventsHub({ connectionString: database.url, listen: true, logger: silentLogger });
  await hub.start();
  api = await serveApi(platform, database.url);
});
afterAll(async () => {
  await api?.close();
  await hub?.stop();
  await platform?.stop();
});

function uniqueSeconds(): number {
  return randomInt(100, 599) + randomInt(1, 9_999) / 10_000;
}

/** Resolves once the shell and both sleeps run. */
async function untilTreeRuns(seconds: number): Promise<void> {
  await waitForTask(
    async () => treeOf(seconds),
    (tree) => tree.length === 3,
  );
}

async function taskOf(tool: string, seconds: number) {
  return waitForTask(
    async () => {
      const { rows } = await sql<{ id: string; status: string; status_message: string | null }>`
        SELECT id, status, status_message FROM tasks
        WHERE tool = ${tool} AND (arguments->>'seconds')::numeric = ${seconds}`.execute(platform.db);
      return rows[0];
    },
    (row) => row !== undefined,
  ) as Promise<{ id: string; status: string }>;
}

async function untilEnded(id: string) {
  return waitForTask(
    () => platform.service.get('default', id),
    (task) => task.status !== 'working',
  );
}

/**
 * After a stop: the cancel-latency histogram got one sample for this tool and signal, within the
 * tool's grace period (plus what the API and the worker take), and nothing is left orphaned.
 */
async function expectStopMeasured(before: Scrape, tool: string, signal: string, withinSeconds: number) {
  const labels = { tool, signal };
  const after = await scrapeUntil(
    `a ${signal} sample for ${tool}`,
    (current) =>
      countOf(current, 'taskgate_cancel_latency_seconds', labels) >
      countOf(before, 'taskgate_cancel_latency_seconds', labels),
  );
  expect(
    countOf(after, 'taskgate_cancel_latency_seconds', labels) -
      countOf(before, 'taskgate_cancel_latency_seconds', labels),
  ).toBe(1);
  expect(upperBoundOf(after, 'taskgate_cancel_latency_seconds', labels)).toBeLessThanOrEqual(withinSeconds);
  expect(sampleValue(after, 'taskgate_orphaned_work')).toBe(0);
  expect(sampleValue(after, 'taskgate_orphaned_work_total')).toBe(sampleValue(before, 'taskgate_orphaned_work_total'));
}

describe('a cancelled sleep_subprocess leaves no process of its tree', () => {
  it('a REST cancel', async () => {
    const before = await scrape();
    const seconds = uniqueSeconds();
    const { task } = await platform.service.submit('default', { tool: 'sleep_subprocess', arguments: { seconds } });
    await untilTreeRuns(seconds);
    const cancel = await api.app.inject({ method: 'POST', url: `/v1/tasks/${task.id}/cancel`, payload: {} });
    expect(cancel.statusCode).toBe(202);
    expect(await untilEnded(task.id)).toMatchObject({ status: 'cancelled' });
    expect(treeOf(seconds)).toEqual([]);
    await expectStopMeasured(before, 'sleep_subprocess', 'rest_cancel', 5);
  });

  it('a tasks/cancel', async () => {
    const before = await scrape();
    const seconds = uniqueSeconds();
    const { task } = await platform.service.submit('default', { tool: 'sleep_subprocess', arguments: { seconds } });
    await untilTreeRuns(seconds);
    const { headers, body } = perRequestMessage(
      'tasks/cancel',
      { taskId: task.id },
      { capabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } } },
    );
    const cancel = await api.app.inject({ method: 'POST', url: '/mcp', headers, payload: body });
    expect({ status: cancel.statusCode, body: cancel.json() }).toMatchObject({ status: 200, body: { result: {} } });
    expect(await untilEnded(task.id)).toMatchObject({ status: 'cancelled' });
    expect(treeOf(seconds)).toEqual([]);
    await expectStopMeasured(before, 'sleep_subprocess', 'tasks_cancel', 5);
  });

  it('a 2025-11-25 tasks/cancel, which ends the task at once: the latency runs to the handler’s stop', async () => {
    const before = await scrape();
    const seconds = uniqueSeconds();
    const { task } = await platform.service.submit('default', { tool: 'sleep_subprocess', arguments: { seconds } });
    await untilTreeRuns(seconds);
    const { cancelled } = await platform.service.cancelNow('default', task.id, 'cancelled with tasks/cancel');
    expect(cancelled).toBe(true);
    await waitForTask(
      async () => treeOf(seconds),
      (tree) => tree.length === 0,
    );
    await expectStopMeasured(before, 'sleep_subprocess', 'tasks_cancel', 5);
    // Not the 0 s between the request and the task's end, which were one statement.
    const labels = { tool: 'sleep_subprocess', signal: 'tasks_cancel' };
    const after = await scrape();
    const added =
      sampleValue(after, 'taskgate_cancel_latency_seconds_sum', labels) -
      sampleValue(before, 'taskgate_cancel_latency_seconds_sum', labels);
    expect(added).toBeGreaterThan(0.002);
  });

  it('a stdio notifications/cancelled', async () => {
    const before = await scrape();
    const seconds = uniqueSeconds();
    const stdio = connectStdio(testCore(platform, hub));
    stdio.send({
      jsonrpc: '2.0',
      id: 'tree',
      method: 'tools/call',
      params: {
        name: 'sleep_subprocess',
        arguments: { seconds },
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientCapabilities': {},
        },
      },
    });
    await untilTreeRuns(seconds);
    stdio.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'tree' } });
    const row = await taskOf('sleep_subprocess', seconds);
    expect(await untilEnded(row.id)).toMatchObject({ status: 'cancelled' });
    expect(treeOf(seconds)).toEqual([]);
    await expectStopMeasured(before, 'sleep_subprocess', 'notification', 5);
    stdio.input.end();
    await stdio.server.closed;
  });

  it('a closed HTTP stream', async () => {
    const before = await scrape();
    const seconds = uniqueSeconds();
    const { headers, body } = perRequestMessage('tools/call', { name: 'sleep_subprocess', arguments: { seconds } });
    const request = http.request({
      host: '127.0.0.1',
      port: (api.app.server.address() as AddressInfo).port,
      path: '/mcp',
      method: 'POST',
      headers: { ...headers, 'content-length': Buffer.byteLength(body) },
    });
    request.on('error', () => {});
    request.end(body);
    await untilTreeRuns(seconds);
    request.destroy();
    const row = await taskOf('sleep_subprocess', seconds);
    expect(await untilEnded(row.id)).toMatchObject({ status: 'cancelled' });
    expect(treeOf(seconds)).toEqual([]);
    await expectStopMeasured(before, 'sleep_subprocess', 'stream_close', 5);
  });

  it('its max clock', async () => {
    const before = await scrape();
    const seconds = uniqueSeconds();
    const { task } = await platform.service.submit('default', { tool: 'sleep_tree_clocked', arguments: { seconds } });
    await untilTreeRuns(seconds);
    expect(await untilEnded(task.id)).toMatchObject({
      status: 'failed',
      statusMessage: expect.stringContaining('max'),
    });
    await expectStopMeasured(before, 'sleep_tree_clocked', 'max_clock', 1);
    expect(treeOf(seconds)).toEqual([]);
  });

  it('its idle clock', async () => {
    const before = await scrape();
    const seconds = uniqueSeconds();
    const { task } = await platform.service.submit('default', { tool: 'sleep_tree_idle', arguments: { seconds } });
    await untilTreeRuns(seconds);
    expect(await untilEnded(task.id)).toMatchObject({
      status: 'failed',
      statusMessage: expect.stringContaining('idle'),
    });
    await expectStopMeasured(before, 'sleep_tree_idle', 'idle_clock', 1);
    expect(treeOf(seconds)).toEqual([]);
  });

  it('counts a tree that outlives its grace period as orphaned until its SIGKILL ends it', async () => {
    const before = await scrape();
    const seconds = uniqueSeconds();
    const { task } = await platform.service.submit('default', { tool: 'stubborn_tree_short', arguments: { seconds } });
    await untilTreeRuns(seconds);
    await api.app.inject({ method: 'POST', url: `/v1/tasks/${task.id}/cancel`, payload: {} });
    expect(await untilEnded(task.id)).toMatchObject({ status: 'cancelled' });
    expect(treeOf(seconds)).toEqual([]);
    // The latency is read from the row once the run is over: wait for its sample.
    const latency = { tool: 'stubborn_tree_short', signal: 'rest_cancel' };
    const after = await scrapeUntil(
      'the stubborn tree’s cancel sample',
      (current) =>
        countOf(current, 'taskgate_cancel_latency_seconds', latency) >
        countOf(before, 'taskgate_cancel_latency_seconds', latency),
    );
    const labels = { kind: 'subprocess', tool: 'stubborn_tree_short' };
    expect(
      sampleValue(after, 'taskgate_orphaned_work_total', labels) -
        sampleValue(before, 'taskgate_orphaned_work_total', labels),
    ).toBe(1);
    expect(sampleValue(after, 'taskgate_orphaned_work', labels)).toBe(0);
    // Its grace (300 ms), then the SIGKILL: the sample says so.
    expect(upperBoundOf(after, 'taskgate_cancel_latency_seconds', latency)).toBeLessThanOrEqual(2.5);
  });

  it('counts a handler that ignores its signal as orphaned while it runs on', async () => {
    const labels = { kind: 'handler', tool: 'deaf_handler' };
    const { task } = await platform.service.submit('default', { tool: 'deaf_handler', arguments: {} });
    await waitForTask(
      () => platform.service.get('default', task.id),
      (current) => current.attempt === 1,
    );
    await api.app.inject({ method: 'POST', url: `/v1/tasks/${task.id}/cancel`, payload: {} });
    // Its 200 ms grace passes with the handler still running: orphaned work.
    const orphaned = await scrapeUntil(
      'the handler orphaned',
      (current) => sampleValue(current, 'taskgate_orphaned_work', labels) === 1,
    );
    expect(sampleValue(orphaned, 'taskgate_orphaned_work_total', labels)).toBe(1);
    expect((await platform.service.get('default', task.id)).status).toBe('working');
    releaseDeaf();
    // It returns at last; the final commit finds the cancel, and the gauge comes back to 0.
    expect(await untilEnded(task.id)).toMatchObject({ status: 'cancelled' });
    const after = await scrapeUntil(
      'the orphan gone',
      (current) => sampleValue(current, 'taskgate_orphaned_work', labels) === 0,
    );
    expect(sampleValue(after, 'taskgate_orphaned_work_total', labels)).toBe(1);
  });

  for (const mistake of ['unawaited', 'sibling-failed'] as const) {
    it(`the handler ending with the tree still running (${mistake})`, async () => {
      const seconds = uniqueSeconds();
      const { task } = await platform.service.submit('default', {
        tool: 'careless_spawn',
        arguments: { seconds, mistake },
      });
      const ended = await untilEnded(task.id);
      expect(ended.status).toBe(mistake === 'unawaited' ? 'completed' : 'failed');
      // Stopped with the run (SIGTERM: sleep dies of it), not when the worker exits.
      await waitForTask(
        async () => treeOf(seconds),
        (tree) => tree.length === 0,
        5_000,
      );
    });
  }

  it('the worker handing the task back at shutdown (after its grace period)', async () => {
    const before = await scrape();
    const seconds = uniqueSeconds();
    const { task } = await platform.service.submit('default', { tool: 'sleep_subprocess', arguments: { seconds } });
    await untilTreeRuns(seconds);
    await platform.worker?.stop();
    platform.worker = null;
    expect(treeOf(seconds)).toEqual([]);
    // Handed back, not ended: another worker runs it again.
    expect((await platform.service.get('default', task.id)).status).toBe('working');
    await expectStopMeasured(before, 'sleep_subprocess', 'shutdown', 10);
  });

  it('a stopping worker does not wait out a tree’s own grace: it SIGKILLs it before it returns', async () => {
    await platform.startWorker();
    const seconds = uniqueSeconds();
    await platform.service.submit('default', { tool: 'stubborn_tree', arguments: { seconds } });
    await untilTreeRuns(seconds);
    const started = Date.now();
    await platform.worker?.stop();
    platform.worker = null;
    // Its 1 s grace, 1 s for the released handler, then the kill: far below the tree's 60 s.
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(treeOf(seconds)).toEqual([]);
  });
});

/** The live processes of a call's tree: the shell and the sleeps that carry `seconds`. */
function treeOf(seconds: number): string[] {
  return liveProcessesWith(String(seconds));
}
