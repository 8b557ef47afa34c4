import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { endedTaskWith, type Platform, serveApi, startPlatform } from '../support/task-platform.ts';

// Interoperability: the official SDK v2 client, pinned to revision 2026-07-28, against POST /mcp.
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
  const client = new Client(
    { name: 'taskgate-interop-v2', version: '2.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  await client.connect(new StreamableHTTPClientTransport(api.mcpUrl));
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
      const ended = await endedTaskWith(platform, 'slow_compute', 'seconds', '9');
      expect(ended).toMatchObject({ status: 'cancelled', cancelReason: 'the client closed the response stream' });
    } finally {
      await client.close();
    }
  });
});
