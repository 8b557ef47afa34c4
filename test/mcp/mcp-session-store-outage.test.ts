import { createAuthenticator, TaskEventsHub } from '@taskgate/api';
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { memorySessionStore, type SessionStore } from '../../apps/api/src/mcp/transports/http/handshake-sessions.ts';
import { registerMcpRoute } from '../../apps/api/src/mcp/transports/http/mcp-route.ts';
import { useTestDatabase } from '../support/databases.ts';
import { testCore } from '../support/stdio-client.ts';
import { type Platform, silentLogger, startPlatform, waitForTask } from '../support/task-platform.ts';

// Handshake sessions live in Postgres; here only the session store is made unreachable (the
// tasks' database still answers), to show what a session's requests get while its lookup fails:
// a batch's requests their own ids, and a POSTed cancel still reaches the request running here.
const database = useTestDatabase();
let platform: Platform;
let hub: TaskEventsHub;
let down = false;
const memory = memorySessionStore();
const store: SessionStore = {
  ...memory,
  find: async (id, tenant) => {
    if (down) throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    return memory.find(id, tenant);
  },
};
const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

beforeAll(async () => {
  platform = await startPlatform(database.url);
  await platform.startWorker();
  hub = new TaskEventsHub({ connectionString: database.url, listen: true, logger: silentLogger });
  await hub.start();
});
afterAll(async () => {
  await hub.stop();
  await platform.stop();
});

async function route() {
  const app = Fastify();
  registerMcpRoute(app, {
    core: testCore(platform, hub),
    server: { name: 'taskgate', version: 'test' },
    auth: createAuthenticator({ tokens: new Map(), unauthenticatedTenant: 'default' }),
    sessions: store,
  });
  await app.ready();
  return app;
}

async function openSession(app: Awaited<ReturnType<typeof route>>, protocolVersion: string) {
  down = false;
  const opened = await app.inject({
    method: 'POST',
    url: '/mcp',
    headers,
    payload: {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion, capabilities: {}, clientInfo: { name: 'outage', version: '1' } },
    },
  });
  const sessionId = opened.headers['mcp-session-id'] as string;
  expect(sessionId).toEqual(expect.any(String));
  return { ...headers, 'mcp-session-id': sessionId, 'mcp-protocol-version': protocolVersion };
}

describe('while the session store is unreachable', () => {
  it('answers each request of a batch by its own id: 503, -31503, Retry-After', async () => {
    const app = await route();
    const inSession = await openSession(app, '2025-03-26');
    down = true;
    const batch = await app.inject({
      method: 'POST',
      url: '/mcp',
      headers: inSession,
      payload: [
        { jsonrpc: '2.0', id: 8, method: 'tools/list' },
        { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'x', progress: 1 } },
        { jsonrpc: '2.0', id: 9, method: 'ping' },
      ],
    });
    await app.close();
    expect(batch.statusCode).toBe(503);
    expect(batch.headers['retry-after']).toBe('5');
    expect(
      (batch.json() as { id: unknown; error: { code: number } }[]).map(({ id, error }) => [id, error.code]),
    ).toEqual([
      [8, -31503],
      [9, -31503],
    ]);
  });

  it('still cancels a request of the session running here, on a POSTed notifications/cancelled', async () => {
    const app = await route();
    const inSession = await openSession(app, '2025-11-25');
    const call = app.inject({
      method: 'POST',
      url: '/mcp',
      headers: inSession,
      payload: {
        jsonrpc: '2.0',
        id: 'long',
        method: 'tools/call',
        params: { name: 'slow_compute', arguments: { seconds: 30, label: 'store-outage' } },
      },
    });
    const running = await waitForTask(
      async () =>
        (await platform.service.list('default', { limit: 100 })).tasks.find(
          (task) => task.tool === 'slow_compute' && task.startedAt !== null,
        ),
      (task) => task !== undefined,
    );
    down = true;
    const cancel = await app.inject({
      method: 'POST',
      url: '/mcp',
      headers: inSession,
      payload: { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'long', reason: 'stop it' } },
    });
    expect(cancel.statusCode).toBe(202);
    const ended = await waitForTask(
      () => platform.service.get('default', (running as { id: string }).id),
      (task) => task.status !== 'working',
    );
    expect(ended).toMatchObject({ status: 'cancelled', cancelReason: 'stop it' });
    // A cancelled request gets no answer: its POST ends without one.
    expect((await call).statusCode).toBe(204);
    down = false;
    await app.close();
  }, 30_000);
});
