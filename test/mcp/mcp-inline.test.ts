import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { CatalogView } from '@taskgate/db';
import { defineTool } from '@taskgate/sdk';
import { CatalogTools } from '@taskgate/tools';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { barrier, type Platform, silentLogger, startApi, startPlatform } from '../support/task-platform.ts';

// Inline tools: safe tools that an MCP tools/call runs in the API process, with no task row.
const database = useTestDatabase();
const spinStarted = barrier();
let spinAbortReason: unknown = null;
const spinAborted = barrier();

const echoInline = defineTool<{ text: string }>({
  name: 'echo_inline',
  description: 'echoes, inline',
  inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
  retry: 'safe',
  inline: true,
  async handler({ text }) {
    return { content: [{ type: 'text', text }] };
  },
});
const spinInline = defineTool({
  name: 'spin_inline',
  description: 'runs until its signal aborts',
  inputSchema: { type: 'object' },
  retry: 'safe',
  inline: true,
  async handler(_input, ctx) {
    spinStarted.resolve();
    await new Promise<void>((resolve) =>
      ctx.signal.addEventListener('abort', () => {
        spinAbortReason = ctx.signal.reason;
        spinAborted.resolve();
        resolve();
      }),
    );
    return { content: [] };
  },
});
const busyInline = defineTool({
  name: 'busy_inline',
  description: 'reports progress every 20 ms forever; only its max clock stops it',
  inputSchema: { type: 'object' },
  retry: 'safe',
  inline: true,
  // Real clocks: the idle clock is long enough that a loaded machine's stalls (seen: over 100 ms)
  // do not fire it between two progress reports, and the max clock 2.5 times longer still.
  timeouts: { idleMs: 1_000, maxMs: 2_500 },
  async handler(_input, ctx) {
    for (let step = 1; ; step++) {
      await ctx.sleep(20);
      ctx.progress(step);
    }
  },
});

const offSchemaInline = defineTool({
  name: 'off_schema_inline',
  description: 'returns structuredContent its outputSchema refuses',
  inputSchema: { type: 'object' },
  outputSchema: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] },
  retry: 'safe',
  inline: true,
  async handler() {
    return { content: [], structuredContent: { n: 'one' } };
  },
});

/** The same handler and clocks as busy_inline, run by a worker: one ToolRun serves both. */
const busyDurable = defineTool({ ...busyInline, name: 'busy_durable', inline: false });

let platform: Platform;
let api: { app: FastifyInstance; close(): Promise<void> };
beforeAll(async () => {
  platform = await startPlatform(database.url, {
    tools: [echoInline, spinInline, busyInline, busyDurable, offSchemaInline] as never,
  });
  await platform.startWorker();
  api = await startApi(platform, database.url);
});
afterAll(async () => {
  await api.close();
  await platform.stop();
});

const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
};
const headers = (name: string) => ({
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  'mcp-protocol-version': '2026-07-28',
  'mcp-method': 'tools/call',
  'mcp-name': name,
});
const call = (id: string, name: string, args: Record<string, unknown>, meta: Record<string, unknown> = {}) =>
  JSON.stringify({
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name, arguments: args, _meta: { ...META, ...meta } },
  });

