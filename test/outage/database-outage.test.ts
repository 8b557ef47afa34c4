import { type McpCore, TaskEventsHub } from '@taskgate/api';
import { loadMigrations, MigrationRunner } from '@taskgate/db';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { answerOf, injectMcp } from '../support/mcp-http.ts';
import { PostgresCluster } from '../support/postgres-cluster.ts';
import { expectProblem } from '../support/problems.ts';
import { connectStdio, stdioCore } from '../support/stdio-client.ts';
import { type Platform, silentLogger, startApi, startPlatform } from '../support/task-platform.ts';

// A real outage: the API runs against a Postgres of this test's own, which is stopped (a fast
// shutdown: open connections are terminated, new ones refused) and started again.
let server: PostgresCluster;
let platform: Platform;
let api: Awaited<ReturnType<typeof startApi>>;
let hub: TaskEventsHub;
let core: McpCore;

beforeAll(async () => {
  server = await PostgresCluster.temporary();
  const url = server.url('postgres');
  await new MigrationRunner({ connectionString: url, migrations: await loadMigrations() }).up();
  platform = await startPlatform(url);
  // The worker lives through the outage too: the call made after it must be run.
  await platform.startWorker();
  api = await startApi(platform, url);
  hub = new TaskEventsHub({ connectionString: url, listen: true, logger: silentLogger });
  await hub.start();
  core = stdioCore(platform, hub);
}, 120_000);
afterAll(async () => {
  await hub?.stop();
  await api?.close();
  await platform?.stop();
  server?.destroy();
});

const TASKS = { extensions: { 'io.modelcontextprotocol/tasks': {} } };

function expectRestOutage(response: LightMyRequestResponse) {
  expectProblem(response, 503, 'TG_SERVICE_UNAVAILABLE');
  expect(response.headers['retry-after']).toBe('5');
}

/** A 2025-11-25 initialize, with no session yet. */
function injectInitialize(id: number): Promise<LightMyRequestResponse> {
  return api.app.inject({
    method: 'POST',
    url: '/mcp',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    payload: {
      jsonrpc: '2.0',
      id,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'outage', version: '1' } },
    },
  });
}

/** A 2025-11-25 request in the session opened before the outage. */
function injectInSession(sessionId: string, id: number, method: string, params: Record<string, unknown>) {
  return api.app.inject({
    method: 'POST',
    url: '/mcp',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-11-25',
      'mcp-session-id': sessionId,
    },
    payload: { jsonrpc: '2.0', id, method, params },
  });
}

function expectMcpOutage(response: LightMyRequestResponse, id: number | string | null) {
  expect(response.statusCode).toBe(503);
  expect(response.headers['retry-after']).toBe('5');
  expect(response.json()).toEqual({
    jsonrpc: '2.0',
    id,
    error: {
      code: -31503,
      message: expect.stringContaining('retry'),
      data: { code: 'TG_SERVICE_UNAVAILABLE', retryAfterSeconds: 5 },
    },
  });
}

