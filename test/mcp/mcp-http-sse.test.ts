import http from 'node:http';
import { defineTool } from '@taskgate/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { linkedReport } from '../support/example-tools.ts';
import { openSseConnection, type SseConnection } from '../support/sse-client.ts';
import {
  endedTaskWith,
  type Platform,
  serveApi,
  startLoopbackApi,
  startPlatform,
  waitForTask,
} from '../support/task-platform.ts';

// The HTTP+SSE transport of 2024-11-05 (basic/transports "HTTP with SSE"): GET /sse is the
// connection, its first event names the POST endpoint, and every message of the server's is a
// `message` event on the stream. The SDK v1 1.9 client (package.json alias sdk-v1-9) speaks only
// 2024-11-05 and only this transport over HTTP.
const database = useTestDatabase();
/** An answer of 1 MiB, for a client that does not read its stream. */
const bulky = defineTool({
  name: 'bulky_answer',
  description: 'Answers with a mebibyte of text.',
  inputSchema: { type: 'object' },
  retry: 'safe',
  inline: true,
  async handler() {
    return { content: [{ type: 'text', text: 'x'.repeat(1024 * 1024) }] };
  },
});
const TOKENS = new Map([
  ['sse-test-token-acme-0123456', 'acme'],
  ['sse-test-token-beta-0123456', 'beta'],
]);
let platform: Platform;
let api: Awaited<ReturnType<typeof serveApi>>;
let sseUrl: URL;
beforeAll(async () => {
  platform = await startPlatform(database.url, { tools: [linkedReport, bulky] });
  await platform.startWorker();
  api = await serveApi(platform, database.url);
  sseUrl = new URL('/sse', api.mcpUrl);
});
afterAll(async () => {
  await api.close();
  await platform.stop();
});

interface OldClient {
  connect(transport: unknown): Promise<void>;
  getServerVersion(): { name: string } | undefined;
  listTools(): Promise<{ tools: { name: string; [field: string]: unknown }[] }>;
  callTool(
    params: { name: string; arguments: Record<string, unknown> },
    schema?: unknown,
    options?: { onprogress?: (progress: { progress: number }) => void },
  ): Promise<{ content: { type: string; text?: string }[]; isError?: boolean; structuredContent?: unknown }>;
  close(): Promise<void>;
}

async function sseClient(sdk: string, name: string): Promise<OldClient> {
  const { Client } = (await import(`${sdk}/client/index.js`)) as { Client: new (info: object) => OldClient };
  const { SSEClientTransport } = (await import(`${sdk}/client/sse.js`)) as {
    SSEClientTransport: new (url: URL) => unknown;
  };
  const client = new Client({ name, version: '1.0.0' });
  await client.connect(new SSEClientTransport(sseUrl));
  return client;
}

async function initialize(connection: SseConnection, protocolVersion = '2024-11-05') {
  const posted = await connection.post({
    jsonrpc: '2.0',
    id: 'init',
    method: 'initialize',
    params: { protocolVersion, capabilities: {}, clientInfo: { name: 'raw-sse', version: '1' } },
  });
  expect(posted).toEqual({ status: 202, text: '' });
  const [answer] = (await connection.until((messages) => messages.some((m) => m.id === 'init'))).filter(
    (m) => m.id === 'init',
  );
  await connection.post({ jsonrpc: '2.0', method: 'notifications/initialized' });
  return answer as { result: { protocolVersion: string; capabilities: Record<string, unknown> } };
}

const answerTo = (id: string) => (messages: Record<string, unknown>[]) => messages.some((m) => m.id === id);