describe('inline tools over /mcp', () => {
  it('answers from the API process without a task row (no worker is running)', async () => {
    const response = await api.app.inject({
      method: 'POST',
      url: '/mcp',
      headers: headers('echo_inline'),
      payload: call('e', 'echo_inline', { text: 'inline!' }),
    });
    expect(response.json()).toMatchObject({
      id: 'e',
      result: { resultType: 'complete', content: [{ text: 'inline!' }] },
    });
    const { rows } = await sql<{ n: string }>`SELECT count(*) AS n FROM tasks`.execute(platform.db);
    expect(Number(rows[0]?.n)).toBe(0);
    const bad = await api.app.inject({
      method: 'POST',
      url: '/mcp',
      headers: headers('echo_inline'),
      payload: call('b', 'echo_inline', { text: 5 }),
    });
    expect(bad.json().error).toMatchObject({ code: -32602, data: { reason: 'invalid_arguments' } });
  });

  it('checks the result against the outputSchema, as a worker does', async () => {
    const response = await api.app.inject({
      method: 'POST',
      url: '/mcp',
      headers: headers('off_schema_inline'),
      payload: call('o', 'off_schema_inline', {}),
    });
    expect(response.json().error).toMatchObject({
      code: -32603,
      message:
        'tool off_schema_inline returned an invalid result: its structuredContent does not match its outputSchema (/n must be number)',
    });
  });

  it('keeps cancellation: closing the response stream aborts the handler', async () => {
    if (!api.app.server.listening) await api.app.listen({ host: '127.0.0.1', port: 0 });
    const port = (api.app.server.address() as AddressInfo).port;
    const body = call('s', 'spin_inline', {});
    const request = http.request({
      host: '127.0.0.1',
      port,
      path: '/mcp',
      method: 'POST',
      headers: { ...headers('spin_inline'), 'content-length': Buffer.byteLength(body) },
    });
    request.on('error', () => {});
    request.end(body);
    await spinStarted.promise;
    request.destroy();
    await spinAborted.promise;
    expect(String((spinAbortReason as Error).message)).toContain('the client closed the response stream');
  });

  it('keeps the two clocks: progress resets the idle clock, the max clock ends the call anyway', async () => {
    if (!api.app.server.listening) await api.app.listen({ host: '127.0.0.1', port: 0 });
    const port = (api.app.server.address() as AddressInfo).port;
    const response = await fetch(`http://127.0.0.1:${port}/mcp`, {
      method: 'POST',
      headers: headers('busy_inline'),
      body: call('m', 'busy_inline', {}, { progressToken: 'b' }),
    });
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    const messages = (await response.text())
      .split('\n\n')
      .filter((frame) => frame.startsWith('data: '))
      .map((frame) => JSON.parse(frame.slice(6)));
    // It outlived its 1 s idle clock twice over thanks to progress, then hit the 2.5 s max.
    expect(messages.filter((message) => message.method === 'notifications/progress').length).toBeGreaterThan(5);
    expect(messages.at(-1)).toMatchObject({ id: 'm', error: { code: -32603, data: { clock: 'max', limitMs: 2_500 } } });
  });

  it('reports a timeout exactly as a durable run of the same tool does', async () => {
    if (!api.app.server.listening) await api.app.listen({ host: '127.0.0.1', port: 0 });
    const port = (api.app.server.address() as AddressInfo).port;
    const finalMessage = async (name: string) => {
      const response = await fetch(`http://127.0.0.1:${port}/mcp`, {
        method: 'POST',
        headers: headers(name),
        body: call(name, name, {}),
      });
      const text = await response.text();
      const frames = text.split('\n\n').filter((frame) => frame.startsWith('data: '));
      return JSON.parse(frames.length > 0 ? (frames.at(-1) as string).slice(6) : text);
    };
    const [inline, durable] = await Promise.all([finalMessage('busy_inline'), finalMessage('busy_durable')]);
    // -32001 is stored with the task; MCP reserves -32000..-32019, so the wire says -32603.
    expect(inline.error).toEqual({
      code: -32603,
      message: 'maximum timeout: the task ran for its limit of 2500 ms',
      data: { clock: 'max', limitMs: 2_500, originalCode: -32001 },
    });
    expect(durable.error).toEqual(inline.error);
  });

  it('lets only safe tools run inline', () => {
    expect(() =>
      defineTool({
        name: 'unsafe_inline',
        description: 'x',
        inputSchema: { type: 'object' },
        retry: 'unsafe',
        inline: true,
        handler: async () => ({ content: [] }),
      }),
    ).toThrow(/only a safe tool may run inline/);
  });

  it('in an API that did not load its module, goes to a worker as a durable request-mode task', async () => {
    // What an API with --tools none offers: the catalog (the platform's worker published it), and
    // no handler of its own.
    const view = new CatalogView({ db: platform.db, pollIntervalMs: 3_600_000, logger: silentLogger });
    await view.start();
    const remote = await startApi(platform, database.url, {
      tools: new CatalogTools(view, { logger: silentLogger }),
    });
    try {
      const response = await remote.app.inject({
        method: 'POST',
        url: '/mcp',
        headers: headers('echo_inline'),
        payload: call('r', 'echo_inline', { text: 'via a worker' }),
      });
      expect(response.json()).toMatchObject({ id: 'r', result: { content: [{ text: 'via a worker' }] } });
      const { rows } = await sql<{ mode: string; status: string; worker: unknown }>`
        SELECT t.mode, t.status, e.data->>'worker' AS worker FROM tasks t
        JOIN task_events e ON e.task_id = t.id AND e.type = 'attempt_started'
        WHERE t.tool = 'echo_inline'`.execute(platform.db);
      expect(rows).toEqual([{ mode: 'request', status: 'completed', worker: platform.worker?.workerId }]);
    } finally {
      await remote.close();
      await view.stop();
    }
  });
});
