import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { defineTool, ToolProtocolError } from '@taskgate/sdk';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { perRequestMessage, readSse } from '../support/mcp-http.ts';
import { type Barrier, barrier, type Platform, startApi, startPlatform } from '../support/task-platform.ts';

// A tools/call that outlives the SSE threshold is answered as an SSE stream: the status and headers
// go out while the task runs, `:` keepalives follow, and the response ends the stream. A call that
// ends first is a plain JSON response.
const database = useTestDatabase();
const release: Barrier = barrier();
const protocolError = defineTool({
  name: 'protocol_error',
  description: 'fails with a JSON-RPC error',
  inputSchema: { type: 'object' },
  retry: 'safe',
  async handler() {
    throw new ToolProtocolError(-32603, 'failed on purpose');
  },
});
const held = defineTool({
  name: 'held',
  description: 'returns once the test releases it',
  inputSchema: { type: 'object' },
  retry: 'safe',
  async handler() {
    await release.promise;
    return { content: [{ type: 'text', text: 'released' }] };
  },
});

let platform: Platform;
let switching: { app: FastifyInstance; close(): Promise<void> };
let defaults: { app: FastifyInstance; close(): Promise<void> };
beforeAll(async () => {
  platform = await startPlatform(database.url, { tools: [held, protocolError] as never });
  await platform.startWorker();
  // Every call outlives a threshold of 0; keepalives every 50 ms make the quiet stream visible.
  switching = await startApi(platform, database.url, { mcp: { sseAfterMs: 0 }, events: { keepaliveMs: 50 } });
  defaults = await startApi(platform, database.url);
  for (const api of [switching, defaults]) await api.app.listen({ host: '127.0.0.1', port: 0 });
});
afterAll(async () => {
  for (const api of [switching, defaults]) await api.close();
  await platform.stop();
});

function call(api: { app: FastifyInstance }, id: string, tool: string, args: Record<string, unknown>) {
  const { headers, body } = perRequestMessage('tools/call', { name: tool, arguments: args }, { id });
  return new Promise<http.IncomingMessage>((resolve, reject) => {
    const request = http.request({
      host: '127.0.0.1',
      port: (api.app.server.address() as AddressInfo).port,
      path: '/mcp',
      method: 'POST',
      headers: { ...headers, 'content-length': Buffer.byteLength(body) },
    });
    request.on('response', resolve);
    request.on('error', reject);
    request.end(body);
  });
}

describe('the SSE threshold of tools/call', () => {
  it('answers a call still running after the threshold as SSE: headers first, keepalives, then the response', async () => {
    const response = await call(switching, 'long-1', 'held', {});
    // The headers arrived while the handler is still held: the switch happened before the result.
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('text/event-stream');
    expect(response.headers['cache-control']).toBe('no-cache');
    expect(response.headers['x-accel-buffering']).toBe('no');
    const sse = readSse(response);
    await sse.quiet;
    // A keepalive came while the call was quiet; only now may the handler return.
    release.resolve();
    const text = await sse.text;
    const frames = text.split('\n\n').filter((frame) => frame.length > 0);
    const data = frames.filter((frame) => frame.startsWith('data: '));
    expect(frames.filter((frame) => frame.startsWith(':')).length).toBeGreaterThan(0);
    // No progress token: the response is the only message, and it ends the stream.
    expect(data).toHaveLength(1);
    expect(JSON.parse((data[0] as string).slice('data: '.length))).toMatchObject({
      id: 'long-1',
      result: { resultType: 'complete', content: [{ type: 'text', text: 'released' }] },
    });
    expect(frames.at(-1)?.startsWith('data: ')).toBe(true);
  });

  it("sends a protocol error after the switch as the SSE stream's one message", async () => {
    const response = await call(switching, 'long-2', 'protocol_error', {});
    expect(response.headers['content-type']).toBe('text/event-stream');
    let text = '';
    for await (const chunk of response) text += (chunk as Buffer).toString();
    const data = text.split('\n\n').filter((frame) => frame.startsWith('data: '));
    expect(data).toHaveLength(1);
    expect(JSON.parse((data[0] as string).slice('data: '.length))).toMatchObject({ id: 'long-2', error: {} });
  });

  it('answers a call that ends before the default threshold (1 s) as JSON', async () => {
    const response = await call(defaults, 'short-1', 'greet', { name: 'Ada' });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    let text = '';
    for await (const chunk of response) text += (chunk as Buffer).toString();
    expect(JSON.parse(text)).toMatchObject({ id: 'short-1', result: { resultType: 'complete' } });
  });
});
