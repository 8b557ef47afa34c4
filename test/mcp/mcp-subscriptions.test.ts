import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { TaskEventsHub } from '@taskgate/api';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { modernMeta, perRequestMessage } from '../support/mcp-http.ts';
import { connectStdio, stdioCore } from '../support/stdio-client.ts';
import { type Platform, silentLogger, startApi, startPlatform, waitForTask } from '../support/task-platform.ts';

// subscriptions/listen (2026-07-28) with the Tasks extension's taskIds: the acknowledgement first,
// then notifications/tasks on every status change, fed by NOTIFY across API instances.
const database = useTestDatabase();
const TASKS = { extensions: { 'io.modelcontextprotocol/tasks': {} } };
const SUBSCRIPTION = 'io.modelcontextprotocol/subscriptionId';
type Api = { app: FastifyInstance; close(): Promise<void> };

let platform: Platform;
let first: Api;
let second: Api;
beforeAll(async () => {
  platform = await startPlatform(database.url);
  await platform.startWorker();
  // Two API instances on one database; keepalives every 50 ms so a quiet stream shows them.
  first = await startApi(platform, database.url, { events: { keepaliveMs: 50, pollMs: 5_000 } });
  second = await startApi(platform, database.url, { events: { keepaliveMs: 50, pollMs: 5_000 } });
  for (const api of [first, second]) await api.app.listen({ host: '127.0.0.1', port: 0 });
});
afterAll(async () => {
  await first.close();
  await second.close();
  await platform.stop();
});

const port = (api: Api) => (api.app.server.address() as AddressInfo).port;
const meta = (capabilities: object = TASKS) => modernMeta(capabilities);

async function rpc(api: Api, method: string, params: Record<string, unknown>, capabilities: object = TASKS) {
  const { headers, body } = perRequestMessage(method, params, { capabilities });
  const response = await fetch(`http://127.0.0.1:${port(api)}/mcp`, { method: 'POST', headers, body });
  return {
    status: response.status,
    body: (await response.json()) as { result?: Record<string, unknown>; error?: { code: number } },
  };
}

/** A listen stream on raw sockets: its SSE messages and comments as they arrive. */
function listen(api: Api, id: string, notifications: Record<string, unknown>) {
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id,
    method: 'subscriptions/listen',
    params: { notifications, _meta: meta() },
  });
  const messages: Record<string, unknown>[] = [];
  let comments = 0;
  let text = '';
  const request = http.request({
    host: '127.0.0.1',
    port: port(api),
    path: '/mcp',
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'subscriptions/listen',
      'content-length': Buffer.byteLength(body),
    },
  });
  request.on('error', () => {});
  const ended = new Promise<void>((resolve) => {
    request.on('close', () => resolve());
    request.on('response', (response) => {
      response.on('data', (chunk: Buffer) => {
        text += chunk.toString();
        const frames = text.split('\n\n');
        text = frames.pop() ?? '';
        for (const frame of frames) {
          if (frame.startsWith(':')) comments += 1;
          else if (frame.startsWith('data: ')) messages.push(JSON.parse(frame.slice(6)));
        }
      });
      response.on('end', () => resolve());
    });
  });
  request.end(body);
  return {
    request,
    messages,
    ended,
    comments: () => comments,
    until: (predicate: (all: Record<string, unknown>[]) => boolean) => waitForTask(async () => messages, predicate),
  };
}

async function workingTask(api: Api, seconds = 30): Promise<string> {
  const created = await rpc(api, 'tools/call', { name: 'slow_compute', arguments: { seconds } });
  const taskId = created.body.result?.taskId as string;
  expect(taskId).toEqual(expect.any(String));
  return taskId;
}

