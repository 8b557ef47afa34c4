import { TaskEventsHub } from '@taskgate/api';
import { listTaskEvents, type TaskRecord } from '@taskgate/db';
import { defineTool } from '@taskgate/sdk';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { injectMcp } from '../support/mcp-http.ts';
import { connectStdio, stdioCore } from '../support/stdio-client.ts';
import {
  barrier,
  type Platform,
  silentLogger,
  startApi,
  startPlatform,
  waitForTask,
} from '../support/task-platform.ts';

// The MCP Tasks extension on 2026-07-28 (tasks-extension/tasks.md): a declaring client's call may be
// answered with its task, which it then reads, updates and cancels with tasks/*.
const database = useTestDatabase();
const TASKS = { extensions: { 'io.modelcontextprotocol/tasks': {} } };
const ACME = 'acme-token-0123456789';
const GLOBEX = 'globex-token-0123456789';

const started = barrier();
const release = barrier();
/** Ignores cancellation until the test lets it reach its checkpoint: the trace's middle state. */
const gatedJob = defineTool({
  name: 'gated_job',
  description: 'waits for the test, then passes one checkpoint and completes',
  inputSchema: { type: 'object' },
  retry: 'safe',
  taskSupport: 'required',
  async handler(_input, ctx) {
    started.resolve();
    await release.promise;
    await ctx.checkpoint();
    return { content: [{ type: 'text', text: 'not cancelled' }] };
  },
});

let platform: Platform;
let api: { app: FastifyInstance; close(): Promise<void> };
beforeAll(async () => {
  platform = await startPlatform(database.url, { tools: [gatedJob] as never });
  await platform.startWorker();
  api = await startApi(platform, database.url, {
    tokens: new Map([
      [ACME, 'acme'],
      [GLOBEX, 'globex'],
    ]),
  });
});
afterAll(async () => {
  await api.close();
  await platform.stop();
});

let nextId = 1;
function call(
  method: string,
  params: Record<string, unknown>,
  options: { capabilities?: Record<string, unknown>; token?: string; headers?: Record<string, string> } = {},
): Promise<LightMyRequestResponse> {
  return injectMcp(api.app, method, params, {
    capabilities: options.capabilities ?? TASKS,
    headers: { authorization: `Bearer ${options.token ?? ACME}`, ...options.headers },
  });
}

async function result(response: Promise<LightMyRequestResponse>): Promise<Record<string, unknown>> {
  const answered = await response;
  const body = answered.json();
  expect(body.error, answered.body).toBeUndefined();
  return body.result;
}

async function error(response: Promise<LightMyRequestResponse>) {
  const answered = await response;
  const body = answered.json();
  expect(body.result, answered.body).toBeUndefined();
  return { status: answered.statusCode, ...body.error };
}

async function taskUntil(taskId: string, done: (task: Record<string, unknown>) => boolean) {
  return waitForTask(() => result(call('tasks/get', { taskId })), done);
}

const terminal = (task: Record<string, unknown>) =>
  ['completed', 'failed', 'cancelled'].includes(task.status as string);