describe('the SDK v1 1.9 client (2024-11-05, HTTP+SSE only)', () => {
  it('connects, lists the tools as its revision has them, and calls with progress', async () => {
    const client = await sseClient('sdk-v1-9', 'interop-sse-1.9');
    try {
      expect(client.getServerVersion()).toMatchObject({ name: 'taskgate' });
      const { tools } = await client.listTools();
      const linked = tools.find((tool) => tool.name === 'linked_report');
      expect(linked).toBeDefined();
      // 2024-11-05 tools have a name, a description and an inputSchema: nothing later.
      for (const field of ['outputSchema', 'annotations', 'title', 'execution'])
        expect(linked).not.toHaveProperty(field);
      const greeting = await client.callTool({ name: 'greet', arguments: { name: 'sse' } });
      expect(JSON.stringify(greeting.content)).toContain('Hello, sse!');
      const progress: number[] = [];
      const slow = await client.callTool({ name: 'slow_compute', arguments: { seconds: 0.3 } }, undefined, {
        onprogress: (update) => progress.push(update.progress),
      });
      expect(slow.isError ?? false).toBe(false);
      expect(progress.length).toBeGreaterThan(0);
      // Links and audio are text where the revision has neither; no structured content.
      const result = await client.callTool({ name: 'linked_report', arguments: {} });
      expect(result.content.map((item) => item.type)).toEqual(['text', 'text', 'text']);
      expect(result).not.toHaveProperty('structuredContent');
    } finally {
      await client.close();
    }
  });
});

describe('the current SDK v1 client over HTTP+SSE', () => {
  it('connects at its own revision, lists and calls', async () => {
    const client = await sseClient('@modelcontextprotocol/sdk', 'interop-sse-current');
    try {
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name)).toContain('greet');
      const greeting = await client.callTool({ name: 'greet', arguments: { name: 'newer' } });
      expect(JSON.stringify(greeting.content)).toContain('Hello, newer!');
      const result = await client.callTool({ name: 'linked_report', arguments: {} });
      expect(result.structuredContent).toEqual({ rows: 3 });
    } finally {
      await client.close();
    }
  });
});