describe('subscriptions/listen over HTTP', () => {
  it('acknowledges first, then sends notifications/tasks with the full task on status changes, from another instance too', async () => {
    const taskId = await workingTask(first);
    const stream = listen(first, 'listen-1', { taskIds: [taskId, crypto.randomUUID()], toolsListChanged: true });
    await stream.until((all) => all.length >= 1);
    expect(stream.messages[0]).toEqual({
      jsonrpc: '2.0',
      method: 'notifications/subscriptions/acknowledged',
      params: { _meta: { [SUBSCRIPTION]: 'listen-1' }, notifications: { toolsListChanged: true, taskIds: [taskId] } },
    });
    // Keepalives while nothing changes; slow_compute's progress is never sent here.
    await waitForTask(
      async () => stream.comments(),
      (count) => count >= 2,
    );
    expect(stream.messages).toHaveLength(1);
    // The change happens through the other API instance: NOTIFY brings it here.
    expect((await rpc(second, 'tasks/cancel', { taskId })).body.result).toEqual({ resultType: 'complete' });
    const all = await stream.until((messages) =>
      messages.some((m) => (m.params as { status?: string })?.status === 'cancelled'),
    );
    const tasks = all.filter((message) => message.method === 'notifications/tasks');
    expect(tasks.at(-1)).toMatchObject({
      params: { taskId, status: 'cancelled', createdAt: expect.any(String), _meta: { [SUBSCRIPTION]: 'listen-1' } },
    });
    expect(
      all.every((message) =>
        ['notifications/subscriptions/acknowledged', 'notifications/tasks'].includes(message.method as string),
      ),
    ).toBe(true);
    stream.request.destroy();
  });

  it('resourceSubscriptions: a task resource is notified on its status change; what is not served is left out', async () => {
    const taskId = await workingTask(first);
    const uri = `taskgate://tasks/${taskId}`;
    const overlong = `taskgate://tasks/${'a'.repeat(3_000)}`;
    // Another tenant's task is as unknown as one that is not: left out, as taskIds leaves it.
    const others = await platform.service.create('globex', { tool: 'slow_compute', arguments: { seconds: 30 } });
    const stream = listen(second, 'listen-resources', {
      resourceSubscriptions: [uri, uri, 'nope://x', overlong, `taskgate://tasks/${others.id}`, 'taskgate://tasks/nope'],
    });
    await stream.until((all) => all.length >= 1);
    expect(stream.messages[0]).toEqual({
      jsonrpc: '2.0',
      method: 'notifications/subscriptions/acknowledged',
      params: { _meta: { [SUBSCRIPTION]: 'listen-resources' }, notifications: { resourceSubscriptions: [uri] } },
    });
    // Progress is no change of the resource's status: nothing yet, while keepalives flow.
    await waitForTask(
      async () => stream.comments(),
      (count) => count >= 2,
    );
    expect(stream.messages).toHaveLength(1);
    await rpc(first, 'tasks/cancel', { taskId });
    const all = await stream.until((messages) => messages.length >= 2);
    expect(all[1]).toEqual({
      jsonrpc: '2.0',
      method: 'notifications/resources/updated',
      params: { uri, _meta: { [SUBSCRIPTION]: 'listen-resources' } },
    });
    // The client refetches the resource: the task's outcome, as resources/read tells it.
    const read = await rpc(second, 'resources/read', { uri }, {});
    const contents = (read.body.result?.contents ?? []) as { text: string }[];
    const text = contents[0]?.text as string;
    expect(JSON.parse(text)).toMatchObject({ taskId, status: 'cancelled' });
    stream.request.destroy();
    await platform.service.cancel('globex', others.id, 'test over');
  });

  it('refuses unknown filter fields, wrong types and taskIds without the extension, and changes nothing', async () => {
    const taskId = await workingTask(first);
    const bad = async (notifications: unknown, capabilities: object = TASKS) => {
      const response = await fetch(`http://127.0.0.1:${port(first)}/mcp`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2026-07-28',
          'mcp-method': 'subscriptions/listen',
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 'bad',
          method: 'subscriptions/listen',
          params: { notifications, _meta: meta(capabilities) },
        }),
      });
      return { status: response.status, error: ((await response.json()) as { error: { code: number } }).error };
    };
    expect(await bad({ taskIds: [taskId], unknownFilter: true })).toMatchObject({
      status: 400,
      error: { code: -32602 },
    });
    expect(await bad({ taskIds: taskId })).toMatchObject({ status: 400, error: { code: -32602 } });
    expect(await bad('all')).toMatchObject({ status: 400, error: { code: -32602 } });
    expect(await bad({ taskIds: [taskId] }, {})).toMatchObject({ status: 400, error: { code: -32021 } });
    expect((await platform.service.get('default', taskId)).cancelRequestedAt).toBeNull();
    await rpc(first, 'tasks/cancel', { taskId });
  });

  it('a killed listen connection changes no task: a new listen and tasks/get find it as it was', async () => {
    const taskId = await workingTask(first, 1.5);
    const dropped = listen(first, 'listen-drop', { taskIds: [taskId] });
    await dropped.until((all) => all.length >= 1);
    // Killed, not closed politely: the socket is reset.
    (dropped.request.socket as import('node:net').Socket).resetAndDestroy();
    await dropped.ended;
    const again = listen(first, 'listen-again', { taskIds: [taskId] });
    await again.until((all) => all.length >= 1);
    expect(again.messages[0]).toMatchObject({
      params: { _meta: { [SUBSCRIPTION]: 'listen-again' }, notifications: { taskIds: [taskId] } },
    });
    expect((await rpc(first, 'tasks/get', { taskId })).body.result).toMatchObject({ taskId, status: 'working' });
    expect((await platform.service.get('default', taskId)).cancelRequestedAt).toBeNull();
    // And the task goes on to complete, which the new subscription hears.
    const done = await again.until((all) => all.some((m) => (m.params as { status?: string })?.status === 'completed'));
    expect(done.at(-1)).toMatchObject({
      method: 'notifications/tasks',
      params: { taskId, status: 'completed', result: { content: [{ type: 'text' }] } },
    });
    again.request.destroy();
  });

  it('a server that closes ends its subscriptions gracefully: the listen result, then the stream ends', async () => {
    const own = await startApi(platform, database.url, { events: { keepaliveMs: 50 } });
    await own.app.listen({ host: '127.0.0.1', port: 0 });
    const taskId = await workingTask(own);
    const stream = listen(own, 'listen-end', { taskIds: [taskId] });
    await stream.until((all) => all.length >= 1);
    await own.close();
    await stream.ended;
    expect(stream.messages.at(-1)).toEqual({
      jsonrpc: '2.0',
      id: 'listen-end',
      result: { resultType: 'complete', _meta: { [SUBSCRIPTION]: 'listen-end' } },
    });
    // The task lives on: a listen ending never touches it.
    expect((await platform.service.get('default', taskId)).status).toBe('working');
    await rpc(first, 'tasks/cancel', { taskId });
  });
});

