import { type McpCore, TaskEventsHub } from '@taskgate/api';
import { defineTool } from '@taskgate/sdk';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { modernMeta } from '../support/mcp-http.ts';
import { rowCounts } from '../support/row-counts.ts';
import { connectStdio, stdioCore } from '../support/stdio-client.ts';
import { type Platform, silentLogger, startApi, startPlatform } from '../support/task-platform.ts';

// The decoded-input check over MCP: the same values REST refuses are -32602 with the TG code in
// `data`, over HTTP and stdio, before any method runs.
const database = useTestDatabase();
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
let api: { app: FastifyInstance; close(): Promise<void> };
let hub: TaskEventsHub;
let core: McpCore;
beforeAll(async () => {
  platform = await startPlatform(database.url, { tools: [anything] as never });
  api = await startApi(platform, database.url);
  hub = new TaskEventsHub({ connectionString: database.url, listen: true, logger: silentLogger });
  await hub.start();
  core = stdioCore(platform, hub);
});
afterAll(async () => {
  await hub.stop();
  await api.close();
  await platform.stop();
});

const deep = (levels: number) => `${'['.repeat(levels)}${']'.repeat(levels)}`;
const TASKS = { extensions: { 'io.modelcontextprotocol/tasks': {} } };
const META = JSON.stringify(modernMeta(TASKS));

/** Raw 2026-07-28 messages (raw text, so a test can send what JSON.stringify could not). */
const modern = {
  tasksUpdateDeep: `{"jsonrpc":"2.0","id":1,"method":"tasks/update","params":{"taskId":"00000000-0000-4000-8000-000000000000","inputResponses":{"k":${deep(10_000)}},"_meta":${META}}}`,
  callNul: `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"take_anything","arguments":{"a":"x\\u0000"},"_meta":${META}}}`,
  callSurrogateKey: `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"take_anything","arguments":{"\\ud800":1},"_meta":${META}}}`,
  callInfinity: `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"take_anything","arguments":{"n":-1e400},"_meta":${META}}}`,
};
const HEADERS = {
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  'mcp-protocol-version': '2026-07-28',
};

