import { defineTool } from '@taskgate/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresCluster } from '../support/postgres-cluster.ts';
import { barrier, type Platform, startPlatform, waitForTask } from '../support/task-platform.ts';
import { migrateAsDefault } from '../support/test-run.ts';

// A durable tool's ctx.log() while its database is down (issue 15 item 4): the messages are best
// effort, like progress. One logged in the outage is lost, never the task's result; its write
// fails and is not waited on past the failure, so the completion behind it is kept and retried
// until it lands, by the attempt that ran it. A Postgres of this test's own is fast-stopped at a
// point the handler waits at.
const inOutage = barrier();
const reachedWait = barrier();
const loggingThroughOutage = defineTool({
  name: 'logs_through_an_outage',
  description: 'Logs, waits for the test to stop the database, logs again, and returns.',
  inputSchema: { type: 'object' },
  retry: 'safe',
  async handler(_input, ctx) {
    ctx.log('info', 'before the outage');
    reachedWait.resolve();
    await inOutage.promise;
    ctx.log('info', 'during the outage');
    return { content: [{ type: 'text', text: 'finished in the outage' }] };
  },
});

let server: PostgresCluster;
let platform: Platform;
beforeAll(async () => {
  server = await PostgresCluster.temporary();
  await migrateAsDefault(server.url('postgres'));
  platform = await startPlatform(server.url('postgres'), { tools: [loggingThroughOutage] });
  await platform.startWorker();
}, 120_000);
afterAll(async () => {
  await platform?.stop();
  server?.destroy();
});

describe('ctx.log() in a database outage', () => {
  it('loses the message logged while the database is down, never the result', async () => {
    const task = await platform.service.create('default', {
      tool: 'logs_through_an_outage',
      arguments: {},
      logLevel: 'debug',
    });
    await reachedWait.promise;
    // The first message is written before the handler is let go, and the database stopped.
    await waitForTask(
      () => platform.service.logMessages('default', task.id, 0, 10),
      (messages) => messages.length === 1,
    );
    await server.fastStop();
    inOutage.resolve();
    // The handler has returned into the outage; the database comes back, and the completion lands.
    await server.start();
    const done = await waitForTask(
      () => platform.service.get('default', task.id).catch(() => null),
      (read) => read !== null && read.status !== 'working',
      60_000,
    );
    expect(done).toMatchObject({
      status: 'completed',
      attempt: 1,
      result: { content: [{ type: 'text', text: 'finished in the outage' }] },
    });
    const kept = await platform.service.logMessages('default', task.id, 0, 10);
    expect(kept.map((message) => (message.kind === 'log' ? message.data : message))).toEqual(['before the outage']);
  }, 90_000);
});