describe('subscriptions/listen over stdio', () => {
  it('acknowledges, notifies by subscription id, stops on notifications/cancelled, and ends gracefully on shutdown', async () => {
    const hub = new TaskEventsHub({ connectionString: database.url, listen: true, logger: silentLogger });
    await hub.start();
    const { server, input, send, until } = connectStdio(stdioCore(platform, hub, 5_000));
    try {
      const a = await workingTask(first);
      const b = await workingTask(first);
      send({
        jsonrpc: '2.0',
        id: 10,
        method: 'subscriptions/listen',
        params: { notifications: { taskIds: [a] }, _meta: meta() },
      });
      send({
        jsonrpc: '2.0',
        id: 11,
        method: 'subscriptions/listen',
        params: { notifications: { taskIds: [b] }, _meta: meta() },
      });
      await until((all) => all.filter((m) => m.method === 'notifications/subscriptions/acknowledged').length === 2);
      // The client stops listen 10; a change of its task is then not sent.
      send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 10, reason: 'done' } });
      await rpc(first, 'tasks/cancel', { taskId: a });
      await rpc(first, 'tasks/cancel', { taskId: b });
      // a was cancelled first, so had its notification been sent it would come before b's.
      const all = await until((messages) =>
        messages.some((m) => m.method === 'notifications/tasks' && (m.params as { taskId?: string }).taskId === b),
      );
      const notices = all.filter((m) => m.method === 'notifications/tasks');
      expect(notices).toHaveLength(1);
      expect(notices[0]).toMatchObject({ params: { taskId: b, status: 'cancelled', _meta: { [SUBSCRIPTION]: 11 } } });
      // Shutdown: listen 11 gets its result, then notifications/cancelled for its id.
      server.shutdown();
      const ending = await until((messages) => messages.some((m) => m.method === 'notifications/cancelled'));
      expect(ending.slice(-2)).toEqual([
        { jsonrpc: '2.0', id: 11, result: { resultType: 'complete', _meta: { [SUBSCRIPTION]: 11 } } },
        {
          jsonrpc: '2.0',
          method: 'notifications/cancelled',
          params: { requestId: 11, reason: 'the server ended the subscription' },
        },
      ]);
      expect(ending.some((m) => m.id === 10)).toBe(false);
    } finally {
      input.end();
      await hub.stop();
    }
  });
});
