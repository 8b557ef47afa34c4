import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { TaskRecord } from '@taskgate/db';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { type Platform, startApi, startPlatform, waitForTask } from '../support/task-platform.ts';

// Interoperability: the official TypeScript SDK v1 client (protocol 2025-11-25) against POST /mcp.
const database = useTestDatabase();
let platform: Platform;
let api: { app: FastifyInstance; close(): Promise<void> };
let url: URL;
beforeAll(async () => {
  platform = await startPlatform(database.url);
  await platform.startWorker();
  api = await startApi(platform, database.url);
  await api.app.listen({ host: '127.0.0.1', port: 0 });
  url = new URL(`http://127.0.0.1:${(api.app.server.address() as AddressInfo).port}/mcp`);
});
afterAll(async () => {
  await api.close();
  await platform.stop();
});

async function connect(): Promise<Client> {
  const client = new Client({ name: 'taskgate-interop', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(url));
  return client;
}

describe('the SDK v1 client over Streamable HTTP', () => {
  it('initializes, lists the tools and calls greet', async () => {
    const client = await connect();
    try {
      expect(client.getServerVersion()).toMatchObject({ name: 'taskgate' });
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name)).toContain('greet');
      const result = await client.callTool({ name: 'greet', arguments: { name: 'SDK' } });
      expect(JSON.stringify(result.content)).toContain('SDK');
      expect(result.isError ?? false).toBe(false);
    } finally {
      await client.close();
    }
  });

  it('receives progress for slow_compute, and an aborted call stops the work on the server', async () => {
    const client = await connect();
    try {
      const progress: number[] = [];
      const complete = await client.callTool({ name: 'slow_compute', arguments: { seconds: 0.5 } }, undefined, {
        onprogress: (update) => progress.push(update.progress),
      });
      expect(complete.isError ?? false).toBe(false);
      expect(progress.length).toBeGreaterThan(0);
      expect(progress).toEqual([...progress].sort((a, b) => a - b));

      // v1 sends notifications/cancelled (a POST) when a call is aborted.
      const controller = new AbortController();
      const aborted = client.callTool({ name: 'slow_compute', arguments: { seconds: 10 } }, undefined, {
        signal: controller.signal,
        onprogress: () => controller.abort('user pressed stop'),
      });
      await expect(aborted).rejects.toThrow();
      const task = await waitForTask(
        async () => {
          const { rows } = await sql<{ id: string }>`
            SELECT id FROM tasks WHERE tool = 'slow_compute' AND arguments->>'seconds' = '10'`.execute(platform.db);
          return rows[0]?.id;
        },
        (id) => id !== undefined,
      );
      const ended = await waitForTask(
        () => platform.service.get('default', task as string),
        (current: TaskRecord) => current.status !== 'working',
      );
      expect(ended.status).toBe('cancelled');
    } finally {
      await client.close();
    }
  });
});