describe('a connection', () => {
  it('names its endpoint first, negotiates down, and answers every request on the stream', async () => {
    const connection = await openSseConnection(sseUrl);
    try {
      expect(connection.endpoint.pathname).toBe('/messages');
      expect(connection.endpoint.searchParams.get('sessionId')).toMatch(/^[0-9a-f-]{36}$/);
      const answer = await initialize(connection);
      expect(answer.result.protocolVersion).toBe('2024-11-05');
      // A revision this server does not know is answered with its latest handshake revision.
      const other = await openSseConnection(sseUrl);
      try {
        expect((await initialize(other, '2023-01-01')).result.protocolVersion).toBe('2025-11-25');
      } finally {
        other.close();
      }
      expect(await connection.post({ jsonrpc: '2.0', id: 'p', method: 'ping' })).toEqual({ status: 202, text: '' });
      const [pong] = (await connection.until(answerTo('p'))).filter((m) => m.id === 'p');
      expect(pong).toEqual({ jsonrpc: '2.0', id: 'p', result: {} });
      // 2024-11-05's progress has no message.
      await connection.post({
        jsonrpc: '2.0',
        id: 'slow',
        method: 'tools/call',
        params: { name: 'slow_compute', arguments: { seconds: 0.2 }, _meta: { progressToken: 'pt' } },
      });
      const messages = await connection.until(answerTo('slow'));
      const progress = messages.filter((m) => m.method === 'notifications/progress');
      expect(progress.length).toBeGreaterThan(0);
      for (const update of progress) expect(update.params).not.toHaveProperty('message');
      expect(messages.findIndex((m) => m.id === 'slow')).toBeGreaterThan(
        messages.indexOf(progress.at(-1) as Record<string, unknown>),
      );
    } finally {
      connection.close();
    }
  });

  it('cancels what is still running when its stream closes, and forgets its endpoint', async () => {
    const connection = await openSseConnection(sseUrl);
    await initialize(connection);
    await connection.post({
      jsonrpc: '2.0',
      id: 'long',
      method: 'tools/call',
      params: { name: 'slow_compute', arguments: { seconds: 60, label: 'sse-closed' }, _meta: { progressToken: 1 } },
    });
    // Working: its progress is on the stream. Then the client goes.
    await connection.until((messages) => messages.some((m) => m.method === 'notifications/progress'));
    connection.close();
    const task = await endedTaskWith(platform, 'slow_compute', 'label', 'sse-closed');
    expect(task.status).toBe('cancelled');
    const after = await connection.post({ jsonrpc: '2.0', id: 'late', method: 'ping' });
    expect(after.status).toBe(404);
    expect(JSON.parse(after.text).error.message).toContain('unknown sessionId');
  });

  it('cancels one request on notifications/cancelled, and answers nothing for it', async () => {
    const connection = await openSseConnection(sseUrl);
    try {
      await initialize(connection);
      await connection.post({
        jsonrpc: '2.0',
        id: 7,
        method: 'tools/call',
        params: {
          name: 'slow_compute',
          arguments: { seconds: 60, label: 'sse-cancelled' },
          _meta: { progressToken: 7 },
        },
      });
      await connection.until((messages) => messages.some((m) => m.method === 'notifications/progress'));
      await connection.post({
        jsonrpc: '2.0',
        method: 'notifications/cancelled',
        params: { requestId: 7, reason: 'changed my mind' },
      });
      const task = await endedTaskWith(platform, 'slow_compute', 'label', 'sse-cancelled');
      expect(task.status).toBe('cancelled');
      // A later request's answer comes, the cancelled one's never does.
      await connection.post({ jsonrpc: '2.0', id: 'after', method: 'ping' });
      const messages = await connection.until(answerTo('after'));
      expect(messages.filter((m) => m.id === 7)).toEqual([]);
    } finally {
      connection.close();
    }
  });

  it('refuses what is not a message for a connection, with a status and a reason', async () => {
    const connection = await openSseConnection(sseUrl);
    try {
      const messages = new URL('/messages', sseUrl);
      const post = (url: URL, body: string, headers: Record<string, string> = {}) =>
        fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
      expect((await post(messages, '{"jsonrpc":"2.0","id":1,"method":"ping"}')).status).toBe(400);
      messages.searchParams.set('sessionId', '00000000-0000-4000-8000-000000000000');
      expect((await post(messages, '{"jsonrpc":"2.0","id":1,"method":"ping"}')).status).toBe(404);
      // Not JSON: -32700 on the POST's own response, nothing on the stream.
      const broken = await post(connection.endpoint, '{"jsonrpc":');
      expect(broken.status).toBe(400);
      expect(((await broken.json()) as { error: { code: number } }).error.code).toBe(-32700);
      // Not JSON at all, by its type.
      expect((await post(connection.endpoint, 'ping', { 'content-type': 'text/plain' })).status).toBe(415);
      // JSON, but not a message the connection can take: answered on the stream, as on stdio.
      expect(await connection.post('42')).toEqual({ status: 202, text: '' });
      await connection.post({ jsonrpc: '2.0', id: 'nul', method: 'ping', params: { note: 'a\u0000b' } });
      const answers = await connection.until(
        (all) => all.some((m) => m.id === 'nul') && all.some((m) => m.id === null),
      );
      expect((answers.find((m) => m.id === null) as { error: { code: number } }).error.code).toBe(-32600);
      expect((answers.find((m) => m.id === 'nul') as { error: { code: number } }).error.code).toBe(-32602);
      // Before initialize (a reconnected stream is a new connection, never initialized): refused
      // as such, even with 2026-07-28's per-request _meta, which this transport does not carry.
      await connection.post({ jsonrpc: '2.0', id: 'early', method: 'tools/list' });
      await connection.post({
        jsonrpc: '2.0',
        id: 'modern',
        method: 'tools/list',
        params: {
          _meta: {
            'io.modelcontextprotocol/protocolVersion': '2026-07-28',
            'io.modelcontextprotocol/clientCapabilities': {},
          },
        },
      });
      const early = await connection.until(
        (all) => all.some((m) => m.id === 'early') && all.some((m) => m.id === 'modern'),
      );
      for (const id of ['early', 'modern']) {
        expect(early.find((m) => m.id === id)).toMatchObject({
          error: { code: -32600, message: expect.stringContaining('this connection is not initialized') },
        });
      }
      // A stream is only opened for a client that reads one.
      const plain = await fetch(sseUrl, { headers: { accept: 'application/json' } });
      expect(plain.status).toBe(406);
    } finally {
      connection.close();
    }
  });

  it("is its tenant's: another tenant's POST to its endpoint is as unknown as a made-up one", async () => {
    const guarded = await serveApi(platform, database.url, { tokens: TOKENS });
    try {
      const url = new URL('/sse', guarded.mcpUrl);
      expect((await fetch(url, { headers: { accept: 'text/event-stream' } })).status).toBe(401);
      const acme = { authorization: 'Bearer sse-test-token-acme-0123456' };
      const connection = await openSseConnection(url, acme);
      try {
        const ping = { jsonrpc: '2.0', id: 1, method: 'ping' };
        expect((await connection.post(ping, { authorization: 'Bearer sse-test-token-beta-0123456' })).status).toBe(404);
        expect((await connection.post(ping, { authorization: '' })).status).toBe(401);
        const answer = await initialize(connection);
        expect(answer.result.protocolVersion).toBe('2024-11-05');
      } finally {
        connection.close();
      }
    } finally {
      await guarded.close();
    }
  });
});

