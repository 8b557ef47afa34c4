import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { defineResourceTemplate } from '@taskgate/sdk';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { perRequestMessage, readSse } from '../support/mcp-http.ts';
import { type Barrier, barrier, type Platform, startApi, startPlatform } from '../support/task-platform.ts';

// Every request on a POST runs through the dispatcher and is answered by one writer
// (apps/api/src/mcp/transports/http/post-answer.ts), whatever its method and revision: closing its response
// cancels it, and one still running after the SSE threshold is answered as SSE with keepalives.
// Before, only tools/call had both; a 2026-07-28 resources/read ran on for nobody.
const database = useTestDatabase();

/** Reads of held://{name} wait for the test's gate (or their request's cancel). */
let gate: Barrier = barrier();
let reads = 0;
let aborted = 0;
const held = defineResourceTemplate({
  uriTemplate: 'held://{name}',
  name: 'held',
  timeoutMs: 60_000,
  read: async (uri, _variables, ctx) => {
    reads += 1;
    await new Promise<void>((resolve, reject) => {
      void gate.promise.then(resolve);
      ctx.signal.addEventListener('abort', () => {
        aborted += 1;
        reject(ctx.signal.reason);
      });
    });
    return [{ text: `read ${uri}` }];
  },
});

let platform: Platform;
let defaults: { app: FastifyInstance; close(): Promise<void> };
let switching: { app: FastifyInstance; close(): Promise<void> };
beforeAll(async () => {
  platform = await startPlatform(database.url);
  const content = [{ resourceTemplates: [held] }];
  defaults = await startApi(platform, database.url, { content });
  // Every request outlives a threshold of 0; keepalives every 50 ms make the quiet stream visible.
  switching = await startApi(platform, database.url, {
    content,
    mcp: { sseAfterMs: 0 },
    events: { keepaliveMs: 50 },
  });
  for (const api of [defaults, switching]) await api.app.listen({ host: '127.0.0.1', port: 0 });
});
afterAll(async () => {
  gate.resolve();
  for (const api of [defaults, switching]) await api.close();
  await platform.stop();
});

const KINDS = {
  '2026-07-28': (uri: string, id: string) => perRequestMessage('resources/read', { uri }, { id }),
  '2025-11-25, no session': (uri: string, id: string) => ({
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-11-25',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'resources/read', params: { uri } }),
  }),
};

function post(api: { app: FastifyInstance }, message: { headers: Record<string, string>; body: string }) {
  const request = http.request({
    host: '127.0.0.1',
    port: (api.app.server.address() as AddressInfo).port,
    path: '/mcp',
    method: 'POST',
    headers: { ...message.headers, 'content-length': Buffer.byteLength(message.body) },
  });
  const response = new Promise<http.IncomingMessage>((resolve, reject) => {
    request.on('response', resolve);
    request.on('error', reject);
  });
  request.end(message.body);
  return { request, response };
}

describe.each(Object.entries(KINDS))('a resources/read on a POST (%s)', (_kind, message) => {
  it('is cancelled by closing its response: the read sees its abort', async () => {
    gate = barrier();
    const before = { reads, aborted };
    const { request, response } = post(defaults, message(`held://close-${reads}`, `close-${reads}`));
    response.catch(() => {});
    // The read is running (it counted itself) before the client goes away.
    await expect.poll(() => reads).toBe(before.reads + 1);
    request.destroy();
    await expect.poll(() => aborted).toBe(before.aborted + 1);
  });

  it('still running after the threshold, is answered as SSE: headers and keepalives, then the result', async () => {
    gate = barrier();
    const uri = `held://sse-${reads}`;
    const { response } = post(switching, message(uri, 'sse-1'));
    // The headers arrive while the read is held: the switch happened before the answer.
    const answer = await response;
    expect(answer.statusCode).toBe(200);
    expect(answer.headers['content-type']).toBe('text/event-stream');
    const sse = readSse(answer);
    await sse.quiet;
    gate.resolve();
    const text = await sse.text;
    const events = text
      .split('\n')
      .filter((line) => line.startsWith('data: '))
      .map((line) => JSON.parse(line.slice('data: '.length)) as { id?: unknown; result?: { contents?: unknown } });
    expect(events).toHaveLength(1);
    expect(events[0]?.id).toBe('sse-1');
    expect(events[0]?.result?.contents).toEqual([expect.objectContaining({ uri, text: `read ${uri}` })]);
  });
});