describe('the Tasks extension over HTTP (2026-07-28)', () => {
  it('answers a required-task tool with a flat CreateTaskResult once the row is committed', async () => {
    const created = await result(call('tools/call', { name: 'failing_job', arguments: {} }));
    expect(created).toMatchObject({ resultType: 'task', taskId: expect.any(String), status: 'working' });
    for (const absent of ['task', 'result', 'error', 'inputRequests', 'requestState', 'ttl', 'pollInterval']) {
      expect(created).not.toHaveProperty(absent);
    }
    expect(created.createdAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}/);
    expect(created.lastUpdatedAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}/);
    expect(created.ttlMs === null || (Number.isInteger(created.ttlMs) && (created.ttlMs as number) > 0)).toBe(true);
    expect(Number.isInteger(created.pollIntervalMs) && (created.pollIntervalMs as number) > 0).toBe(true);
    // Durable at once: the very next tasks/get finds it.
    const first = await result(call('tasks/get', { taskId: created.taskId }));
    expect(first).toMatchObject({ resultType: 'complete', taskId: created.taskId });
    // A tool error completes the task; its result says isError.
    const done = await taskUntil(created.taskId as string, terminal);
    expect(done).toMatchObject({ status: 'completed', result: { isError: true, content: [{ type: 'text' }] } });
    expect(done).not.toHaveProperty('error');
    // A protocol error fails it, with the JSON-RPC error and no result.
    const failing = await result(call('tools/call', { name: 'protocol_error_job', arguments: {} }));
    const failed = await taskUntil(failing.taskId as string, terminal);
    expect(failed).toMatchObject({ status: 'failed', error: { code: -32603, message: expect.any(String) } });
    expect(failed).not.toHaveProperty('result');
  });

  it('answers an optional-task tool in the call when it ends first, and with its task when it outlives the threshold', async () => {
    const quick = await result(call('tools/call', { name: 'slow_compute', arguments: { seconds: 0, label: 'now' } }));
    expect(quick).toMatchObject({ resultType: 'complete', content: [{ type: 'text' }] });
    expect(quick).not.toHaveProperty('taskId');
    const long = await result(call('tools/call', { name: 'slow_compute', arguments: { seconds: 1.5, label: 'long' } }));
    expect(long).toMatchObject({ resultType: 'task', status: 'working' });
    const done = await taskUntil(long.taskId as string, terminal);
    expect(done).toMatchObject({
      status: 'completed',
      result: { content: [{ text: expect.stringContaining('long') }] },
    });
    // A tool that forbids tasks is answered in the call even for a declaring client.
    const greeting = await result(call('tools/call', { name: 'greet', arguments: { name: 'Ada' } }));
    expect(greeting).toMatchObject({ resultType: 'complete', content: [{ text: 'Hello, Ada!' }] });
    // Without the extension an optional-task tool runs in the call.
    const plain = await result(
      call('tools/call', { name: 'slow_compute', arguments: { seconds: 0 } }, { capabilities: {} }),
    );
    expect(plain).toMatchObject({ resultType: 'complete' });
    expect(plain).not.toHaveProperty('taskId');
  });

  it('keeps the durable cancellation trace: ack while working, cancelled at the checkpoint, events in order', async () => {
    const created = await result(call('tools/call', { name: 'gated_job', arguments: {} }));
    const taskId = created.taskId as string;
    await started.promise;
    const ack = await result(call('tasks/cancel', { taskId }));
    expect(ack).toEqual({ resultType: 'complete' });
    // Acknowledged, not yet honoured: the handler has not reached a checkpoint.
    expect(await result(call('tasks/get', { taskId }))).toMatchObject({ status: 'working' });
    release.resolve();
    const ended = await taskUntil(taskId, terminal);
    expect(ended).toMatchObject({ status: 'cancelled' });
    expect(ended).not.toHaveProperty('result');
    const trace = (await listTaskEvents(platform.db, 'acme', taskId)).filter(
      (event) => ['cancel_requested', 'cancel_observed'].includes(event.type) || event.toStatus === 'cancelled',
    );
    expect(trace.map((event) => event.type)).toEqual(['cancel_requested', 'cancel_observed', 'status_changed']);
    // A second tasks/cancel, on the ended task, is acknowledged the same way and changes nothing.
    expect(await result(call('tasks/cancel', { taskId }))).toEqual({ resultType: 'complete' });
    expect(await result(call('tasks/get', { taskId }))).toMatchObject({ status: 'cancelled' });
  });

  it('refuses tasks/* from a client without the extension with -32021, before looking the task up', async () => {
    for (const [method, params] of [
      ['tasks/get', { taskId: 'gate-test' }],
      ['tasks/update', { taskId: 'gate-test', inputResponses: {} }],
      ['tasks/cancel', { taskId: 'gate-test' }],
    ] as const) {
      expect(await error(call(method, params, { capabilities: {} }))).toMatchObject({
        status: 400,
        code: -32021,
        data: { requiredCapabilities: TASKS },
      });
    }
  });

  it('answers bad task requests with the documented errors and changes nothing', async () => {
    const created = await result(call('tools/call', { name: 'slow_compute', arguments: { seconds: 30 } }));
    const taskId = created.taskId as string;
    // Unknown ids, whatever their shape, and another tenant's task: -32602.
    for (const unknown of ['tasks-conformance-nonexistent-12345', crypto.randomUUID()]) {
      expect(await error(call('tasks/get', { taskId: unknown }))).toMatchObject({ code: -32602 });
      expect(await error(call('tasks/cancel', { taskId: unknown }))).toMatchObject({ code: -32602 });
    }
    expect(await error(call('tasks/get', { taskId }, { token: GLOBEX }))).toMatchObject({ code: -32602 });
    expect(await error(call('tasks/cancel', { taskId }, { token: GLOBEX }))).toMatchObject({ code: -32602 });
    // No taskId (over HTTP the Mcp-Name rule answers first; stdio's -32602 is below); Mcp-Name
    // naming another task; malformed inputResponses.
    expect(await error(call('tasks/get', {}))).toMatchObject({ status: 400, code: -32020 });
    expect(await error(call('tasks/get', { taskId }, { headers: { 'mcp-name': 'another-task' } }))).toMatchObject({
      status: 400,
      code: -32020,
    });
    for (const inputResponses of [undefined, null, [], 'yes']) {
      expect(await error(call('tasks/update', { taskId, inputResponses }))).toMatchObject({
        status: 400,
        code: -32602,
      });
    }
    // A response to a key that is not outstanding is acknowledged and ignored.
    expect(
      await result(call('tasks/update', { taskId, inputResponses: { 'unknown-key': { ignored: true } } })),
    ).toEqual({ resultType: 'complete' });
    // tasks/result and tasks/list are not part of this revision's extension.
    expect(await error(call('tasks/result', { taskId }))).toMatchObject({ status: 404, code: -32601 });
    // None of that touched the task: it still works, with no cancel requested.
    const task = (await platform.service.get('acme', taskId)) as TaskRecord;
    expect(task).toMatchObject({ status: 'working', cancelRequestedAt: null });
    await result(call('tasks/cancel', { taskId }));
  });
});

