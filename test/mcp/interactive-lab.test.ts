import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { listTaskEvents, type TaskRecord } from '@taskgate/db';
import { defineTool } from '@taskgate/sdk';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { perRequestMessage } from '../support/mcp-http.ts';
import {
  type Barrier,
  barrier,
  type Platform,
  startApi,
  startPlatform,
  waitForTask,
} from '../support/task-platform.ts';

// The lesson's interactive lab, over real sockets on POST /mcp (2026-07-28). For each ordering it
// records the terminal state, whether a final response exists, the cancellation signal on the wire
// and what the client must ignore. (The stdio variant of D is in mcp-stdio-process.test.ts.)
const database = useTestDatabase();
const gates = new Map<string, { started: Barrier; release: Barrier }>();

const gated = defineTool<{ key: string }>({
  name: 'gated',
  description: 'waits for the test to release it, then completes whether or not it was cancelled',
  inputSchema: { type: 'object', properties: { key: { type: 'string' } }, required: ['key'] },
  retry: 'safe',
  async handler({ key }) {
    const gate = gates.get(key) as { started: Barrier; release: Barrier };
    gate.started.resolve();
    await gate.release.promise;
    return { content: [{ type: 'text', text: `done ${key}` }] };
  },
});
const ticker = defineTool({
  name: 'ticker',
  description: 'reports progress every 150 ms before its 300 ms idle clock, forever',
  inputSchema: { type: 'object' },
  retry: 'safe',
  timeouts: { idleMs: 300, maxMs: 900 },
  async handler(_input, ctx) {
    for (let step = 1; ; step++) {
      await ctx.sleep(150);
      ctx.progress(step);
    }
  },
});

let platform: Platform;
let api: { app: FastifyInstance; close(): Promise<void> };
let port: number;
beforeAll(async () => {
  platform = await startPlatform(database.url, { tools: [gated, ticker] as never });
  await platform.startWorker();
  api = await startApi(platform, database.url);
  await api.app.listen({ host: '127.0.0.1', port: 0 });
  port = (api.app.server.address() as AddressInfo).port;
});
afterAll(async () => {
  await api.close();
  await platform.stop();
});

interface Exchange {
  readonly request: http.ClientRequest;
  /** Everything the client received, as text, and whether the response finished. */
  readonly received: { text: string; ended: boolean };
  readonly done: Promise<void>;
}

function callOverHttp(
  id: string,
  tool: string,
  args: Record<string, unknown>,
  meta: Record<string, unknown> = {},
): Exchange {
  const { headers, body } = perRequestMessage('tools/call', { name: tool, arguments: args }, { id, meta });
  const received = { text: '', ended: false };
  const request = http.request({
    host: '127.0.0.1',
    port,
    path: '/mcp',
    method: 'POST',
    headers: { ...headers, 'content-length': Buffer.byteLength(body) },
  });
  const done = new Promise<void>((resolve) => {
    request.on('error', () => resolve());
    request.on('close', () => resolve());
    request.on('response', (response) => {
      response.on('data', (chunk: Buffer) => {
        received.text += chunk.toString();
      });
      response.on('end', () => {
        received.ended = true;
        resolve();
      });
    });
  });
  request.end(body);
  return { request, received, done };
}

async function taskOf(tool: string, predicate: (task: TaskRecord) => boolean): Promise<TaskRecord> {
  return waitForTask(
    async () =>
      (await platform.service.list('default', { limit: 50 })).tasks.find(
        (task) => task.tool === tool && predicate(task),
      ),
    (task) => task !== undefined,
  ) as Promise<TaskRecord>;
}

const finished = (task: TaskRecord) => ['completed', 'failed', 'cancelled'].includes(task.status);

describe('interactive lab over Streamable HTTP', () => {
  it('(A) start, cancel, then the work completes: cancelled, no response', async () => {
    gates.set('a', { started: barrier(), release: barrier() });
    const exchange = callOverHttp('A', 'gated', { key: 'a' });
    await gates.get('a')?.started.promise;
    exchange.request.destroy(); // the cancellation signal on HTTP: the response stream closes
    const task = await taskOf('gated', (t) => (t.arguments as { key: string }).key === 'a');
    await waitForTask(
      () => platform.service.get('default', task.id),
      (current: TaskRecord) => current.cancelRequestedAt !== null,
    );
    gates.get('a')?.release.resolve(); // the handler returns after the cancel: its commit finds the flag
    const ended = await waitForTask(() => platform.service.get('default', task.id), finished);
    await exchange.done;
    expect({
      terminal: ended.status,
      finalResponse: exchange.received.text.length > 0,
      wireSignal: 'response stream closed',
      clientIgnores: 'nothing arrives',
    }).toEqual({
      terminal: 'cancelled',
      finalResponse: false,
      wireSignal: 'response stream closed',
      clientIgnores: 'nothing arrives',
    });
  });

  it('(B) start, complete, then cancel: the response stands and the late cancel changes nothing', async () => {
    gates.set('b', { started: barrier(), release: barrier() });
    const exchange = callOverHttp('B', 'gated', { key: 'b' });
    await gates.get('b')?.started.promise;
    gates.get('b')?.release.resolve();
    await exchange.done;
    exchange.request.destroy(); // closing after the response: a cancel that comes too late
    const task = await taskOf('gated', (t) => (t.arguments as { key: string }).key === 'b');
    const ended = await waitForTask(() => platform.service.get('default', task.id), finished);
    const history = await listTaskEvents(platform.db, 'default', task.id);
    expect({
      terminal: ended.status,
      finalResponse: exchange.received.ended && JSON.parse(exchange.received.text).id === 'B',
      cancelRecorded: history.some((event) => event.type === 'cancel_requested'),
    }).toEqual({ terminal: 'completed', finalResponse: true, cancelRecorded: false });
  });

  it('(C) progress before every idle deadline, then the max deadline fires', async () => {
    const exchange = callOverHttp('C', 'ticker', {}, { progressToken: 'c' });
    await exchange.done;
    const task = await taskOf('ticker', finished);
    const messages = exchange.received.text
      .split('\n\n')
      .filter((frame) => frame.startsWith('data: '))
      .map((frame) => JSON.parse(frame.slice(6)));
    const progress = messages.filter((message) => message.method === 'notifications/progress');
    // The calls ran past three idle limits thanks to progress; the max clock ended it anyway.
    expect(progress.length).toBeGreaterThanOrEqual(3);
    expect(task).toMatchObject({ status: 'failed', error: { data: { clock: 'max', limitMs: 900 } } });
    expect(messages.at(-1)).toMatchObject({ id: 'C', error: { data: { clock: 'max' } } });
  });

  it('(D) close the response stream: the handler stops at its checkpoint, the task ends cancelled, no byte follows', async () => {
    const exchange = callOverHttp('D', 'slow_compute', { seconds: 5 });
    const task = await taskOf('slow_compute', (t) => t.attempt >= 1);
    exchange.request.destroy();
    const ended = await waitForTask(() => platform.service.get('default', task.id), finished);
    const history = await listTaskEvents(platform.db, 'default', task.id);
    expect({ terminal: ended.status, finalResponse: exchange.received.text.length > 0 }).toEqual({
      terminal: 'cancelled',
      finalResponse: false,
    });
    expect(history.map((event) => event.type)).toEqual(expect.arrayContaining(['cancel_requested', 'cancel_observed']));
  });
});
