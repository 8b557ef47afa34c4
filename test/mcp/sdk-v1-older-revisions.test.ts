import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, cleanEnv, REPO_ROOT } from '../support/cli.ts';
import { useTestDatabase } from '../support/databases.ts';
import { linkedReport } from '../support/example-tools.ts';
import { type Platform, serveApi, startPlatform } from '../support/task-platform.ts';

// Clients whose SDK stops at an older revision: SDK v1 1.22 speaks 2025-06-18 at the latest, 1.11
// 2025-03-26 (package.json aliases sdk-v1-22 and sdk-v1-11). Each refuses a server that answers
// initialize with a revision it does not know, so the server must negotiate down: answer with the
// client's revision (basic/lifecycle "Version Negotiation"). Over HTTP and over stdio, each client
// connects, lists the tools and calls one, with its progress.
const database = useTestDatabase();
let platform: Platform;
let api: Awaited<ReturnType<typeof serveApi>>;
beforeAll(async () => {
  platform = await startPlatform(database.url, { tools: [linkedReport] });
  await platform.startWorker();
  api = await serveApi(platform, database.url);
});
afterAll(async () => {
  await api.close();
  await platform.stop();
});

const SDKS = [
  { sdk: 'sdk-v1-22', revision: '2025-06-18' },
  { sdk: 'sdk-v1-11', revision: '2025-03-26' },
] as const;

interface OldClient {
  connect(transport: unknown): Promise<void>;
  getServerVersion(): { name: string } | undefined;
  getServerCapabilities(): Record<string, unknown> | undefined;
  listTools(): Promise<{ tools: { name: string; [field: string]: unknown }[] }>;
  callTool(
    params: { name: string; arguments: Record<string, unknown> },
    schema?: unknown,
    options?: { onprogress?: (progress: { progress: number }) => void },
  ): Promise<{ content: unknown; isError?: boolean }>;
  close(): Promise<void>;
}

async function load(sdk: string) {
  const { Client } = (await import(`${sdk}/client/index.js`)) as { Client: new (info: object) => OldClient };
  const { StreamableHTTPClientTransport } = (await import(`${sdk}/client/streamableHttp.js`)) as {
    StreamableHTTPClientTransport: new (url: URL) => { protocolVersion?: string };
  };
  const { StdioClientTransport } = (await import(`${sdk}/client/stdio.js`)) as {
    StdioClientTransport: new (options: object) => unknown;
  };
  return { Client, StreamableHTTPClientTransport, StdioClientTransport };
}

async function exercise(client: OldClient) {
  expect(client.getServerVersion()).toMatchObject({ name: 'taskgate' });
  // These revisions have no tasks: the server does not offer them.
  expect(client.getServerCapabilities()).not.toHaveProperty('tasks');
  const { tools } = await client.listTools();
  expect(tools.map((tool) => tool.name)).toContain('greet');
  for (const tool of tools) expect(tool).not.toHaveProperty('execution');
  const greeting = await client.callTool({ name: 'greet', arguments: { name: 'old' } });
  expect(JSON.stringify(greeting.content)).toContain('Hello, old!');
  const progress: number[] = [];
  const slow = await client.callTool({ name: 'slow_compute', arguments: { seconds: 0.3 } }, undefined, {
    onprogress: (update) => progress.push(update.progress),
  });
  expect(slow.isError ?? false).toBe(false);
  expect(progress.length).toBeGreaterThan(0);
}

describe.each(SDKS)('the SDK v1 client of $revision ($sdk)', ({ sdk, revision }) => {
  it('connects over Streamable HTTP, negotiating its revision, lists and calls', async () => {
    const { Client, StreamableHTTPClientTransport } = await load(sdk);
    const client = new Client({ name: `interop-${sdk}`, version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(api.mcpUrl);
    await client.connect(transport);
    try {
      // The transport sends this version in MCP-Protocol-Version from now on (when it has the header).
      if ('protocolVersion' in transport && transport.protocolVersion !== undefined) {
        expect(transport.protocolVersion).toBe(revision);
      }
      await exercise(client);
      // A resource link is text where the revision has none; the rest as the revision has it.
      const linked = (await client.callTool({ name: 'linked_report', arguments: {} })) as {
        content: { type: string; text?: string }[];
        structuredContent?: unknown;
      };
      expect(linked.content.map((item) => item.type)).toEqual(
        revision === '2025-06-18' ? ['text', 'resource_link', 'audio'] : ['text', 'text', 'audio'],
      );
      if (revision === '2025-03-26') {
        expect(linked.content[1]?.text).toBe('r.csv: file:///reports/r.csv (text/csv)');
        expect(linked).not.toHaveProperty('structuredContent');
      } else expect(linked.structuredContent).toEqual({ rows: 3 });
    } finally {
      await client.close();
    }
  });

  it('connects over stdio (taskgate mcp-stdio), lists and calls', async () => {
    const { Client, StdioClientTransport } = await load(sdk);
    const client = new Client({ name: `interop-${sdk}-stdio`, version: '1.0.0' });
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
      await exercise(client);
    } finally {
      await client.close();
    }
  });
});
