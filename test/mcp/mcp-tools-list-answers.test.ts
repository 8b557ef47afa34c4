import type { AddressInfo } from 'node:net';
import { CatalogView, publishTools } from '@taskgate/db';
import { CatalogTools } from '@taskgate/tools';
import { sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { catalogTool, setInstance } from '../support/catalog.ts';
import { useTestDatabase } from '../support/databases.ts';
import { perRequestMessage } from '../support/mcp-http.ts';
import { connectStdio, type StdioClient, stdioCore } from '../support/stdio-client.ts';
import { type Platform, silentLogger, startApi, startPlatform } from '../support/task-platform.ts';

// tools/list is serialised once per version of the offer and sent as those bytes: each answer
// must still be the catalog as it is now — a tool a worker publishes is in the next answer, one
// whose last server has been gone for the window is not — in both revisions, over HTTP and stdio.
// The view is refreshed by hand (no LISTEN, no poll), so each change is seen exactly when the
// test says.
const database = useTestDatabase();
const WINDOW_MS = 30_000;
let platform: Platform;
let view: CatalogView;
let tools: CatalogTools;
let api: Awaited<ReturnType<typeof startApi>>;
let mcpUrl: URL;
let stdio: StdioClient;

beforeAll(async () => {
  platform = await startPlatform(database.url);
  view = new CatalogView({ db: platform.db, windowMs: WINDOW_MS, pollIntervalMs: 3_600_000, logger: silentLogger });
  await view.start();
  tools = new CatalogTools(view, { logger: silentLogger });
  api = await startApi(platform, database.url, { tools });
  await api.app.listen({ host: '127.0.0.1', port: 0 });
  mcpUrl = new URL(`http://127.0.0.1:${(api.app.server.address() as AddressInfo).port}/mcp`);
  stdio = connectStdio(stdioCore(platform, { subscribe: () => () => {} } as never, 100, tools));
  stdio.send({
    jsonrpc: '2.0',
    id: 'init',
    method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'old', version: '1' } },
  });
  await stdio.answerTo('init');
});
afterAll(async () => {
  stdio.input.end();
  await stdio.server.closed;
  await api.close();
  tools.close();
  await view.stop();
  await platform.stop();
});
beforeEach(async () => {
  await sql`DELETE FROM instances`.execute(platform.db);
  await setInstance(platform.db, 'w-1', { heartbeatAgoMs: 0 });
  await publishTools(platform.db, 'w-1', [catalogTool('alpha')]);
  await view.refresh();
});

interface Answer {
  readonly status: number;
  readonly contentLength: string | null;
  readonly bytes: number;
  readonly message: { jsonrpc: string; id: unknown; result: Record<string, unknown> & { tools: { name: string }[] } };
}

async function post(headers: Record<string, string>, body: string): Promise<Answer> {
  const response = await fetch(mcpUrl, { method: 'POST', headers, body });
  const bytes = Buffer.from(await response.arrayBuffer());
  return {
    status: response.status,
    contentLength: response.headers.get('content-length'),
    bytes: bytes.length,
    message: JSON.parse(bytes.toString('utf8')),
  };
}

/** tools/list over HTTP as a 2026-07-28 client sends it. */
function listPerRequest(id: number | string = 1): Promise<Answer> {
  const { headers, body } = perRequestMessage('tools/list', {}, { id });
  return post(headers, body);
}

/** tools/list over HTTP as a 2025-11-25 client without a session sends it. */
function listHandshake(id: number | string = 1): Promise<Answer> {
  return post(
    {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-11-25',
    },
    JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/list', params: {} }),
  );
}

let stdioIds = 0;
async function listStdio(): Promise<string[]> {
  const id = `list-${stdioIds++}`;
  stdio.send({ jsonrpc: '2.0', id, method: 'tools/list', params: {} });
  const answer = (await stdio.answerTo(id)) as { result: { tools: { name: string }[] } };
  return answer.result.tools.map((tool) => tool.name);
}

const names = (answer: Answer) => answer.message.result.tools.map((tool) => tool.name);

