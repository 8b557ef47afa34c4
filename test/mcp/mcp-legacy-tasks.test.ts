import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { testClient } from '../support/pg-clients.ts';
import { type Platform, serveApi, startLoopbackApi, startPlatform, waitForTask } from '../support/task-platform.ts';

// 2025-11-25 tasks over raw HTTP: the rules the SDK test does not reach.
const database = useTestDatabase();
let platform: Platform;
let api: Awaited<ReturnType<typeof serveApi>>;
let session: Record<string, string>;
beforeAll(async () => {
  platform = await startPlatform(database.url);
  await platform.startWorker();
  api = await serveApi(platform, database.url);
  const initialize = await post({
    jsonrpc: '2.0',
    id: 0,
    method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
  });
  expect(initialize.body.result.capabilities.tasks).toEqual({
    list: {},
    cancel: {},
    requests: { tools: { call: {} } },
  });
  session = {
    'mcp-session-id': initialize.headers.get('mcp-session-id') as string,
    'mcp-protocol-version': '2025-11-25',
  };
});
afterAll(async () => {
  await api.close();
  await platform.stop();
});

async function post(body: unknown, headers: Record<string, string> = session ?? {}) {
  const response = await fetch(api.mcpUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: JSON.stringify(body),
  });
  return { status: response.status, headers: response.headers, body: (await response.json()) as RpcBody };
}

/** What these tests read of an answer. */
interface RpcBody {
  readonly result: {
    readonly capabilities: Record<string, unknown>;
    readonly task: { readonly taskId: string; readonly [field: string]: unknown };
    readonly [field: string]: unknown;
  };
  readonly error: { readonly code: number };
}

let nextId = 1;
const rpc = (method: string, params: Record<string, unknown>) => post({ jsonrpc: '2.0', id: nextId++, method, params });

