import { tenantSkipScan } from '@taskgate/db';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { restScopeOf } from '../../apps/api/src/http/oauth/scopes.ts';
import { useTestDatabase } from '../support/databases.ts';
import { expectProblem } from '../support/problems.ts';
import { planOf } from '../support/query-plans.ts';
import { type Platform, startApi, startPlatform, waitForTask } from '../support/task-platform.ts';

// Operator tokens (TASKGATE_OPERATOR_TOKENS): a token of no tenant that acts, over REST and the
// console, for the tenant each request names — by X-Taskgate-Tenant or ?tenant= — and lists the
// tenants; never an MCP caller. A tenant's token naming a tenant, even its own, is refused.
const database = useTestDatabase();
const ACME = 'acme-operator-test-token-0123';
const GLOBEX = 'globex-operator-test-token-0123';
const OPERATOR = 'operator-test-token-0123456789';
let platform: Platform;
let api: Awaited<ReturnType<typeof startApi>>;

const call = (method: 'GET' | 'POST', url: string, token: string, headers: Record<string, string> = {}) =>
  api.app.inject({
    method,
    url,
    headers: { authorization: `Bearer ${token}`, ...headers },
    ...(method === 'POST' ? { payload: {} } : {}),
  });

let acmeTask: string;
let globexTask: string;

beforeAll(async () => {
  platform = await startPlatform(database.url);
  await platform.startWorker();
  api = await startApi(platform, database.url, {
    tokens: new Map([
      [ACME, 'acme'],
      [GLOBEX, 'globex'],
    ]),
    operatorTokens: new Set([OPERATOR]),
  });
  acmeTask = (await platform.service.create('acme', { tool: 'greet', arguments: { name: 'a' } })).id;
  globexTask = (await platform.service.create('globex', { tool: 'slow_compute', arguments: { seconds: 120 } })).id;
  await waitForTask(
    () => platform.service.get('globex', globexTask),
    (read) => read.startedAt !== null,
  );
});
afterAll(async () => {
  await api.close();
  await platform.stop();
});

