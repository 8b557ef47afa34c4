import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { type Platform, serveApi, startPlatform, waitForTask } from '../support/task-platform.ts';

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
});