describe('2025-11-25 tasks over HTTP', () => {
  it('refuses a task for a tool that forbids one, and no task for a tool that requires one (-32601)', async () => {
    expect((await rpc('tools/call', { name: 'greet', arguments: { name: 'x' }, task: {} })).body.error.code).toBe(
      -32601,
    );
    expect((await rpc('tools/call', { name: 'failing_job', arguments: {} })).body.error.code).toBe(-32601);
  });

  it('answers unknown ids and bad cursors with -32602, and has no tasks/update', async () => {
    for (const method of ['tasks/get', 'tasks/result', 'tasks/cancel']) {
      expect((await rpc(method, { taskId: crypto.randomUUID() })).body.error.code).toBe(-32602);
      expect((await rpc(method, {})).body.error.code).toBe(-32602);
    }
    expect((await rpc('tasks/list', { cursor: 'not-a-cursor' })).body.error.code).toBe(-32602);
    expect((await rpc('tasks/update', { taskId: crypto.randomUUID(), inputResponses: {} })).body.error.code).toBe(
      -32601,
    );
  });

  it("a tasks/result that waits streams the task's status changes as SSE, then the result", async () => {
    const created = await rpc('tools/call', {
      name: 'slow_compute',
      arguments: { seconds: 1, label: 'wait' },
      task: {},
    });
    const taskId = created.body.result.task.taskId as string;
    const response = await fetch(api.mcpUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...session },
      body: JSON.stringify({ jsonrpc: '2.0', id: 'waiting', method: 'tasks/result', params: { taskId } }),
    });
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    const messages = (await response.text())
      .split('\n\n')
      .filter((frame) => frame.startsWith('data: '))
      .map((frame) => JSON.parse(frame.slice(6)));
    expect(messages.at(0)).toMatchObject({
      method: 'notifications/tasks/status',
      params: { taskId, status: 'completed', ttl: expect.anything() },
    });
    expect(messages.at(-1)).toMatchObject({
      id: 'waiting',
      result: { content: [{ type: 'text' }], _meta: { 'io.modelcontextprotocol/related-task': { taskId } } },
    });
    // Asked again once the task has ended, the answer is plain JSON.
    const again = await rpc('tasks/result', { taskId });
    expect(again.body.result).toMatchObject({ content: [{ type: 'text' }] });
  });

  it('a tasks/result whose stream closes stops waiting and leaves the task alone', async () => {
    const created = await rpc('tools/call', {
      name: 'slow_compute',
      arguments: { seconds: 30 },
      task: { ttl: 120_000 },
    });
    const taskId = created.body.result.task.taskId as string;
    expect(created.body.result.task).toMatchObject({ status: 'working', ttl: 120_000 });
    const body = JSON.stringify({ jsonrpc: '2.0', id: 'wait', method: 'tasks/result', params: { taskId } });
    const request = sendInSession(body);
    // The wait is under way once the task is running and the request has been sent; closing it
    // must not touch the task.
    await waitForTask(
      () => platform.service.get('default', taskId),
      (task) => task.attempt >= 1,
    );
    request.destroy();
    const after = await rpc('tasks/get', { taskId });
    expect(after.body.result).toMatchObject({ status: 'working' });
    expect((await platform.service.get('default', taskId)).cancelRequestedAt).toBeNull();
    // tasks/cancel ends it before answering; a second one is -32602.
    expect((await rpc('tasks/cancel', { taskId })).body.result).toMatchObject({ taskId, status: 'cancelled' });
    expect((await rpc('tasks/cancel', { taskId })).body.error.code).toBe(-32602);
  });

  it('a waiting tasks/result keeps its id: not taken again while it waits, cancelled by a POSTed cancel', async () => {
    const created = await rpc('tools/call', { name: 'slow_compute', arguments: { seconds: 30 }, task: {} });
    const taskId = created.body.result.task.taskId as string;
    const { waiting, refused } = await holdingId(api.mcpUrl, session, 'held', taskId);
    expect(refused.status).toBe(200);
    expect(JSON.parse(refused.text).error).toMatchObject({
      code: -32600,
      message: 'request id "held" is already in use',
    });
    const cancel = await rawPost(
      api.mcpUrl,
      { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'held' } },
      session,
    );
    expect(cancel.status).toBe(202);
    // The wait ends without an answer; the task runs on, and the id is free again.
    expect(await waiting).toMatchObject({ status: 204, text: '' });
    expect((await platform.service.get('default', taskId)).cancelRequestedAt).toBeNull();
    const again = await post({ jsonrpc: '2.0', id: 'held', method: 'tasks/get', params: { taskId } });
    expect(again.body.result).toMatchObject({ taskId, status: 'working' });
    await rpc('tasks/cancel', { taskId });
  });

  it('a tasks/result still waiting when the server stops is answered with a retryable 503, the task untouched', async () => {
    const role = await startLoopbackApi(database.url, { sweep: false, graceMs: 300 });
    const url = new URL('/mcp', role.url);
    const initialized = await rawPost(url, {
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    });
    const own = {
      'mcp-session-id': initialized.headers.get('mcp-session-id') as string,
      'mcp-protocol-version': '2025-11-25',
    };
    const created = await rawPost(
      url,
      {
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'slow_compute', arguments: { seconds: 60 }, task: {} },
      },
      own,
    );
    const taskId = (JSON.parse(created.text) as RpcBody).result.task.taskId;
    const { waiting } = await holdingId(url, own, 'wait', taskId);
    await role.stop();
    const answer = await waiting;
    expect(answer.status).toBe(503);
    expect(answer.headers.get('retry-after')).toBe('1');
    expect(JSON.parse(answer.text)).toMatchObject({
      id: 'wait',
      error: { code: -31503, message: 'the server is shutting down; send the request again' },
    });
    expect(await platform.service.get('default', taskId)).toMatchObject({ status: 'working', cancelRequestedAt: null });
    await platform.service.cancel('default', taskId, 'test over');
  });
});

