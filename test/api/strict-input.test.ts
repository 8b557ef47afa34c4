import net from 'node:net';
import { defineTool } from '@taskgate/sdk';
import type { InjectOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { expectProblem } from '../support/problems.ts';
import { rowCounts } from '../support/row-counts.ts';
import { type Platform, startApi, startPlatform } from '../support/task-platform.ts';

// The REST API's input rules: no coercion, explicit query parsing, values Postgres can store, and
// authentication before any of it.
const database = useTestDatabase();
const TOKEN = 'strict-input-token-0123456789';
const auth = { authorization: `Bearer ${TOKEN}` };
const json = { 'content-type': 'application/json', ...auth };
const anything = defineTool({
  name: 'take_anything',
  description: 'accepts any object (so only the input layer can refuse its arguments)',
  inputSchema: { type: 'object' },
  retry: 'safe',
  async handler() {
    return { content: [] };
  },
});

let platform: Platform;
let api: Awaited<ReturnType<typeof startApi>>;
beforeAll(async () => {
  platform = await startPlatform(database.url, { tools: [anything] as never });
  api = await startApi(platform, database.url, { tokens: new Map([[TOKEN, 'acme']]) });
});
afterAll(async () => {
  await api.close();
  await platform.stop();
});

const inject = (options: InjectOptions) => api.app.inject(options);

describe('types are never coerced', () => {
  it('refuses a boolean, a numeric string or null where an integer goes, and writes nothing', async () => {
    const before = await rowCounts(platform.db);
    const charge = (payload: string, key: string) =>
      inject({
        method: 'POST',
        url: '/v1/accounts/a/charges',
        headers: { ...json, 'idempotency-key': key },
        payload,
      });
    expectProblem(await charge('{"cents": true}', 'k-true'), 400, 'TG_REQUEST_INVALID');
    expectProblem(await charge('{"cents": "100"}', 'k-string'), 400, 'TG_REQUEST_INVALID');
    expectProblem(await charge('{"cents": [100]}', 'k-array'), 400, 'TG_REQUEST_INVALID');
    expectProblem(await charge('{"cents": 1.5}', 'k-fraction'), 400, 'TG_REQUEST_INVALID');
    const restock = (payload: string) => inject({ method: 'PUT', url: '/v1/inventory/x', headers: json, payload });
    expectProblem(await restock('{"available": null}'), 400, 'TG_REQUEST_INVALID');
    expectProblem(await restock('{"available": false}'), 400, 'TG_REQUEST_INVALID');
    expectProblem(await restock('{"available": "7"}'), 400, 'TG_REQUEST_INVALID');
    expectProblem(
      await inject({ method: 'POST', url: '/v1/tasks', headers: json, payload: '{"tool":"greet","ttlMs":"1000"}' }),
      400,
      'TG_REQUEST_INVALID',
    );
    expect(await rowCounts(platform.db)).toEqual(before);
    // The same values, as the types the schema says, are accepted.
    expect((await charge('{"cents": 100}', 'k-number')).statusCode).toBe(201);
    expect((await restock('{"available": 7}')).json().available).toBe(7);
  });

  it('parses limit as the decimal digits of 1 to 1000 and nothing else', async () => {
    for (const limit of [
      '1e400',
      '1.0',
      'true',
      '',
      '+5',
      '0x10',
      '05',
      ' 5',
      '1e2',
      '1001',
      '0100',
      '0',
      '-1',
      'NaN',
    ]) {
      const response = await inject({
        method: 'GET',
        url: `/v1/tasks?limit=${encodeURIComponent(limit)}`,
        headers: auth,
      });
      expectProblem(response, 400, 'TG_REQUEST_INVALID');
    }
    expectProblem(
      await inject({ method: 'GET', url: '/v1/tasks?limit=5&limit=6', headers: auth }),
      400,
      'TG_REQUEST_INVALID',
    );
    for (const limit of ['1', '20', '100', '999', '1000']) {
      expect((await inject({ method: 'GET', url: `/v1/tasks?limit=${limit}`, headers: auth })).statusCode).toBe(200);
    }
  });
});

describe('values Postgres cannot store are 400, never 500', () => {
  it('refuses NUL and unpaired surrogates in bodies, path parameters, query strings and the key header', async () => {
    const before = await rowCounts(platform.db);
    const task = (payload: string) => inject({ method: 'POST', url: '/v1/tasks', headers: json, payload });
    const nul = expectProblem(
      await task('{"tool":"take_anything","arguments":{"a":"x\\u0000"}}'),
      400,
      'TG_JSON_STRING_INVALID',
    );
    expect(nul.errors).toEqual([
      { location: 'body', path: '/arguments/a', message: expect.stringContaining('U+0000') },
    ]);
    expectProblem(await task('{"tool":"take_anything","arguments":{"a":"\\ud800"}}'), 400, 'TG_JSON_STRING_INVALID');
    expectProblem(await task('{"tool":"take_anything","arguments":{"\\udc00":1}}'), 400, 'TG_JSON_STRING_INVALID');
    expectProblem(await task('{"tool":"take\\u0000"}'), 400, 'TG_JSON_STRING_INVALID');
    expectProblem(
      await inject({ method: 'GET', url: '/v1/inventory/a%00b', headers: auth }),
      400,
      'TG_JSON_STRING_INVALID',
    );
    expectProblem(
      await inject({ method: 'GET', url: '/v1/idempotency-keys/%00', headers: auth }),
      400,
      'TG_JSON_STRING_INVALID',
    );
    expectProblem(await inject({ method: 'GET', url: '/v1/tasks/%00', headers: auth }), 400, 'TG_JSON_STRING_INVALID');
    expectProblem(
      await inject({ method: 'PUT', url: '/v1/inventory/sku%00', headers: json, payload: '{"available":1}' }),
      400,
      'TG_JSON_STRING_INVALID',
    );
    expectProblem(
      await inject({ method: 'GET', url: '/v1/tasks?cursor=%00abc', headers: auth }),
      400,
      'TG_JSON_STRING_INVALID',
    );
    expect(await rowCounts(platform.db)).toEqual(before);
  });

  it('refuses numbers a double cannot hold, and JSON nested past the documented 64 levels', async () => {
    const before = await rowCounts(platform.db);
    const task = (payload: string) => inject({ method: 'POST', url: '/v1/tasks', headers: json, payload });
    expectProblem(await task('{"tool":"take_anything","arguments":{"n":1e400}}'), 400, 'TG_JSON_NUMBER_INVALID');
    expectProblem(await task('{"tool":"greet","ttlMs":1e400}'), 400, 'TG_JSON_NUMBER_INVALID');
    expectProblem(await task('{"tool":"greet","arguments":{"name":"x"},"ttlMs":1e308}'), 400, 'TG_REQUEST_INVALID');
    const deep = (levels: number) => `${'['.repeat(levels)}${']'.repeat(levels)}`;
    // The body is level 1 and arguments level 2: 62 more arrays reach the limit, 63 pass it.
    expect((await task(`{"tool":"take_anything","arguments":{"d":${deep(62)}}}`)).statusCode).toBe(201);
    const refused = expectProblem(
      await task(`{"tool":"take_anything","arguments":{"d":${deep(63)}}}`),
      400,
      'TG_JSON_TOO_DEEP',
    );
    expect(refused.detail).toContain('deeper than 64 levels');
    expectProblem(await task(`{"tool":"take_anything","arguments":{"d":${deep(100_000)}}}`), 400, 'TG_JSON_TOO_DEEP');
    const after = await rowCounts(platform.db);
    expect(after.tasks).toBe(before.tasks + 1);
  });

  it('refuses a well-formed cursor whose timestamp is impossible, as TG_CURSOR_INVALID', async () => {
    const id = '00000000-0000-4000-8000-000000000000';
    for (const timestamp of [
      '2026-13-45 99:99:99+00',
      '2026-02-29 00:00:00+00',
      '0000-01-01 00:00:00+00',
      '2026-01-01 24:00:00+00',
      '2026-01-01 00:00:60+00',
      '2026-01-01 00:00:00+16',
    ]) {
      const cursor = Buffer.from(JSON.stringify([timestamp, id])).toString('base64url');
      expectProblem(
        await inject({ method: 'GET', url: `/v1/tasks?cursor=${cursor}`, headers: auth }),
        400,
        'TG_CURSOR_INVALID',
      );
    }
    const leap = Buffer.from(JSON.stringify(['2024-02-29 23:59:59.999999+14:59', id])).toString('base64url');
    expect((await inject({ method: 'GET', url: `/v1/tasks?cursor=${leap}`, headers: auth })).statusCode).toBe(200);
  });
});

describe('authentication comes before validation', () => {
  it('answers 401 to an unauthenticated request whatever its body, size or type', async () => {
    const before = await rowCounts(platform.db);
    const cases = [
      { method: 'POST', url: '/v1/tasks', payload: '{"tool": 5}', headers: { 'content-type': 'application/json' } },
      { method: 'POST', url: '/v1/tasks', payload: '{"tool":', headers: { 'content-type': 'application/json' } },
      { method: 'POST', url: '/v1/tasks', payload: 'x=1', headers: { 'content-type': 'text/plain' } },
      {
        method: 'POST',
        url: '/v1/tasks',
        payload: 'x'.repeat(2_000_000),
        headers: { 'content-type': 'application/json' },
      },
      {
        method: 'POST',
        url: '/v1/accounts/a/charges',
        payload: '{"cents":true}',
        headers: { 'content-type': 'application/json' },
      },
      { method: 'GET', url: '/v1/tasks?limit=1e400', headers: {} },
      { method: 'GET', url: '/v1/inventory/a%00', headers: {} },
      { method: 'GET', url: '/v1/tasks?cursor=bm9wZQ', headers: { authorization: 'Bearer wrong-token-000000000' } },
    ] as const;
    for (const request of cases) {
      const response = await inject({ ...request, headers: { ...request.headers } });
      expectProblem(response, 401, 'TG_UNAUTHORIZED');
      expect(response.headers['www-authenticate']).toBe('Bearer realm="taskgate"');
    }
    expect(await rowCounts(platform.db)).toEqual(before);
  });
});

describe('errors Fastify and Node raise before a route runs are problem+json too', () => {
  it('a path that is not valid percent-encoded UTF-8 is 400 TG_URL_INVALID', async () => {
    expectProblem(await inject({ method: 'GET', url: '/v1/tasks/%E0%A4%A', headers: auth }), 400, 'TG_URL_INVALID');
    expectProblem(await inject({ method: 'GET', url: '/v1/inventory/%ZZ', headers: auth }), 400, 'TG_URL_INVALID');
  });

  it('a path parameter past maxParamLength is 414 TG_URI_TOO_LONG', async () => {
    expectProblem(
      await inject({ method: 'GET', url: `/v1/tasks/${'a'.repeat(101)}`, headers: auth }),
      414,
      'TG_URI_TOO_LONG',
    );
  });

  it('over a socket: headers past 16 KiB are 431, bytes that are not HTTP or a bad Content-Length are 400', async () => {
    const address = await api.app.listen({ host: '127.0.0.1', port: 0 });
    const port = Number(new URL(address).port);
    const exchange = (bytes: string) =>
      new Promise<string>((resolve, reject) => {
        const socket = net.connect(port, '127.0.0.1');
        let received = '';
        socket.on('data', (chunk) => {
          received += chunk.toString();
        });
        socket.on('error', reject);
        socket.on('close', () => resolve(received));
        socket.write(bytes);
      });
    const parse = (raw: string) => {
      const [head, body] = raw.split('\r\n\r\n') as [string, string];
      return {
        statusCode: Number(head.split(' ')[1]),
        headers: Object.fromEntries(
          head
            .split('\r\n')
            .slice(1)
            .map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]),
        ),
        body,
      };
    };
    const huge = await exchange(`GET /v1/tasks HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    expectProblem(parse(huge), 431, 'TG_HEADERS_TOO_LARGE');
    expectProblem(parse(await exchange('NOT HTTP AT ALL\r\n\r\n')), 400, 'TG_HTTP_MALFORMED');
    expectProblem(
      parse(await exchange('GET /v1/tasks HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: abc\r\n\r\n')),
      400,
      'TG_HTTP_MALFORMED',
    );
  });
});

describe('a value outside an enum', () => {
  it('is refused once, naming the values allowed', async () => {
    const response = await inject({ method: 'GET', url: '/v1/tasks?status=bogus', headers: auth });
    expect(response.statusCode).toBe(400);
    expect(response.json().errors).toEqual([
      {
        location: 'querystring',
        path: '/status',
        message:
          'must be equal to one of the allowed values: "working", "input_required", "completed", "failed", "cancelled"',
      },
    ]);
  });
});

describe('Idempotency-Key sent twice', () => {
  it('is refused, not joined into one key, and nothing is charged', async () => {
    const before = await inject({ method: 'GET', url: '/v1/idempotency-keys/twice-a', headers: auth });
    expect(before.statusCode).toBe(404);
    // light-my-request sends an array value as the header repeated, as a client or proxy might.
    const response = await inject({
      method: 'POST',
      url: '/v1/accounts/acct-twice/charges',
      headers: { ...json, 'idempotency-key': ['twice-a', 'twice-b'] },
      payload: '{"cents": 5}',
    });
    expect(response.statusCode).toBe(400);
    expect(response.json().code).toBe('TG_IDEMPOTENCY_KEY_INVALID');
    const joined = await inject({
      method: 'GET',
      url: `/v1/idempotency-keys/${encodeURIComponent('twice-a, twice-b')}`,
      headers: auth,
    });
    expect(joined.statusCode).toBe(404);
  });
});
