import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, cleanEnv, REPO_ROOT } from '../support/cli.ts';
import { useTestDatabase } from '../support/databases.ts';
import { endedTaskWith, type Platform, startPlatform } from '../support/task-platform.ts';

// Interoperability: the official SDK v2 client, pinned to 2026-07-28, launches `taskgate mcp-stdio`.
const database = useTestDatabase();
let platform: Platform;
beforeAll(async () => {
  platform = await startPlatform(database.url);
});
afterAll(async () => {
  await platform.stop();
});

describe('the SDK v2 client over stdio (2026-07-28)', () => {
  it('discovers, lists, calls greet, gets progress, and an aborted call (notifications/cancelled) stops the work', async () => {
    const client = new Client(
      { name: 'taskgate-stdio-interop-v2', version: '2.0.0' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } } },
    );
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [CLI, 'mcp-stdio'],
        cwd: REPO_ROOT,
        env: cleanEnv({ DATABASE_URL: database.url }),
        stderr: 'ignore',
      }),
    );
    try {
      expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name)).toContain('greet');
      const greeting = await client.callTool({ name: 'greet', arguments: { name: 'stdio' } });
      expect(JSON.stringify(greeting.content)).toContain('stdio');

      const controller = new AbortController();
      const progress: number[] = [];
      const aborted = client.callTool(
        { name: 'slow_compute', arguments: { seconds: 8 } },
        {
          signal: controller.signal,
          onprogress: (update: { progress: number }) => {
            progress.push(update.progress);
            if (progress.length === 2) controller.abort('enough');
          },
        },
      );
      await expect(aborted).rejects.toThrow();
      const ended = await endedTaskWith(platform, 'slow_compute', 'seconds', '8');
      expect(ended.status).toBe('cancelled');
      expect(progress).toEqual([...progress].sort((a, b) => a - b));
    } finally {
      await client.close();
    }
  }, 60_000);
});