describe('an operator token', () => {
  it('acts for the tenant the header names, and only that one', async () => {
    const asGlobex = await call('GET', `/v1/tasks/${globexTask}`, OPERATOR, { 'x-taskgate-tenant': 'globex' });
    expect(asGlobex.statusCode, asGlobex.body).toBe(200);
    expect(asGlobex.json().id).toBe(globexTask);
    // The same task named under another tenant is not there.
    expectProblem(
      await call('GET', `/v1/tasks/${globexTask}`, OPERATOR, { 'x-taskgate-tenant': 'acme' }),
      404,
      'TG_TASK_NOT_FOUND',
    );
    const list = await call('GET', '/v1/tasks', OPERATOR, { 'x-taskgate-tenant': 'acme' });
    expect(list.json().tasks.map((task: { id: string }) => task.id)).toEqual([acmeTask]);
  });

  it('names the tenant in the query too (an EventSource sends no header), and the route never sees it', async () => {
    // GET /v1/tasks's query schema admits no `tenant`: taken out first, the list answers.
    const list = await call('GET', '/v1/tasks?tenant=globex&limit=10', OPERATOR);
    expect(list.statusCode, list.body).toBe(200);
    expect(list.json().tasks.map((task: { id: string }) => task.id)).toEqual([globexTask]);
    // Both, the same: fine; both, different: refused, rather than one chosen silently.
    expect((await call('GET', '/v1/tasks?tenant=globex', OPERATOR, { 'x-taskgate-tenant': 'globex' })).statusCode).toBe(
      200,
    );
    expectProblem(
      await call('GET', '/v1/tasks?tenant=globex', OPERATOR, { 'x-taskgate-tenant': 'acme' }),
      400,
      'TG_REQUEST_INVALID',
    );
  });

  it('steers the tenant it names: a cancel lands on that tenant’s task', async () => {
    const cancel = await call('POST', `/v1/tasks/${globexTask}/cancel?tenant=globex`, OPERATOR);
    expect(cancel.statusCode, cancel.body).toBe(202);
    const ended = await waitForTask(
      () => platform.service.get('globex', globexTask),
      (read) => read.status === 'cancelled',
    );
    expect(ended.status).toBe('cancelled');
  });

  it('is refused a tenant route without a tenant, and a name that is no tenant’s', async () => {
    expectProblem(await call('GET', '/v1/tasks', OPERATOR), 400, 'TG_TENANT_REQUIRED');
    expectProblem(await call('GET', `/v1/tasks/${acmeTask}`, OPERATOR), 400, 'TG_TENANT_REQUIRED');
    for (const name of ['', '*', '../acme', 'a'.repeat(64), 'acme\u0000', 'ac me']) {
      expectProblem(
        await call('GET', `/v1/tasks?tenant=${encodeURIComponent(name)}`, OPERATOR),
        400,
        'TG_REQUEST_INVALID',
      );
    }
    // Named twice in the query: an array, not a name.
    expectProblem(await call('GET', '/v1/tasks?tenant=acme&tenant=globex', OPERATOR), 400, 'TG_REQUEST_INVALID');
  });

  it('reads the fleet with no tenant named', async () => {
    const fleet = await call('GET', '/v1/instances', OPERATOR);
    expect(fleet.statusCode, fleet.body).toBe(200);
  });

  it('lists the tenants that have tasks, in pages', async () => {
    await sql`
      INSERT INTO tasks (tenant_id, tool, status, finished_at)
      SELECT 'bulk-' || lpad(g::text, 3, '0'), 'greet', 'completed', now() FROM generate_series(1, 30) AS g,
             generate_series(1, 50)`.execute(platform.db);
    const first = await call('GET', '/v1/tenants?limit=2', OPERATOR);
    expect(first.statusCode, first.body).toBe(200);
    expect(first.json()).toEqual({ tenants: ['acme', 'bulk-001'], next: 'bulk-001' });
    const all: string[] = [];
    let after: string | null = null;
    do {
      const page = await call('GET', `/v1/tenants?limit=7${after ? `&after=${after}` : ''}`, OPERATOR);
      const body = page.json() as { tenants: string[]; next: string | null };
      all.push(...body.tenants);
      after = body.next;
    } while (after !== null);
    expect(all).toEqual([
      'acme',
      ...Array.from({ length: 30 }, (_, n) => `bulk-${String(n + 1).padStart(3, '0')}`),
      'globex',
    ]);
    expectProblem(await call('GET', '/v1/tenants?limit=0', OPERATOR), 400, 'TG_REQUEST_INVALID');
    expectProblem(await call('GET', '/v1/tenants?after=*', OPERATOR), 400, 'TG_REQUEST_INVALID');
  });

  it('lists them by a skip scan: one index probe per tenant, never the whole table', async () => {
    await sql`ANALYZE tasks`.execute(platform.db);
    const { nodes } = await planOf(platform.db, tenantSkipScan(null, 200));
    expect(nodes).toContain('Recursive Union');
    expect(nodes).not.toContain('Seq Scan');
  });

  it('is no MCP caller', async () => {
    const response = await api.app.inject({
      method: 'POST',
      url: '/mcp',
      headers: {
        authorization: `Bearer ${OPERATOR}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2025-11-25',
      },
      payload: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
    });
    expect(response.statusCode).toBe(401);
    expect(response.body).toContain('an operator token acts over the REST API (/v1) and the console only');
  });
});

describe("an operator's console session", () => {
  const HOST = '127.0.0.1:8080';
  it('acts for the tenant each request names, and ends when its token leaves TASKGATE_OPERATOR_TOKENS', async () => {
    const signIn = await api.app.inject({
      method: 'POST',
      url: '/ui/session',
      headers: { host: HOST, origin: `http://${HOST}` },
      payload: { token: OPERATOR },
    });
    expect(signIn.statusCode, signIn.body).toBe(201);
    expect(signIn.json()).toMatchObject({ signedIn: true, operator: true, tenant: null, scopes: null });
    const cookie = String(signIn.headers['set-cookie']).split(';')[0] as string;
    const { rows } = await sql<{ tenant_id: string; operator: boolean }>`
      SELECT tenant_id, operator FROM console_sessions WHERE operator`.execute(platform.db);
    expect(rows).toEqual([{ tenant_id: '*', operator: true }]);
    const read = (app: typeof api.app, url: string) =>
      app.inject({ method: 'GET', url, headers: { host: HOST, cookie } });
    const list = await read(api.app, '/v1/tasks?tenant=acme');
    expect(list.statusCode, list.body).toBe(200);
    expect(list.json().tasks.map((task: { id: string }) => task.id)).toEqual([acmeTask]);
    expectProblem(await read(api.app, '/v1/tasks'), 400, 'TG_TENANT_REQUIRED');
    // A restart without the operator token: same database, same session row, no session.
    const without = await startApi(platform, database.url, { tokens: new Map([[ACME, 'acme']]) });
    try {
      expectProblem(await read(without.app, '/v1/tasks?tenant=acme'), 401, 'TG_UNAUTHORIZED');
      expect((await read(without.app, '/ui/session')).json()).toMatchObject({ signedIn: false, operator: false });
    } finally {
      await without.close();
    }
  });
});

describe("a tenant's token", () => {
  it('may not name a tenant, not even its own, nor list the tenants', async () => {
    for (const [url, headers] of [
      ['/v1/tasks?tenant=globex', {}],
      ['/v1/tasks?tenant=acme', {}],
      ['/v1/tasks', { 'x-taskgate-tenant': 'globex' }],
      [`/v1/tasks/${globexTask}`, { 'x-taskgate-tenant': 'globex' }],
    ] as const) {
      expectProblem(await call('GET', url, ACME, headers), 403, 'TG_OPERATOR_ONLY');
    }
    expectProblem(await call('GET', '/v1/tenants', ACME), 403, 'TG_OPERATOR_ONLY');
    expect(restScopeOf('GET', '/v1/tenants')).toBe('admin');
  });
});
