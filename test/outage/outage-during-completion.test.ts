import { TaskEventsHub } from '@taskgate/api';
import { listReconciliationItems, loadMigrations, MigrationRunner, type TaskRecord } from '@taskgate/db';
import { defineTool } from '@taskgate/sdk';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresCluster } from '../support/postgres-cluster.ts';
import { connectStdio, testCore } from '../support/stdio-client.ts';
import {
  type Barrier,
  barrier,
  type Platform,
  silentLogger,
  startPlatform,
  waitForTask,
} from '../support/task-platform.ts';

// The campaign's repro, with the order forced: six tasks report progress to 29 of 30 and wait at
// their last step; Postgres is stopped at once (-m immediate, as on a crash); the handlers then
// report 30/30 and return, so every completion and every last progress write meets the outage.
// Both clocks run out while Postgres is down. Once it is back, all six must be completed, showing
// 30/30, with no reconciliation item for their irreversible steps; the MCP caller that waited on
// one of them (a request-mode task) gets its result, not an error.
const IDLE_MS = 2_000;
const MAX_MS = 6_000;
const TASKS = 6;

let server: PostgresCluster;
let platform: Platform;
let hub: TaskEventsHub;
const atLastStep = new Map<string, Barrier>();
const finish = barrier();

const steady = defineTool<{ label: string }>({
  name: 'steady_compute',
  description: 'counts to 29 of 30, waits for the test, then reports 30 of 30 and returns',
  inputSchema: { type: 'object', properties: { label: { type: 'string' } }, required: ['label'] },
  retry: 'safe',
  timeouts: { idleMs: IDLE_MS, maxMs: MAX_MS },
  async handler({ label }, ctx) {
    await ctx.step('charge', async () => ({ charged: label }), { irreversible: true });
    for (let step = 1; step <= 29; step++) ctx.progress(step, 30);
    atLastStep.get(label)?.resolve();
    // Useful work goes on while the test stops Postgres (fractions of the last step): the idle
    // clock must not run out before the handler returns.
    let part = 29;
    while (!(await Promise.race([finish.promise.then(() => true), ctx.sleep(50).then(() => false)]))) {
      part += 0.01;
      ctx.progress(part, 30);
    }
    ctx.progress(30, 30, 'done');
    return { content: [{ type: 'text', text: `computed ${label}` }] };
  },
});

beforeAll(async () => {
  server = await PostgresCluster.temporary();
  const url = server.url('postgres');
  await new MigrationRunner({ connectionString: url, migrations: await loadMigrations() }).up();
  platform = await startPlatform(url, { tools: [steady] as never });
  await platform.startWorker({ concurrency: TASKS + 1 });
  hub = new TaskEventsHub({ connectionString: url, listen: true, logger: silentLogger });
  await hub.start();
}, 120_000);
afterAll(async () => {
  await hub?.stop();
  await platform?.stop();
  server?.destroy();
});

const readTasks = () =>
  sql<{ id: string; status: string }>`SELECT id, status FROM tasks WHERE tool = 'steady_compute'`
    .execute(platform.db)
    .then(({ rows }) => rows);

describe('an outage between a handler returning and its completion landing', () => {
  it('completes every task whose handler returned, with its last progress, whatever the clocks did meanwhile', async () => {
    const labels = Array.from({ length: TASKS }, (_, index) => `t${index}`);
    for (const label of labels) atLastStep.set(label, barrier());
    // Five REST tasks, and one MCP tools/call that waits on its (request-mode) task.
    for (const label of labels.slice(1)) {
      await platform.service.create('default', { tool: 'steady_compute', arguments: { label } });
    }
    const stdio = connectStdio(testCore(platform, hub));
    stdio.send({
      jsonrpc: '2.0',
      id: 'call',
      method: 'tools/call',
      params: {
        name: 'steady_compute',
        arguments: { label: labels[0] },
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientCapabilities': {},
        },
      },
    });
    await Promise.all([...atLastStep.values()].map((entry) => entry.promise));

    const stoppedAt = performance.now();
    await server.immediateStop();
    finish.resolve();
    // Down past both clocks of every task (they started before the stop).
    await waitForTask(
      async () => performance.now(),
      (now) => now - stoppedAt > MAX_MS + 1_000,
      MAX_MS * 3,
    );
    await server.start();

    // A read may still meet a connection the restart ended: read again.
    const ended = await waitForTask(
      () => readTasks().catch(() => []),
      (rows) => rows.length === TASKS && rows.every((row) => row.status !== 'working'),
      60_000,
    );
    const tasks = await Promise.all(ended.map((row) => platform.service.get('default', row.id)));
    const summary = (task: TaskRecord) => ({ status: task.status, progress: task.progress, error: task.error });
    expect(tasks.map(summary)).toEqual(
      tasks.map(() => ({ status: 'completed', progress: { value: 30, total: 30, message: 'done' }, error: null })),
    );
    const items = await listReconciliationItems(platform.db, { tenantId: null, filter: 'all', limit: 100 });
    expect(items).toEqual([]);
    const answer = await stdio.answerTo('call');
    expect(answer).toMatchObject({ result: { content: [{ type: 'text', text: `computed ${labels[0]}` }] } });
    stdio.input.end();
    await stdio.server.closed;
  }, 120_000);
});
