import type { FastifyInstance, InjectOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { perRequestMessage } from '../support/mcp-http.ts';
import { expectProblem } from '../support/problems.ts';
import { rowCounts } from '../support/row-counts.ts';
import { type Platform, startApi, startPlatform } from '../support/task-platform.ts';

// DNS rebinding: a page on evil.example whose name now resolves to 127.0.0.1 reaches a loopback
// server from the victim's browser, with Host: evil.example and its own Origin.
const database = useTestDatabase();
const TOKEN = 'rebinding-test-token-0123456';
let platform: Platform;
const servers: { app: FastifyInstance; close(): Promise<void> }[] = [];

beforeAll(async () => {
  platform = await startPlatform(database.url);
});
afterAll(async () => {
  for (const server of servers) await server.close();
  await platform.stop();
});

async function serve(options: Parameters<typeof startApi>[2]): Promise<FastifyInstance> {
  const api = await startApi(platform, database.url, options);
  servers.push(api);
  return api.app;
}

const charge = (headers: Record<string, string>): InjectOptions => ({
  method: 'POST',
  url: '/v1/accounts/acct/charges',
  headers: { 'content-type': 'application/json', 'idempotency-key': `k-${Math.random()}`, ...headers },
  payload: '{"cents": 100}',
});

/** Every kind of route: a mutation, reads, the health probes, the API document, an unknown path. */
const everyRoute = (headers: Record<string, string>): InjectOptions[] => [
  charge(headers),
  {
    method: 'PUT',
    url: '/v1/inventory/sku-1',
    headers: { 'content-type': 'application/json', ...headers },
    payload: '{"available": 5}',
  },
  { method: 'GET', url: '/v1/tasks', headers },
  { method: 'GET', url: '/healthz', headers },
  { method: 'GET', url: '/readyz', headers },
  { method: 'GET', url: '/openapi.json', headers },
  { method: 'GET', url: '/docs/', headers },
  { method: 'GET', url: '/no/such/route', headers },
];

describe.each([
  ['bound to loopback, with tokens', { tokens: new Map([[TOKEN, 'acme']]), mcp: { loopbackOnly: true } }],
  ['accepting unauthenticated calls', { mcp: { loopbackOnly: false } }],
] as const)('a server %s', (_name, options) => {
  const auth: Record<string, string> = 'tokens' in options ? { authorization: `Bearer ${TOKEN}` } : {};

  it('refuses a foreign Host on every route with 403 TG_HOST_NOT_ALLOWED, and writes nothing', async () => {
    const app = await serve(options);
    const before = await rowCounts(platform.db);
    for (const request of everyRoute({ ...auth, host: 'evil.example' })) {
      expectProblem(await app.inject(request), 403, 'TG_HOST_NOT_ALLOWED');
    }
    // Before authentication: a rebinding page learns nothing about tokens either.
    expectProblem(await app.inject(charge({ host: 'evil.example:8080' })), 403, 'TG_HOST_NOT_ALLOWED');
    expect(await rowCounts(platform.db)).toEqual(before);
  });

  it('refuses a foreign Origin on every route with 403 TG_ORIGIN_NOT_ALLOWED', async () => {
    const app = await serve(options);
    const before = await rowCounts(platform.db);
    for (const request of everyRoute({ ...auth, origin: 'http://evil.example' })) {
      expectProblem(await app.inject(request), 403, 'TG_ORIGIN_NOT_ALLOWED');
    }
    expect(await rowCounts(platform.db)).toEqual(before);
  });

  it('serves loopback names and origins, and the allowed origins', async () => {
    const app = await serve({ ...options, mcp: { ...options.mcp, allowedOrigins: ['https://app.example.com'] } });
    for (const host of ['localhost', 'localhost:8080', '127.0.0.1:8080', '127.1.2.3', '[::1]:8080']) {
      expect((await app.inject(charge({ ...auth, host }))).statusCode, host).toBe(201);
    }
    for (const origin of ['http://localhost:5173', 'http://127.0.0.1', 'https://app.example.com']) {
      expect((await app.inject(charge({ ...auth, origin }))).statusCode, origin).toBe(201);
    }
  });

  it('answers /mcp with the same check, as a JSON-RPC error carrying the code', async () => {
    const app = await serve(options);
    const { headers, body } = perRequestMessage('tools/list', {}, { headers: { ...auth, host: 'evil.example' } });
    const response = await app.inject({ method: 'POST', url: '/mcp', headers, payload: body });
    expect(response.statusCode).toBe(403);
    expect(response.json()).toMatchObject({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32600, data: { code: 'TG_HOST_NOT_ALLOWED' } },
    });
  });
});

describe('a server bound beyond loopback, with tokens', () => {
  it('serves any Host on /v1, and still checks Origin on /mcp (streamable-http "Security")', async () => {
    const app = await serve({ tokens: new Map([[TOKEN, 'acme']]), mcp: { loopbackOnly: false } });
    const auth = { authorization: `Bearer ${TOKEN}` };
    expect((await app.inject(charge({ ...auth, host: 'api.example.com' }))).statusCode).toBe(201);
    expect((await app.inject(charge({ ...auth, origin: 'https://elsewhere.example' }))).statusCode).toBe(201);
    const mcp = (extra: Record<string, string>) => {
      const { headers, body } = perRequestMessage('tools/list', {}, { headers: { ...auth, ...extra } });
      return app.inject({ method: 'POST', url: '/mcp', headers, payload: body });
    };
    expect((await mcp({ host: 'api.example.com' })).statusCode).toBe(200);
    const refused = await mcp({ origin: 'https://elsewhere.example' });
    expect(refused.statusCode).toBe(403);
    expect(refused.json().error.data).toEqual({ code: 'TG_ORIGIN_NOT_ALLOWED' });
  });
});
