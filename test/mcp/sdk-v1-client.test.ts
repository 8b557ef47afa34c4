import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { endedTaskWith, type Platform, serveApi, startPlatform } from '../support/task-platform.ts';

// Interoperability: the official TypeScript SDK v1 client (protocol 2025-11-25) against POST /mcp.
const database = useTestDatabase();
let platform: Platform;
let api: Awaited<ReturnType<typeof serveApi>>;
beforeAll(async () => {
  platform = await startPlatform(database.url);
  await platform.startWorker();
  api = await serveApi(platform, database.url);
});
afterAll(async () => {
  await api.close();
  await platform.stop();
});

async function connect(): Promise<Client> {
  const client = new Client({ name: 'taskgate-interop', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(api.mcpUrl));
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
      const ended = await endedTaskWith(platform, 'slow_compute', 'seconds', '10');
      expect(ended.status).toBe('cancelled');
    } finally {
      await client.close();
    }
  });
});