describe('tools/list answers', () => {
  it('are whole JSON-RPC responses for the id asked, in each revision’s shape', async () => {
    // An id that JSON must escape, and one past the ASCII range: Content-Length counts bytes.
    for (const id of ['quote " and é', 42]) {
      const modern = await listPerRequest(id);
      expect(modern.status).toBe(200);
      expect(modern.contentLength).toBe(String(modern.bytes));
      expect(modern.message).toMatchObject({ jsonrpc: '2.0', id, result: { resultType: 'complete' } });
      expect(modern.message.result.ttlMs).toBeTypeOf('number');
      expect(names(modern)).toEqual(['alpha']);

      const legacy = await listHandshake(id);
      expect(legacy.status).toBe(200);
      expect(legacy.contentLength).toBe(String(legacy.bytes));
      expect(legacy.message).toMatchObject({ jsonrpc: '2.0', id });
      // 2025-11-25's shape: no resultType or cache hints, and each tool's task support.
      expect(Object.keys(legacy.message.result).sort()).toEqual(['_meta', 'tools']);
      expect(legacy.message.result.tools[0]).toMatchObject({ name: 'alpha', execution: { taskSupport: 'optional' } });
    }
  });

  it('list a tool a worker published in the next answer after the catalog is read', async () => {
    expect(names(await listPerRequest())).toEqual(['alpha']);
    expect(names(await listHandshake())).toEqual(['alpha']);
    expect(await listStdio()).toEqual(['alpha']);

    await setInstance(platform.db, 'w-2', { heartbeatAgoMs: 0 });
    await publishTools(platform.db, 'w-2', [catalogTool('beta')]);
    // Until the view reads the catalog, the answer is the one serialised before.
    expect(names(await listPerRequest())).toEqual(['alpha']);
    await view.refresh();
    expect(names(await listPerRequest())).toEqual(['alpha', 'beta']);
    expect(names(await listHandshake())).toEqual(['alpha', 'beta']);
    expect(await listStdio()).toEqual(['alpha', 'beta']);

    // A new definition of a listed tool is a change too.
    await publishTools(platform.db, 'w-2', [catalogTool('beta', { description: 'Does beta, second edition' })]);
    await view.refresh();
    const modern = await listPerRequest();
    expect(modern.message.result.tools.find((tool) => tool.name === 'beta')).toMatchObject({
      description: 'Does beta, second edition',
    });
  });

  it('drop a tool once its last server has been gone for the window, not before', async () => {
    await setInstance(platform.db, 'w-2', { heartbeatAgoMs: 0 });
    await publishTools(platform.db, 'w-2', [catalogTool('omega')]);
    await view.refresh();
    expect(names(await listPerRequest())).toEqual(['alpha', 'omega']);

    // Stopped within the window: still listed (a restart does not blink it out).
    await setInstance(platform.db, 'w-2', { heartbeatAgoMs: WINDOW_MS / 2, stoppedAgoMs: WINDOW_MS / 2 });
    await view.refresh();
    expect(names(await listPerRequest())).toEqual(['alpha', 'omega']);

    await setInstance(platform.db, 'w-2', { heartbeatAgoMs: WINDOW_MS + 5_000, stoppedAgoMs: WINDOW_MS + 5_000 });
    await view.refresh();
    expect(names(await listPerRequest())).toEqual(['alpha']);
    expect(names(await listHandshake())).toEqual(['alpha']);
    expect(await listStdio()).toEqual(['alpha']);
  });

  it('refuse a cursor: the list is one page, so no cursor is one this server gave out', async () => {
    const modern = perRequestMessage('tools/list', { cursor: 'YWxwaGE' }, { id: 'c' });
    const refusedModern = await fetch(mcpUrl, { method: 'POST', headers: modern.headers, body: modern.body });
    expect(refusedModern.status).toBe(400);
    expect(await refusedModern.json()).toMatchObject({ id: 'c', error: { code: -32602 } });
    for (const cursor of ['YWxwaGE', null, 7]) {
      const legacy = await fetch(mcpUrl, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2025-11-25',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 'c', method: 'tools/list', params: { cursor } }),
      });
      expect(legacy.status).toBe(200);
      expect(await legacy.json()).toMatchObject({
        id: 'c',
        error: { code: -32602, message: expect.stringContaining('tools/list has one page') },
      });
    }
    stdio.send({ jsonrpc: '2.0', id: 'c', method: 'tools/list', params: { cursor: 'YWxwaGE' } });
    expect(await stdio.answerTo('c')).toMatchObject({ error: { code: -32602 } });
  });
});
