import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { perRequestMessage } from '../support/mcp-http.ts';
import { type Platform, startApi, startPlatform, waitForTask } from '../support/task-platform.ts';

const database = useTestDatabase();
const ACME = 'acme-token-0123456789';
const GLOBEX = 'globex-token-0123456789';
const auth = (token = ACME) => ({ authorization: `Bearer ${token}` });

let platform: Platform;
let api: Awaited<ReturnType<typeof startApi>>;
let app: FastifyInstance;

beforeAll(async () => {
  platform = await startPlatform(database.url);
  await platform.startWorker();
  api = await startApi(platform, database.url, {
    tokens: new Map([
      [ACME, 'acme'],
      [GLOBEX, 'globex'],
    ]),
  });
  app = api.app;
});
afterAll(async () => {
  await api.close();
  await platform.stop();
});

async function taskCount(): Promise<number> {
  const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM tasks`.execute(platform.db);
  return rows[0]?.n ?? 0;
}

function expectProblem(
  response: { statusCode: number; headers: Record<string, unknown>; json(): unknown },
  status: number,
  code: string,
) {
  expect(response.statusCode).toBe(status);
  expect(response.headers['content-type']).toBe('application/problem+json; charset=utf-8');
  const body = response.json() as Record<string, unknown>;
  expect(body).toMatchObject({
    status,
    code,
    type: expect.stringMatching(/^urn:taskgate:error:/),
    title: expect.any(String),
  });
  expect(typeof body.detail).toBe('string');
  return body;
}

describe('POST /v1/tasks', () => {
  it('creates a task (201 with Location) that a worker completes', async () => {
    const response = await app.inject({
      method: 'POST',
      url: '/v1/tasks',
      headers: auth(),
      payload: { tool: 'greet', arguments: { name: 'Ada' } },
    });
    expect(response.statusCode).toBe(201);
    const task = response.json();
    expect(response.headers.location).toBe(`/v1/tasks/${task.id}`);
    expect(task).toMatchObject({
      tool: 'greet',
      status: 'working',
      arguments: { name: 'Ada' },
      attempt: 0,
      ttlMs: 3_600_000,
    });
    const done = await waitForTask(
      async () => (await app.inject({ method: 'GET', url: `/v1/tasks/${task.id}`, headers: auth() })).json(),
      (body) => body.status === 'completed',
    );
    expect(done.result.content[0].text).toBe('Hello, Ada!');
  });

  it('answers bad input with a documented problem and creates nothing', async () => {
    const before = await taskCount();
    const post = (payload: string, contentType = 'application/json') =>
      app.inject({ method: 'POST', url: '/v1/tasks', headers: { ...auth(), 'content-type': contentType }, payload });

    expectProblem(await post(JSON.stringify({ tool: 'launch_rockets' })), 422, 'TG_TOOL_UNKNOWN');
    const invalid = expectProblem(
      await post(JSON.stringify({ tool: 'slow_compute', arguments: { seconds: 'ten' } })),
      422,
      'TG_TOOL_ARGUMENTS_INVALID',
    );
    expect(invalid.errors).toEqual([{ path: '/seconds', message: 'must be number' }]);
    expectProblem(await post('{"tool": "greet",'), 400, 'TG_MALFORMED_JSON');
    expectProblem(await post(''), 400, 'TG_MALFORMED_JSON');
    expectProblem(await post(JSON.stringify({ arguments: {} })), 400, 'TG_REQUEST_INVALID');
    expectProblem(
      await post(JSON.stringify({ tool: 'greet', arguments: { name: 'x' }, priority: 9 })),
      400,
      'TG_REQUEST_INVALID',
    );
    expectProblem(
      await post(JSON.stringify({ tool: 'greet', arguments: { name: 'x' }, ttlMs: 0 })),
      400,
      'TG_REQUEST_INVALID',
    );
    expectProblem(await post(JSON.stringify({ tool: 'greet', arguments: [] })), 400, 'TG_REQUEST_INVALID');
    expectProblem(await post('tool=greet', 'text/plain'), 415, 'TG_UNSUPPORTED_MEDIA_TYPE');
    const huge = JSON.stringify({ tool: 'greet', arguments: { name: 'x'.repeat(1_100_000) } });
    expectProblem(await post(huge), 413, 'TG_BODY_TOO_LARGE');
    expect(await taskCount()).toBe(before);
  });
});

describe('GET /v1/tasks', () => {
  it('pages through a tenant’s tasks newest first with keyset cursors, without gaps or repeats', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const response = await app.inject({
        method: 'POST',
        url: '/v1/tasks',
        headers: auth(GLOBEX),
        payload: { tool: 'greet', arguments: { name: `n${i}` } },
      });
      ids.push(response.json().id);
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const url: string = `/v1/tasks?limit=2${cursor ? `&cursor=${cursor}` : ''}`;
      const page = (await app.inject({ method: 'GET', url, headers: auth(GLOBEX) })).json();
      expect(page.tasks.length).toBeLessThanOrEqual(2);
      seen.push(...page.tasks.map((task: { id: string }) => task.id));
      cursor = page.nextCursor;
    } while (cursor);
    expect(seen).toEqual([...ids].reverse());
  });

  it('filters by status, and refuses a bad cursor, limit or status', async () => {
    const completed = await waitForTask(
      async () =>
        (
          await app.inject({ method: 'GET', url: '/v1/tasks?status=completed&limit=100', headers: auth(GLOBEX) })
        ).json(),
      (page) => page.tasks.length === 5,
    );
    expect(completed.tasks.every((task: { status: string }) => task.status === 'completed')).toBe(true);
    expectProblem(
      await app.inject({ method: 'GET', url: '/v1/tasks?cursor=bm90LWEtY3Vyc29y', headers: auth() }),
      400,
      'TG_CURSOR_INVALID',
    );
    expectProblem(
      await app.inject({ method: 'GET', url: '/v1/tasks?limit=0', headers: auth() }),
      400,
      'TG_REQUEST_INVALID',
    );
    expectProblem(
      await app.inject({ method: 'GET', url: '/v1/tasks?limit=1001', headers: auth() }),
      400,
      'TG_REQUEST_INVALID',
    );
    expectProblem(
      await app.inject({ method: 'GET', url: '/v1/tasks?status=paused', headers: auth() }),
      400,
      'TG_REQUEST_INVALID',
    );
  });
});

describe('tenancy and auth', () => {
  it('answers 401 without a valid bearer token', async () => {
    const missing = await app.inject({ method: 'GET', url: '/v1/tasks' });
    expectProblem(missing, 401, 'TG_UNAUTHORIZED');
    expect(missing.headers['www-authenticate']).toBe('Bearer realm="taskgate"');
    expectProblem(
      await app.inject({ method: 'GET', url: '/v1/tasks', headers: auth('wrong-token-000000000') }),
      401,
      'TG_UNAUTHORIZED',
    );
    expectProblem(
      await app.inject({ method: 'GET', url: '/v1/tasks', headers: { authorization: `Basic ${ACME}` } }),
      401,
      'TG_UNAUTHORIZED',
    );
  });

  it('shows another tenant’s task as not found (404, never 403) for read, cancel and watch', async () => {
    const task = (
      await app.inject({
        method: 'POST',
        url: '/v1/tasks',
        headers: auth(ACME),
        payload: { tool: 'greet', arguments: { name: 'Mine' } },
      })
    ).json();
    for (const [method, url] of [
      ['GET', `/v1/tasks/${task.id}`],
      ['POST', `/v1/tasks/${task.id}/cancel`],
      ['GET', `/v1/tasks/${task.id}/events`],
    ] as const) {
      expectProblem(await app.inject({ method, url, headers: auth(GLOBEX) }), 404, 'TG_TASK_NOT_FOUND');
    }
    const listed = (await app.inject({ method: 'GET', url: '/v1/tasks?limit=100', headers: auth(GLOBEX) })).json();
    expect(listed.tasks.map((t: { id: string }) => t.id)).not.toContain(task.id);
  });
});

describe('POST /v1/tasks/:id/cancel', () => {
  it('is 404 for an unknown id and 202 unchanged for a terminal task', async () => {
    expectProblem(
      await app.inject({
        method: 'POST',
        url: '/v1/tasks/00000000-0000-4000-8000-000000000000/cancel',
        headers: auth(),
      }),
      404,
      'TG_TASK_NOT_FOUND',
    );
    expectProblem(
      await app.inject({ method: 'POST', url: '/v1/tasks/not-a-task/cancel', headers: auth() }),
      404,
      'TG_TASK_NOT_FOUND',
    );
    const task = (
      await app.inject({
        method: 'POST',
        url: '/v1/tasks',
        headers: auth(),
        payload: { tool: 'greet', arguments: { name: 'Done' } },
      })
    ).json();
    const done = await waitForTask(
      async () => (await app.inject({ method: 'GET', url: `/v1/tasks/${task.id}`, headers: auth() })).json(),
      (body) => body.status === 'completed',
    );
    const cancel = await app.inject({
      method: 'POST',
      url: `/v1/tasks/${task.id}/cancel`,
      headers: auth(),
      payload: { reason: 'late' },
    });
    expect(cancel.statusCode).toBe(202);
    expect(cancel.json()).toEqual(done);
  });

  it('is 202 with the task still working and cancelRequestedAt set, then the task ends cancelled', async () => {
    const task = (
      await app.inject({
        method: 'POST',
        url: '/v1/tasks',
        headers: auth(),
        payload: { tool: 'slow_compute', arguments: { seconds: 30 } },
      })
    ).json();
    await waitForTask(
      async () => (await app.inject({ method: 'GET', url: `/v1/tasks/${task.id}`, headers: auth() })).json(),
      (body) => body.attempt === 1,
    );
    const cancel = await app.inject({ method: 'POST', url: `/v1/tasks/${task.id}/cancel`, headers: auth() });
    expect(cancel.statusCode).toBe(202);
    expect(cancel.json()).toMatchObject({
      status: 'working',
      cancelRequestedAt: expect.any(String),
      cancelReason: null,
    });
    const ended = await waitForTask(
      async () => (await app.inject({ method: 'GET', url: `/v1/tasks/${task.id}`, headers: auth() })).json(),
      (body) => body.status !== 'working',
    );
    expect(ended.status).toBe('cancelled');
    expectProblem(
      await app.inject({
        method: 'POST',
        url: `/v1/tasks/${task.id}/cancel`,
        headers: auth(),
        payload: { reason: 'x', extra: 1 },
      }),
      400,
      'TG_REQUEST_INVALID',
    );
  });
});

describe('GET /v1/tools', () => {
  it('lists the tools MCP tools/list offers, from the same catalog, to an authenticated caller', async () => {
    expectProblem(await app.inject({ method: 'GET', url: '/v1/tools' }), 401, 'TG_UNAUTHORIZED');
    const response = await app.inject({ method: 'GET', url: '/v1/tools', headers: auth() });
    expect(response.statusCode).toBe(200);
    const { tools } = response.json() as { tools: Record<string, unknown>[] };
    const names = tools.map((tool) => tool.name);
    expect(names).toEqual([...names].sort());
    const mcp = perRequestMessage('tools/list', {});
    const listed = await app.inject({
      method: 'POST',
      url: '/mcp',
      headers: { ...mcp.headers, ...auth() },
      payload: mcp.body,
    });
    const offered = (listed.json() as { result: { tools: { name: string }[] } }).result.tools;
    expect(names).toEqual(offered.map((tool) => tool.name));
    expect(tools.find((tool) => tool.name === 'greet')).toEqual({
      name: 'greet',
      title: 'Greet',
      description: 'Says hello. Answers at once; useful to check that calls get through.',
      inputSchema: expect.objectContaining({ required: ['name'] }),
      annotations: { title: 'Greet', readOnlyHint: true, idempotentHint: true, openWorldHint: false },
      // An inline tool: answered in the request, never as an MCP task.
      taskSupport: 'forbidden',
      retry: 'safe',
      timeouts: { maxMs: 10_000 },
    });
    expect(tools.find((tool) => tool.name === 'charge_account')).toMatchObject({
      retry: 'conditional',
      idempotencyKey: 'required',
    });
  });
});

describe('GET /', () => {
  it('redirects a browser to the console and tells a JSON client where everything is', async () => {
    const browser = await app.inject({
      method: 'GET',
      url: '/',
      headers: { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' },
    });
    expect(browser.statusCode).toBe(302);
    expect(browser.headers.location).toBe('/ui');
    const page = await app.inject({ method: 'GET', url: String(browser.headers.location) });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toContain('text/html');

    for (const accept of ['application/json', '*/*', undefined]) {
      const index = await app.inject({ method: 'GET', url: '/', headers: accept ? { accept } : {} });
      expect(index.statusCode, String(accept)).toBe(200);
      expect(index.headers['content-type']).toContain('application/json');
      expect(index.json()).toMatchObject({ name: 'taskgate', links: { docs: '/docs', openapi: '/openapi.json' } });
    }
    // Every link leads somewhere: nothing it names is an unknown endpoint.
    const { links } = (await app.inject({ method: 'GET', url: '/' })).json() as { links: Record<string, string> };
    expect(Object.keys(links).sort()).toEqual(
      ['console', 'docs', 'health', 'mcp', 'metrics', 'openapi', 'ready', 'tasks', 'tools'].sort(),
    );
    for (const [name, url] of Object.entries(links)) {
      if (name === 'mcp') continue; // GET /mcp is a stream; its POST is tested in test/mcp
      const answer = await app.inject({ method: 'GET', url, headers: auth() });
      // /metrics asks for the metrics token, which a tenant's token is not.
      expect(answer.statusCode, url).toBe(name === 'metrics' ? 401 : 200);
    }
  });
});

describe('the OpenAPI document', () => {
  it('describes the /v1 endpoints from the same schemas that validate them', async () => {
    const response = await app.inject({ method: 'GET', url: '/openapi.json' });
    expect(response.statusCode).toBe(200);
    const document = response.json();
    expect(document.openapi).toBe('3.1.0');
    expect(Object.keys(document.paths).sort()).toEqual([
      '/healthz',
      '/metrics',
      '/readyz',
      '/ui/session',
      '/v1/accounts/{account}/charges',
      '/v1/elicitations/{elicitationId}/complete',
      '/v1/idempotency-keys/{key}',
      '/v1/instances',
      '/v1/inventory/{sku}',
      '/v1/inventory/{sku}/reservations',
      '/v1/outbox',
      '/v1/outbox/events',
      '/v1/outbox/events/{id}/redeliver',
      '/v1/reconciliation-items',
      '/v1/reconciliation-items/{id}',
      '/v1/reconciliation-items/{id}/resolve',
      '/v1/tasks',
      '/v1/tasks/events',
      '/v1/tasks/{id}',
      '/v1/tasks/{id}/cancel',
      '/v1/tasks/{id}/events',
      '/v1/tasks/{id}/logs',
      '/v1/tasks/{id}/steps',
      '/v1/tasks/{id}/timeline',
      '/v1/tenants',
      '/v1/tools',
      '/v1/tools/stats',
    ]);
    expect(document.paths['/v1/tools'].get.responses['200']).toBeDefined();
    expect(document.components.schemas.Tool.properties.retry).toBeDefined();
    expect(document.paths['/v1/tasks'].post.requestBody.content['application/json'].schema.required).toEqual(['tool']);
    expect(document.paths['/v1/tasks'].post.parameters).toContainEqual(
      expect.objectContaining({ in: 'header', name: 'idempotency-key', required: false }),
    );
    // A charge runs only under a key: its document says so (a missing key is still its own code).
    expect(document.paths['/v1/accounts/{account}/charges'].post.parameters).toContainEqual(
      expect.objectContaining({ in: 'header', name: 'idempotency-key', required: true }),
    );
    expect(document.components.schemas.Task.properties.status).toBeDefined();
    expect(document.components.securitySchemes.bearer).toEqual({
      type: 'http',
      scheme: 'bearer',
      description: 'a token from TASKGATE_TOKENS, or an OAuth access token from TASKGATE_OAUTH_ISSUER (docs/oauth.md)',
    });
    const docs = await app.inject({ method: 'GET', url: '/docs/' });
    expect(docs.statusCode).toBe(200);
    expect(docs.headers['content-type']).toContain('text/html');
  });

  it('answers unknown endpoints with a problem', async () => {
    expectProblem(await app.inject({ method: 'GET', url: '/v2/tasks' }), 404, 'TG_NOT_FOUND');
  });
});