describe('while the database is unreachable', () => {
  it('REST, MCP over HTTP and MCP over stdio answer 503 / -31503 with Retry-After, and serve again after', async () => {
    const json = { 'content-type': 'application/json' };
    const created = await api.app.inject({
      method: 'POST',
      url: '/v1/tasks',
      headers: json,
      payload: { tool: 'greet', arguments: { name: 'before' } },
    });
    expect(created.statusCode).toBe(201);
    const taskId = created.json().id as string;
    // A 2025-11-25 session stored before the outage must still serve after it.
    const session = await injectInitialize(10);
    expect(session.statusCode).toBe(200);
    const sessionId = session.headers['mcp-session-id'] as string;
    expect(sessionId).toEqual(expect.any(String));

    await server.fastStop();

    expectRestOutage(
      await api.app.inject({
        method: 'POST',
        url: '/v1/tasks',
        headers: json,
        payload: { tool: 'greet', arguments: { name: 'x' } },
      }),
    );
    expectRestOutage(await api.app.inject({ method: 'GET', url: `/v1/tasks/${taskId}` }));
    expectRestOutage(await api.app.inject({ method: 'GET', url: '/v1/tasks?limit=5' }));
    expectRestOutage(await api.app.inject({ method: 'POST', url: `/v1/tasks/${taskId}/cancel` }));
    expectRestOutage(
      await api.app.inject({
        method: 'POST',
        url: '/v1/accounts/a/charges',
        headers: { ...json, 'idempotency-key': 'outage-1' },
        payload: { cents: 5 },
      }),
    );
    expectRestOutage(
      await api.app.inject({ method: 'PUT', url: '/v1/inventory/s', headers: json, payload: { available: 1 } }),
    );
    expectRestOutage(await api.app.inject({ method: 'GET', url: '/v1/idempotency-keys/outage-1' }));

    expectMcpOutage(
      await injectMcp(api.app, 'tools/call', { name: 'greet', arguments: { name: 'x' } }, { id: 11 }),
      11,
    );
    expectMcpOutage(await injectMcp(api.app, 'tasks/get', { taskId }, { id: 12, capabilities: TASKS }), 12);
    // A task resource is read from the database too: the same 503, not a -32603 naming it.
    expectMcpOutage(await injectMcp(api.app, 'resources/read', { uri: `taskgate://tasks/${taskId}` }, { id: 16 }), 16);
    const legacy = await api.app.inject({
      method: 'POST',
      url: '/mcp',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2025-11-25',
      },
      payload: { jsonrpc: '2.0', id: 13, method: 'tasks/list', params: {} },
    });
    expectMcpOutage(legacy, 13);
    // A 2025-11-25 initialize stores its session before it answers: no session id is handed out
    // for a session that was never stored.
    const initialize = await injectInitialize(15);
    expectMcpOutage(initialize, 15);
    expect(initialize.headers['mcp-session-id']).toBeUndefined();
    // The stored session is looked up in the database: unreachable is 503, not "no such session".
    expectMcpOutage(await injectInSession(sessionId, 19, 'tools/list', {}), 19);
    // Its GET stream and its DELETE too (no request id to answer): 503, and the session is kept.
    for (const method of ['GET', 'DELETE'] as const) {
      const headers = {
        accept: 'text/event-stream',
        'mcp-protocol-version': '2025-11-25',
        'mcp-session-id': sessionId,
      };
      expectMcpOutage(await api.app.inject({ method, url: '/mcp', headers }), null);
    }

    const stdio = connectStdio(core);
    const meta = {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientCapabilities': {},
    };
    stdio.send({
      jsonrpc: '2.0',
      id: 14,
      method: 'tools/call',
      params: { name: 'greet', arguments: { name: 'x' }, _meta: meta },
    });
    expect(await stdio.answerTo(14)).toEqual({
      jsonrpc: '2.0',
      id: 14,
      error: {
        code: -31503,
        message: expect.stringContaining('retry'),
        data: { code: 'TG_SERVICE_UNAVAILABLE', retryAfterSeconds: 5 },
      },
    });
    stdio.input.end();
    await stdio.server.closed;

    await server.start();

    const after = await api.app.inject({
      method: 'POST',
      url: '/v1/tasks',
      headers: json,
      payload: { tool: 'greet', arguments: { name: 'after' } },
    });
    expect(after.statusCode).toBe(201);
    expect((await api.app.inject({ method: 'GET', url: `/v1/tasks/${taskId}` })).statusCode).toBe(200);
    const opened = await injectInitialize(17);
    expect(opened.statusCode).toBe(200);
    expect(opened.headers['mcp-session-id']).toEqual(expect.any(String));
    expect(opened.json()).toMatchObject({ id: 17, result: { protocolVersion: '2025-11-25' } });
    const kept = await injectInSession(sessionId, 18, 'tools/call', { name: 'greet', arguments: { name: 'kept' } });
    expect(kept.statusCode).toBe(200);
    expect(answerOf(kept.headers['content-type'], kept.body)).toMatchObject({
      id: 18,
      result: { content: [{ type: 'text', text: 'Hello, kept!' }] },
    });
  });
});