describe('a client that POSTs and never reads its stream', () => {
  it('is disconnected once its unread answers pass the bound, not kept in memory', async () => {
    const opened = http.get(sseUrl, { headers: { accept: 'text/event-stream' } });
    const response = await new Promise<http.IncomingMessage>((resolve) => opened.on('response', resolve));
    const first = await new Promise<string>((resolve) =>
      response.once('data', (chunk: Buffer) => resolve(String(chunk))),
    );
    const endpoint = new URL(/data: (\S+)/.exec(first)?.[1] as string, sseUrl);
    // From here on nothing is read: the socket's buffers fill, then the connection's.
    response.pause();
    const statuses: number[] = [];
    const post = async (body: unknown) => {
      const posted = await fetch(endpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      statuses.push(posted.status);
    };
    await post({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2024-11-05', capabilities: {}, clientInfo: { name: 'stalled', version: '1' } },
    });
    // 64 MiB of answers: past the bound whatever the kernel's socket buffers take.
    for (let id = 1; id <= 64 && !statuses.includes(404); id++) {
      await post({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'bulky_answer', arguments: {} } });
    }
    // The connection is gone (a paused reader does not see the stream end): its endpoint is unknown.
    await waitForTask(
      async () => {
        await post({ jsonrpc: '2.0', id: 'late', method: 'ping' });
        return statuses.at(-1);
      },
      (status) => status === 404,
    );
    expect(statuses[0]).toBe(202);
    opened.destroy();
  });
});

describe('stopping the API role', () => {
  it('answers a call still running after the grace period with a retryable error, then ends the stream', async () => {
    const role = await startLoopbackApi(database.url, { sweep: false, graceMs: 300, mcpTaskAfterMs: 60_000 });
    const connection = await openSseConnection(new URL('/sse', role.url));
    await initialize(connection);
    await connection.post({
      jsonrpc: '2.0',
      id: 'stopped',
      method: 'tools/call',
      params: { name: 'slow_compute', arguments: { seconds: 60, label: 'sse-stopped' } },
    });
    const task = await waitForTask(
      async () =>
        (await platform.service.list('default', { limit: 20 })).tasks.find(
          (candidate) => (candidate.arguments as { label?: string }).label === 'sse-stopped',
        ),
      (found) => found?.startedAt != null,
    );
    const started = performance.now();
    await role.stop();
    expect(performance.now() - started).toBeLessThan(2_500);
    await connection.ended;
    const answer = connection.messages.find((m) => m.id === 'stopped') as { error?: { code: number; message: string } };
    expect(answer.error?.code).toBe(-31503);
    expect(answer.error?.message).toContain('the server is shutting down; call again');
    const ended = await waitForTask(
      () => platform.service.get('default', task?.id as string),
      (current) => current.status !== 'working',
    );
    expect(ended.status).toBe('cancelled');
  });
});