describe('task state outlives the API process that created it', () => {
  it('an API restart leaves the task and its history as they were; only TTL expiry removes it', async () => {
    const created = await result(call('tools/call', { name: 'slow_compute', arguments: { seconds: 30 } }));
    const taskId = created.taskId as string;
    const before = await result(call('tasks/get', { taskId }));
    const history = await listTaskEvents(platform.db, 'acme', taskId);
    // The API that created it goes away; a new one (same database) answers for the task.
    await api.close();
    api = await startApi(platform, database.url, {
      tokens: new Map([
        [ACME, 'acme'],
        [GLOBEX, 'globex'],
      ]),
    });
    const after = await result(call('tasks/get', { taskId }));
    // The task works on meanwhile: its progress (in _meta) and lastUpdatedAt move, nothing else.
    expect({ ...after, lastUpdatedAt: null, _meta: null }).toEqual({ ...before, lastUpdatedAt: null, _meta: null });
    expect((await listTaskEvents(platform.db, 'acme', taskId)).slice(0, history.length)).toEqual(history);
    // Expiry: once its ttl has run out the task reads as unknown (the sweeper deletes it later).
    await sql`UPDATE tasks SET expires_at = now() - interval '1 second' WHERE id = ${taskId}::uuid`.execute(
      platform.db,
    );
    expect(await error(call('tasks/get', { taskId }))).toMatchObject({ code: -32602 });
  });
});

describe('the Tasks extension over stdio (2026-07-28)', () => {
  it('hands out a task and answers tasks/get and tasks/cancel on the pipe', async () => {
    const hub = new TaskEventsHub({ connectionString: database.url, listen: true, logger: silentLogger });
    await hub.start();
    const client = connectStdio(stdioCore(platform, hub), 'acme');
    const ask = async (id: number, method: string, params: Record<string, unknown>, capabilities: object = TASKS) => {
      client.send({
        jsonrpc: '2.0',
        id,
        method,
        params: {
          ...params,
          _meta: {
            'io.modelcontextprotocol/protocolVersion': '2026-07-28',
            'io.modelcontextprotocol/clientCapabilities': capabilities,
          },
        },
      });
      return (await client.answerTo(id)) as { result?: Record<string, unknown>; error?: { code: number } };
    };
    try {
      const created = await ask(1, 'tools/call', { name: 'slow_compute', arguments: { seconds: 30 } });
      expect(created.result).toMatchObject({ resultType: 'task', status: 'working' });
      const taskId = created.result?.taskId as string;
      expect((await ask(2, 'tasks/get', { taskId })).result).toMatchObject({ taskId, status: 'working' });
      expect((await ask(3, 'tasks/get', { taskId }, {})).error).toMatchObject({ code: -32021 });
      expect((await ask(5, 'tasks/get', {})).error).toMatchObject({ code: -32602 });
      expect((await ask(6, 'tasks/update', { taskId, inputResponses: 'yes' })).error).toMatchObject({ code: -32602 });
      expect((await ask(4, 'tasks/cancel', { taskId })).result).toEqual({ resultType: 'complete' });
      const ended = await waitForTask(
        async () => (await ask(100 + nextId++, 'tasks/get', { taskId })).result as Record<string, unknown>,
        terminal,
      );
      expect(ended).toMatchObject({ status: 'cancelled' });
    } finally {
      client.input.end();
      await hub.stop();
    }
  });
});
