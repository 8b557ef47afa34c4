import { TaskEventsHub } from '@taskgate/api';
import { loadMigrations, MigrationRunner } from '@taskgate/db';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresCluster } from '../support/postgres-cluster.ts';
import { connectStdio, testCore } from '../support/stdio-client.ts';
import { type Platform, silentLogger, startPlatform, waitForTask } from '../support/task-platform.ts';

// A client cancels a durable call while the database is unreachable: the cancel cannot be written
// then. Nobody else knows the task (it is the request's own), and this instance is alive, so no
// sweeper takes it either: unless the cancel is tried again, the task runs to its end (its effects
// included) or to its max clock. The API retries the cancel once the database is back.
let server: PostgresCluster;
let platform: Platform;
let hub: TaskEventsHub;

beforeAll(async () => {
  server = await PostgresCluster.temporary();
  const url = server.url('postgres');
  await new MigrationRunner({ connectionString: url, migrations: await loadMigrations() }).up();
  platform = await startPlatform(url, { service: { cancelRetryDelaysMs: { first: 100, max: 400 } } });
  await platform.startWorker();
  hub = new TaskEventsHub({ connectionString: url, listen: true, logger: silentLogger });
  await hub.start();
}, 120_000);
afterAll(async () => {
  await hub?.stop();
  await platform?.stop();
  server?.destroy();
});

describe('a cancel that arrives during an outage', () => {
  it('lands once the database is back: the task ends cancelled, not completed', async () => {
    const stdio = connectStdio(testCore(platform, hub));
    const meta = {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientCapabilities': {},
    };
    stdio.send({
      jsonrpc: '2.0',
      id: 'long',
      method: 'tools/call',
      params: { name: 'slow_compute', arguments: { seconds: 30, label: 'outage' }, _meta: meta },
    });
    // The worker runs it: the cancel has a handler to reach.
    const running = await waitForTask(
      async () => {
        const { rows } = await sql<{ id: string; started_at: Date | null }>`
          SELECT id, started_at FROM tasks WHERE tool = 'slow_compute'`.execute(platform.db);
        return rows[0];
      },
      (row) => row?.started_at != null,
    );
    const taskId = (running as { id: string }).id;

    await server.fastStop();
    stdio.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'long', reason: 'stop it' } });
    // The cancel was tried, failed on the outage, and waits for its retry.
    await expect.poll(() => platform.service.cancelsPending, { timeout: 10_000 }).toBe(1);
    await server.start();

    // A read may still meet a connection the restart ended: read again.
    const ended = await waitForTask(
      () => platform.service.get('default', taskId).catch(() => null),
      (task) => task !== null && task.status !== 'working',
    );
    expect(ended).toMatchObject({ status: 'cancelled', cancelReason: 'stop it' });
    expect(platform.service.cancelsPending).toBe(0);
    // A cancelled request is not answered.
    expect(stdio.received.filter((message) => message.id === 'long')).toEqual([]);
    stdio.input.end();
    await stdio.server.closed;
  }, 60_000);
});
