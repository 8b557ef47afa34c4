import { type McpCore, TaskEventsHub } from '@taskgate/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { connectStdio, stdioCore } from '../support/stdio-client.ts';
import { type Platform, silentLogger, startPlatform } from '../support/task-platform.ts';

// 2025-11-25's notifications/tasks/status over stdio must not depend on NOTIFY: `taskgate
// mcp-stdio` on the embedded database has no listener at all, so only the poll can tell the pipe
// that a task it created changed. Both hubs are tried; each pipe must see every status once.
const database = useTestDatabase();
let platform: Platform;
const hubs: Record<'listening' | 'silent', TaskEventsHub> = {} as never;
const cores: Record<'listening' | 'silent', McpCore> = {} as never;
beforeAll(async () => {
  platform = await startPlatform(database.url);
  await platform.startWorker();
  for (const kind of ['listening', 'silent'] as const) {
    hubs[kind] = new TaskEventsHub({
      connectionString: database.url,
      listen: kind === 'listening',
      logger: silentLogger,
    });
    await hubs[kind].start();
    cores[kind] = stdioCore(platform, hubs[kind], 100);
  }
});
afterAll(async () => {
  for (const hub of Object.values(hubs)) await hub.stop();
  await platform.stop();
});

describe('2025-11-25 task status notifications over stdio', () => {
  it.each(['listening', 'silent'] as const)(
    'arrive with a %s events hub, each status once, the last terminal',
    async (kind) => {
      const client = connectStdio(cores[kind]);
      client.send({
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
      });
      await client.answerTo(0);
      client.send({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'slow_compute', arguments: { seconds: 0.3, label: kind }, task: {} },
      });
      const created = (await client.answerTo(1)) as { result: { task: { taskId: string; status: string } } };
      const { taskId } = created.result.task;
      expect(created.result.task.status).toBe('working');
      const statuses = () =>
        client.received
          .filter((message) => message.method === 'notifications/tasks/status')
          .map((message) => message.params as { taskId: string; status: string });
      await client.until(() => statuses().some((status) => status.status === 'completed'));
      // The status is already reported; more polls must not repeat it.
      const pollsLater = Date.now() + 500;
      await client.until(() => Date.now() > pollsLater);
      expect(statuses()).toEqual([expect.objectContaining({ taskId, status: 'completed' })]);
      client.input.end();
    },
  );
});