describe('MCP over HTTP', () => {
  it('answers unstorable params with 400 and -32602 carrying the TG code and where, and writes nothing', async () => {
    const before = await rowCounts(platform.db);
    const cases = [
      [modern.tasksUpdateDeep, 'tasks/update', '00000000-0000-4000-8000-000000000000', 'TG_JSON_TOO_DEEP', 1],
      [modern.callNul, 'tools/call', 'take_anything', 'TG_JSON_STRING_INVALID', 2],
      [modern.callSurrogateKey, 'tools/call', 'take_anything', 'TG_JSON_STRING_INVALID', 3],
      [modern.callInfinity, 'tools/call', 'take_anything', 'TG_JSON_NUMBER_INVALID', 4],
    ] as const;
    for (const [payload, method, name, code, id] of cases) {
      const response = await api.app.inject({
        method: 'POST',
        url: '/mcp',
        headers: { ...HEADERS, 'mcp-method': method, 'mcp-name': name },
        payload,
      });
      expect(response.statusCode, code).toBe(400);
      expect(response.json()).toMatchObject({ jsonrpc: '2.0', id, error: { code: -32602, data: { code } } });
    }
    const nul = await api.app.inject({
      method: 'POST',
      url: '/mcp',
      headers: { ...HEADERS, 'mcp-method': 'tools/call', 'mcp-name': 'take_anything' },
      payload: modern.callNul,
    });
    expect(nul.json().error.data.path).toBe('/params/arguments/a');
    expect(await rowCounts(platform.db)).toEqual(before);
  });

  it('refuses a 2025-11-25 task ttl that is not a whole number of milliseconds up to 7 days', async () => {
    const before = await rowCounts(platform.db);
    const call = (ttl: string) =>
      api.app.inject({
        method: 'POST',
        url: '/mcp',
        headers: { ...HEADERS, 'mcp-protocol-version': '2025-11-25' },
        payload: `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"slow_compute","arguments":{"seconds":1},"task":{"ttl":${ttl}}}}`,
      });
    for (const ttl of ['1e308', '1e20', '604800001', '0', '-1', '2.5', '"60000"', 'null', 'true']) {
      const response = await call(ttl);
      expect(response.json(), ttl).toMatchObject({
        id: 9,
        error: { code: -32602, data: { code: 'TG_JSON_NUMBER_INVALID', path: '/params/task/ttl' } },
      });
    }
    expect(await rowCounts(platform.db)).toEqual(before);
    const accepted = await call('60000');
    expect(accepted.json().result.task).toMatchObject({ status: 'working', ttl: 60_000 });
  });

  it('answers a notification with unstorable content with 400 and an error without an id', async () => {
    const response = await api.app.inject({
      method: 'POST',
      url: '/mcp',
      headers: { ...HEADERS, 'mcp-protocol-version': '2025-11-25' },
      payload: '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"a\\u0000"}}',
    });
    expect(response.statusCode).toBe(400);
    expect(response.json()).toMatchObject({
      id: null,
      error: { code: -32602, data: { code: 'TG_JSON_STRING_INVALID' } },
    });
  });

  it('answers a mirrored name that is an object with a toString key with 400 and -32020, not a 500 or silence', async () => {
    // String() of such an object throws; the mirror check named the body's value with it.
    for (const [method, params] of [
      ['tools/call', `{"name":{"toString":1},"arguments":{}}`],
      ['resources/read', `{"uri":{"toString":null,"valueOf":null}}`],
    ] as const) {
      const response = await api.app.inject({
        method: 'POST',
        url: '/mcp',
        headers: { ...HEADERS, 'mcp-method': method, 'mcp-name': 'take_anything' },
        payload: `{"jsonrpc":"2.0","id":9,"method":"${method}","params":{${params.slice(1, -1)},"_meta":${META}}}`,
      });
      expect(response.statusCode, method).toBe(400);
      expect(response.json()).toMatchObject({ id: 9, error: { code: -32020 } });
      expect(response.json().error.message).toContain('does not match body value');
    }
  });

  it('answers a body over 1 MiB with 413 and a JSON-RPC error carrying TG_BODY_TOO_LARGE', async () => {
    const response = await api.app.inject({
      method: 'POST',
      url: '/mcp',
      headers: { ...HEADERS, 'mcp-method': 'tools/list' },
      payload: `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"pad":"${'x'.repeat(1_100_000)}"}}`,
    });
    expect(response.statusCode).toBe(413);
    expect(response.json()).toMatchObject({ id: null, error: { code: -32600, data: { code: 'TG_BODY_TOO_LARGE' } } });
  });
});

describe('MCP over stdio', () => {
  it('answers the same messages with -32602 and the same codes, and writes nothing', async () => {
    const before = await rowCounts(platform.db);
    const client = connectStdio(core);
    client.send(modern.tasksUpdateDeep);
    client.send(modern.callNul);
    client.send(modern.callSurrogateKey);
    client.send(modern.callInfinity);
    const codes = await Promise.all(
      [1, 2, 3, 4].map(async (id) => (await client.answerTo(id)).error as { code: number; data: { code: string } }),
    );
    expect(codes).toEqual([
      expect.objectContaining({ code: -32602, data: expect.objectContaining({ code: 'TG_JSON_TOO_DEEP' }) }),
      expect.objectContaining({
        code: -32602,
        data: expect.objectContaining({ code: 'TG_JSON_STRING_INVALID', path: '/params/arguments/a' }),
      }),
      expect.objectContaining({ code: -32602, data: expect.objectContaining({ code: 'TG_JSON_STRING_INVALID' }) }),
      expect.objectContaining({ code: -32602, data: expect.objectContaining({ code: 'TG_JSON_NUMBER_INVALID' }) }),
    ]);
    client.input.end();
    await client.server.closed;
    expect(await rowCounts(platform.db)).toEqual(before);
  });

  it('drops a line over 1 MiB as it streams in, says so once, and serves the next line', async () => {
    const client = connectStdio(core);
    // Written in pieces, as a pipe delivers it: the line is never held whole.
    for (let i = 0; i < 5; i++) client.input.write('x'.repeat(300_000));
    client.input.write('\n');
    client.send({ jsonrpc: '2.0', id: 'after', method: 'server/discover', params: { _meta: modernMeta() } });
    const answer = await client.answerTo('after');
    expect(answer.result).toMatchObject({ resultType: 'complete' });
    expect(client.received[0]).toMatchObject({
      id: null,
      error: { code: -32600, data: { code: 'TG_BODY_TOO_LARGE' } },
    });
    expect(client.received).toHaveLength(2);
    client.input.end();
    await client.server.closed;
  });
});
