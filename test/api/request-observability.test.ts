import { Writable } from 'node:stream';
import { TaskgateMetrics } from '@taskgate/metrics';
import pino from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { injectMcp, perRequestMessage } from '../support/mcp-http.ts';
import { countOf, scrape } from '../support/metrics.ts';
import { type Platform, startApi, startPlatform } from '../support/task-platform.ts';

// What an operator sees of the API's requests: one log line each (naming the JSON-RPC method on
// /mcp, polls kept out of info), and taskgate_http_request_duration_seconds by route and method.
const database = useTestDatabase();

const lines: Record<string, unknown>[] = [];
const logger = pino(
  { level: 'debug' },
  new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n')) if (line !== '') lines.push(JSON.parse(line));
      done();
    },
  }),
);
const INFO = 30;
const DEBUG = 20;
const requestLines = (level: number) => lines.filter((line) => line.msg === 'request' && line.level === level);

const metrics = new TaskgateMetrics({ processMetrics: false });
let platform: Platform;
let api: Awaited<ReturnType<typeof startApi>>;
beforeAll(async () => {
  platform = await startPlatform(database.url);
  api = await startApi(platform, database.url, { logger, metrics });
});
afterAll(async () => {
  await api?.close();
  await platform?.stop();
});
beforeEach(() => {
  lines.length = 0;
  metrics.httpRequests.reset();
});

const DURATION = 'taskgate_http_request_duration_seconds';
/** A client that declares the Tasks extension, as `taskgate tasks watch` does. */
const TASKS = { extensions: { 'io.modelcontextprotocol/tasks': {} } };

describe('HTTP request metrics', () => {
  it('count REST requests by route template and status, never by the raw URL', async () => {
    const first = await platform.service.create('default', { tool: 'greet', arguments: { name: 'a' } });
    const second = await platform.service.create('default', { tool: 'greet', arguments: { name: 'b' } });
    for (const id of [first.id, second.id, crypto.randomUUID()]) await api.app.inject(`/v1/tasks/${id}`);
    await api.app.inject('/no/such/route/12345');

    const parsed = await scrape(metrics);
    expect(countOf(parsed, DURATION, { route: '/v1/tasks/:id', method: 'GET', status_code: '200' })).toBe(2);
    expect(countOf(parsed, DURATION, { route: '/v1/tasks/:id', method: 'GET', status_code: '404' })).toBe(1);
    expect(countOf(parsed, DURATION, { route: 'unmatched', method: 'GET', status_code: '404' })).toBe(1);
    expect(countOf(parsed, DURATION)).toBe(4);
    const exposition = await metrics.scrape();
    expect(exposition).not.toContain(first.id);
    expect(exposition).not.toContain('/no/such/route');
  });

  it('count /mcp by JSON-RPC method, with unknown methods in one value', async () => {
    await injectMcp(api.app, 'tools/list', {});
    await injectMcp(api.app, 'tools/list', {});
    await injectMcp(api.app, 'made/up', {});
    await injectMcp(api.app, 'another/invented', {});
    const { headers } = perRequestMessage('ping', {});
    await api.app.inject({
      method: 'POST',
      url: '/mcp',
      headers,
      payload: JSON.stringify([{ jsonrpc: '2.0', id: 1, method: 'ping' }]),
    });

    const parsed = await scrape(metrics);
    const mcp = { route: '/mcp', method: 'POST' };
    expect(countOf(parsed, DURATION, { ...mcp, rpc_method: 'tools/list', status_code: '200' })).toBe(2);
    expect(countOf(parsed, DURATION, { ...mcp, rpc_method: 'other' })).toBe(2);
    expect(countOf(parsed, DURATION, { ...mcp, rpc_method: 'batch' })).toBe(1);
    expect(await metrics.scrape()).not.toContain('made/up');
  });
});

describe('request log lines', () => {
  it('name the JSON-RPC method and id of an /mcp request', async () => {
    await injectMcp(api.app, 'tools/list', {}, { id: 'list-1' });
    expect(requestLines(INFO)).toEqual([
      expect.objectContaining({
        http: expect.objectContaining({ method: 'POST', url: '/mcp', status: 200 }),
        rpc: { method: 'tools/list', id: 'list-1' },
      }),
    ]);
  });

  it('keep polls of a task out of info: N polls over MCP or REST write no info line', async () => {
    const task = await platform.service.create('default', { tool: 'greet', arguments: { name: 'polled' } });
    const polls = 5;
    for (let poll = 0; poll < polls; poll += 1) {
      expect((await injectMcp(api.app, 'tasks/get', { taskId: task.id }, { capabilities: TASKS })).statusCode).toBe(
        200,
      );
      expect((await api.app.inject(`/v1/tasks/${task.id}`)).statusCode).toBe(200);
    }
    expect(requestLines(INFO)).toEqual([]);
    // Still there for whoever runs at debug.
    expect(requestLines(DEBUG)).toHaveLength(2 * polls);
    expect(requestLines(DEBUG)[0]).toMatchObject({ rpc: { method: 'tasks/get' } });

    // A poll that is refused is no quiet success: it stays at info.
    await api.app.inject(`/v1/tasks/${crypto.randomUUID()}`);
    expect(requestLines(INFO)).toEqual([expect.objectContaining({ http: expect.objectContaining({ status: 404 }) })]);
  });
});
