import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { defineTool } from '@taskgate/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { type Platform, startPlatform, waitForTask } from '../support/task-platform.ts';

// A durable tool calling an HTTP API through ctx.fetch: the call's idempotency key goes along
// (so the downstream can refuse a second charge when the task runs again), and a cancel of the
// task ends the request the handler is waiting on, which the downstream sees close.
const database = useTestDatabase();
let platform: Platform;
let downstream: http.Server;
let origin = '';
const keys: (string | undefined)[] = [];
let closedHeld: () => void = () => {};
let heldArrived: () => void = () => {};

const callDownstream = defineTool<{ path: string; idempotencyKey?: string }>({
  name: 'call_downstream',
  description: 'POSTs to the downstream, forwarding the call’s idempotency key',
  inputSchema: {
    type: 'object',
    properties: { path: { type: 'string' }, idempotencyKey: { type: 'string' } },
    required: ['path'],
  },
  retry: 'conditional',
  idempotencyKey: 'optional',
  async handler({ path }, ctx) {
    const response = await ctx.fetch(`${origin}${path}`, { method: 'POST', idempotencyKey: true });
    return { content: [{ type: 'text', text: await response.text() }] };
  },
});

beforeAll(async () => {
  downstream = http.createServer((request, response) => {
    keys.push(request.headers['idempotency-key'] as string | undefined);
    if (request.url === '/hold') {
      request.on('close', () => closedHeld());
      heldArrived();
      return;
    }
    response.end('charged');
  });
  await new Promise<void>((resolve) => downstream.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(downstream.address() as AddressInfo).port}`;
  platform = await startPlatform(database.url, { tools: [callDownstream] });
  await platform.startWorker();
});
afterAll(async () => {
  await platform.stop();
  downstream.closeAllConnections();
  downstream.close();
});

describe('ctx.fetch in a durable task', () => {
  it('forwards the call’s idempotency key downstream, and sends none for a call without one', async () => {
    keys.length = 0;
    const keyed = await platform.service.submit(
      'default',
      { tool: 'call_downstream', arguments: { path: '/charge' } },
      { idempotencyKey: 'charge-7' },
    );
    const plain = await platform.service.submit('default', { tool: 'call_downstream', arguments: { path: '/charge' } });
    for (const { task } of [keyed, plain]) {
      expect(
        await waitForTask(
          () => platform.service.get('default', task.id),
          (t) => t.status !== 'working',
        ),
      ).toMatchObject({ status: 'completed', result: { content: [{ text: 'charged' }] } });
    }
    expect(keys).toEqual(['charge-7', undefined]);
  });

  it('a cancel ends the request in flight: the downstream sees it close, the task ends cancelled', async () => {
    const arrived = new Promise<void>((resolve) => {
      heldArrived = resolve;
    });
    const closed = new Promise<void>((resolve) => {
      closedHeld = resolve;
    });
    const { task } = await platform.service.submit('default', {
      tool: 'call_downstream',
      arguments: { path: '/hold' },
    });
    await arrived;
    await platform.service.cancel('default', task.id, 'not wanted any more');
    await closed;
    expect(
      await waitForTask(
        () => platform.service.get('default', task.id),
        (t) => t.status !== 'working',
      ),
    ).toMatchObject({ status: 'cancelled', cancelReason: 'not wanted any more' });
  });
});
