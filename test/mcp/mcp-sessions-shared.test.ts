import { RetentionSweeper } from '@taskgate/worker';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { type Platform, serveApi, silentLogger, startPlatform } from '../support/task-platform.ts';

// Handshake-revision sessions live in Postgres: a session opened through one API instance is used
// through another, survives the instance that opened it, and ends everywhere when deleted or idle.
const database = useTestDatabase();
let platform: Platform;
type Api = Awaited<ReturnType<typeof serveApi>>;
const apis: Api[] = [];
beforeAll(async () => {
  platform = await startPlatform(database.url);
  await platform.startWorker();
});
afterAll(async () => {
  for (const api of apis) await api.close().catch(() => {});
  await platform.stop();
});

async function instance(): Promise<Api> {
  const api = await serveApi(platform, database.url);
  apis.push(api);
  return api;
}

interface Answer {
  readonly status: number;
  readonly headers: Headers;
  readonly body: {
    readonly result: { readonly [field: string]: unknown };
    readonly error: { readonly code: number; readonly message: string };
  };
}

async function post(api: Api, body: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const response = await fetch(api.mcpUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: JSON.stringify(body),
  });
  return { status: response.status, headers: response.headers, body: (await response.json()) as Answer['body'] };
}

async function initialize(api: Api, protocolVersion: string, capabilities: Record<string, unknown> = {}) {
  const opened = await post(api, {
    jsonrpc: '2.0',
    id: 0,
    method: 'initialize',
    params: { protocolVersion, capabilities, clientInfo: { name: 'shared', version: '1' } },
  });
  expect(opened.body.result.protocolVersion).toBe(protocolVersion);
  return {
    'mcp-session-id': opened.headers.get('mcp-session-id') as string,
    'mcp-protocol-version': protocolVersion,
  };
}

let nextId = 1;
const rpc = (api: Api, headers: Record<string, string>, method: string, params: Record<string, unknown> = {}) =>
  post(api, { jsonrpc: '2.0', id: nextId++, method, params }, headers);

describe('handshake sessions across API instances', () => {
  it('a session opened through one instance is served by another, in its revision', async () => {
    const [first, second] = [await instance(), await instance()];
    const session = await initialize(first as Api, '2025-06-18', { roots: {} });
    const listed = await rpc(second as Api, session, 'tools/list');
    expect(listed.status).toBe(200);
    const tools = listed.body.result.tools as Record<string, unknown>[];
    expect(tools.map((tool) => tool.name)).toContain('greet');
    // The other instance knows the session's revision: 2025-06-18 has no tasks.
    for (const tool of tools) expect(tool).not.toHaveProperty('execution');
    const called = await rpc(second as Api, session, 'tools/call', { name: 'greet', arguments: { name: 'B' } });
    expect(called.body.result).toMatchObject({ content: [{ type: 'text', text: 'Hello, B!' }] });
    const { rows } = await sql<{ revision: string; client_capabilities: unknown }>`
      SELECT revision, client_capabilities FROM mcp_sessions WHERE id = ${session['mcp-session-id']}::uuid`.execute(
      platform.db,
    );
    expect(rows).toEqual([{ revision: '2025-06-18', client_capabilities: { roots: {} } }]);
  });

  it('outlives the instance that opened it, and a DELETE through any instance ends it on all', async () => {
    const opener = await instance();
    const session = await initialize(opener, '2025-11-25');
    await opener.close();
    const [later, other] = [await instance(), await instance()];
    const created = await rpc(later, session, 'tools/call', {
      name: 'slow_compute',
      arguments: { seconds: 0 },
      task: {},
    });
    const taskId = (created.body.result.task as { taskId: string }).taskId;
    expect((await rpc(other, session, 'tasks/get', { taskId })).body.result).toMatchObject({ taskId });
    const deleted = await fetch(other.mcpUrl, { method: 'DELETE', headers: session });
    expect(deleted.status).toBe(204);
    const gone = await rpc(later, session, 'tools/list');
    expect({ status: gone.status, code: gone.body.error.code }).toEqual({ status: 404, code: -32600 });
    expect((await fetch(later.mcpUrl, { method: 'DELETE', headers: session })).status).toBe(404);
  });

  it('is gone once idle past its window, and the retention sweep deletes it', async () => {
    const api = await instance();
    const session = await initialize(api, '2025-03-26');
    await sql`UPDATE mcp_sessions SET last_seen_at = now() - interval '2 hours'
      WHERE id = ${session['mcp-session-id']}::uuid`.execute(platform.db);
    expect((await rpc(api, session, 'tools/list')).status).toBe(404);
    await new RetentionSweeper(platform.db, 60_000, silentLogger).sweep();
    const { rows } = await sql`SELECT 1 FROM mcp_sessions WHERE id = ${session['mcp-session-id']}::uuid`.execute(
      platform.db,
    );
    expect(rows).toEqual([]);
  });

  it("another tenant's, a malformed and an unknown session id are all 404", async () => {
    const api = await instance();
    const session = await initialize(api, '2025-11-25');
    await sql`UPDATE mcp_sessions SET tenant_id = 'someone-else'
      WHERE id = ${session['mcp-session-id']}::uuid`.execute(platform.db);
    for (const id of [session['mcp-session-id'], 'not-a-uuid', crypto.randomUUID(), '\u0000']) {
      const answer = await rpc(api, { ...session, 'mcp-session-id': id }, 'tools/list').catch(() => null);
      if (answer === null) continue; // fetch itself refuses a NUL in a header
      expect({ id, status: answer.status }).toEqual({ id, status: 404 });
    }
  });
});
