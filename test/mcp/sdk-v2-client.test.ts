import type { AddressInfo } from 'node:net';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type { TaskRecord } from '@taskgate/db';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { type Platform, startApi, startPlatform, waitForTask } from '../support/task-platform.ts';

// Interoperability: the official SDK v2 client, pinned to revision 2026-07-28, against POST /mcp.
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
  const client = new Client(
    { name: 'taskgate-interop-v2', version: '2.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  await client.connect(new StreamableHTTPClientTransport(url));
  return client;
}

describe('the SDK v2 client over Streamable HTTP (2026-07-28)', () => {
  it('discovers, lists the tools and calls greet', async () => {
    const client = await connect();
    try {
      expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name)).toContain('slow_compute');
      const result = await client.callTool({ name: 'greet', arguments: { name: 'v2' } });
      expect(JSON.stringify(result.content)).toContain('v2');
    } finally {
      await client.close();
    }
  });

  it('receives progress, and an aborted call (the stream closes) stops the work on the server', async () => {
    const client = await connect();
    try {
      const progress: number[] = [];
      await client.callTool(
        { name: 'slow_compute', arguments: { seconds: 0.5 } },
        { onprogress: (p) => progress.push(p.progress) },
      );
      expect(progress.length).toBeGreaterThan(0);

      const controller = new AbortController();
      const aborted = client.callTool(
        { name: 'slow_compute', arguments: { seconds: 9 } },
        { signal: controller.signal, onprogress: () => controller.abort('stop') },
      );
      await expect(aborted).rejects.toThrow();
      const task = await waitForTask(
        async () => {
          const { rows } = await sql<{ id: string }>`
            SELECT id FROM tasks WHERE tool = 'slow_compute' AND arguments->>'seconds' = '9'`.execute(platform.db);
          return rows[0]?.id;
        },
        (id) => id !== undefined,
      );
      const ended = await waitForTask(
        () => platform.service.get('default', task as string),
        (current: TaskRecord) => current.status !== 'working',
      );
      expect(ended).toMatchObject({ status: 'cancelled', cancelReason: 'the client closed the response stream' });
    } finally {
      await client.close();
    }
  });
});