describe('requests without a session', () => {
  it('are each their own: fifty clients using id 1 at once are all answered', async () => {
    const created = await rpc('tools/call', { name: 'slow_compute', arguments: { seconds: 0 }, task: {} });
    const taskId = created.body.result.task.taskId as string;
    const answers = await Promise.all(
      Array.from({ length: 50 }, () =>
        rawPost(
          api.mcpUrl,
          { jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { taskId } },
          { 'mcp-protocol-version': '2025-11-25' },
        ),
      ),
    );
    for (const answer of answers) expect(JSON.parse(answer.text)).toMatchObject({ id: 1, result: { taskId } });
  });
});

describe('a client that closes while its session is looked up', () => {
  it('cancels its call: the close is heard from the request’s arrival, not after the lookup', async () => {
    const label = `closed-in-lookup-${crypto.randomUUID()}`;
    const body = JSON.stringify({
      jsonrpc: '2.0',
      id: 'early',
      method: 'tools/call',
      params: { name: 'slow_compute', arguments: { seconds: 30, label } },
    });
    // The session's lookup waits on this lock until the client has gone.
    const lock = testClient({ connectionString: database.url });
    await lock.connect();
    try {
      await lock.query('BEGIN');
      await lock.query('LOCK TABLE mcp_sessions IN ACCESS EXCLUSIVE MODE');
      const request = sendInSession(body);
      // A request answered instead of blocked shows in the failure's "last:" with its status.
      let answered: number | undefined;
      request.on('response', (response) => {
        answered = response.statusCode;
      });
      await waitForTask(
        async () => ({
          waiting:
            (
              await lock.query<{ n: number }>(
                "SELECT count(*)::int AS n FROM pg_locks WHERE NOT granted AND relation = 'mcp_sessions'::regclass",
              )
            ).rows[0]?.n ?? 0,
          answered,
        }),
        (seen) => seen.waiting > 0,
      );
      request.destroy();
      await lock.query('COMMIT');
    } finally {
      await lock.end();
    }
    // The call goes on from the lookup with its client gone: its task is cancelled, not run.
    const task = await waitForTask(
      async () =>
        (await platform.service.list('default', { limit: 50 })).tasks.find(
          (t) => (t.arguments as { label?: string }).label === label,
        ),
      (found) => found !== undefined && found.status !== 'working',
    );
    expect(task?.status).toBe('cancelled');
  });
});

/** A POST in the session whose answer the test does not read: it destroys the request itself. */
function sendInSession(body: string): http.ClientRequest {
  const request = http.request(api.mcpUrl, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'content-length': Buffer.byteLength(body),
      ...session,
    },
  });
  request.on('error', () => {});
  request.end(body);
  return request;
}

interface RawAnswer {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
}

async function rawPost(url: URL, body: unknown, headers: Record<string, string> = {}): Promise<RawAnswer> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: JSON.stringify(body),
  });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

/**
 * A tasks/result with id `id`, once it holds that id in its session: a tasks/get with the same id
 * runs at once until then, and is refused from then on. Ordered by that refusal, not by time; a
 * probe that took the id first gets the wait refused, and the wait is sent again.
 */
async function holdingId(url: URL, headers: Record<string, string>, id: string, taskId: string) {
  for (;;) {
    let early: RawAnswer | undefined;
    const waiting = rawPost(url, { jsonrpc: '2.0', id, method: 'tasks/result', params: { taskId } }, headers);
    void waiting.then((answer) => {
      early = answer;
    });
    const probe = await waitForTask(
      () => rawPost(url, { jsonrpc: '2.0', id, method: 'tasks/get', params: { taskId } }, headers),
      (answer) => answer.text.includes('already in use') || early !== undefined,
    );
    if (early === undefined) return { waiting, refused: probe };
    // Only the probe may have won the id; anything else ended the wait, which is the failure.
    expect((early as RawAnswer).text).toContain('already in use');
  }
}
