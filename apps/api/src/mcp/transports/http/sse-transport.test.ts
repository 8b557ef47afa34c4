import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import type { McpCore } from '../../core/mcp-core.ts';
import { registerHttpSse } from './sse-transport.ts';

// What the HTTP+SSE transport bounds on its own, before any message reaches a connection: how many
// streams a process and a tenant hold, a stream nobody speaks on, HEAD, and the Accept header.
// No request is served here, so the connections' core is never asked anything.
const NO_CORE = {} as McpCore;
let app: FastifyInstance;
let base: URL;
const open: AbortController[] = [];

async function serve(limits: { maxSessions?: number; firstMessageMs?: number }) {
  // Idle keep-alive sockets of the test's fetches would hold close() for their 4 s timeout.
  app = Fastify({ forceCloseConnections: true });
  registerHttpSse(app, {
    core: NO_CORE,
    server: { name: 'taskgate', version: 'test' },
    tenantOf: (request) => String(request.headers['x-tenant'] ?? 'default'),
    keepaliveMs: 60_000,
    shutdownGraceMs: 100,
    ...limits,
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  base = new URL(`http://127.0.0.1:${(app.server.address() as AddressInfo).port}`);
}

afterEach(async () => {
  for (const controller of open.splice(0)) controller.abort();
  await app.close();
});

/** GET /sse as `tenant`: the status, and for a stream its endpoint and when it ended. */
async function connect(tenant: string, accept: string | null = 'text/event-stream') {
  const controller = new AbortController();
  open.push(controller);
  const response = await fetch(new URL('/sse', base), {
    headers: { 'x-tenant': tenant, ...(accept === null ? {} : { accept }) },
    signal: controller.signal,
  });
  if (response.status !== 200) return { status: response.status, text: await response.text() };
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const first = new TextDecoder().decode((await reader.read()).value);
  const endpoint = new URL(/data: (\S+)/.exec(first)?.[1] as string, base);
  const ended = (async () => {
    try {
      while (!(await reader.read()).done);
    } catch {
      // Aborted by the test.
    }
  })();
  return { status: 200, endpoint, ended };
}

const post = (endpoint: URL, tenant: string) =>
  fetch(endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-tenant': tenant },
    body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
  });

describe('the HTTP+SSE transport', () => {
  it('holds at most half its connections for one tenant, and refuses past its total', async () => {
    await serve({ maxSessions: 4 });
    expect((await connect('acme')).status).toBe(200);
    expect((await connect('acme')).status).toBe(200);
    const third = await connect('acme');
    expect(third).toMatchObject({ status: 503 });
    expect(third.text).toContain('this tenant holds 2 HTTP+SSE connections already');
    expect((await connect('globex')).status).toBe(200);
    expect((await connect('globex')).status).toBe(200);
    const fifth = await connect('initech');
    expect(fifth).toMatchObject({ status: 503 });
    expect(fifth.text).toContain('this server holds 4 HTTP+SSE connections already');
    // A closed stream frees its slot.
    open[0]?.abort();
    await expect.poll(async () => (await connect('initech')).status).toBe(200);
  });

  it('closes a stream whose client sends nothing, and keeps one that spoke', async () => {
    await serve({ firstMessageMs: 200 });
    // Opened first, so its timer would fire first: it must have been cleared by the POST.
    const spoke = await connect('acme');
    expect(spoke.status).toBe(200);
    expect((await post(spoke.endpoint as URL, 'acme')).status).toBe(202);
    const silent = await connect('acme');
    await silent.ended;
    expect((await post(spoke.endpoint as URL, 'acme')).status).toBe(202);
    expect((await post(silent.endpoint as URL, 'acme')).status).toBe(404);
  });

  it('answers HEAD at once without a connection, and reads Accept as HTTP does', async () => {
    await serve({ maxSessions: 2 });
    const head = await fetch(new URL('/sse', base), { method: 'HEAD', signal: AbortSignal.timeout(2_000) });
    expect(head.status).toBe(404);
    // No Accept at all allows anything; text/* allows it; q=0 refuses it.
    expect((await connect('a', null)).status).toBe(200);
    expect((await connect('b', 'text/*')).status).toBe(200);
    expect((await connect('c', 'text/event-stream;q=0')).status).toBe(406);
    expect((await connect('c', 'application/json')).status).toBe(406);
  });
});
