import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TaskRecord } from '@taskgate/db';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sendWebhook } from '../../examples/webhook/index.ts';
import { useTestDatabase } from '../support/databases.ts';
import { barrier, type Platform, startPlatform, waitForTask } from '../support/task-platform.ts';

// examples/webhook: a tool that calls an HTTP API with the call's idempotency key, and whose
// request a cancel aborts.
const database = useTestDatabase();
let platform: Platform;

interface Received {
  readonly key: string | undefined;
  readonly body: unknown;
}
const received: Received[] = [];
/** How the receiver answers the next request: at once with a status, or never (until it closes). */
let answer: { kind: 'status'; status: number } | { kind: 'hold' } = { kind: 'status', status: 200 };
let held = barrier();
let closedEarly = barrier();
const receiver = http.createServer((request, response) => {
  let text = '';
  request.on('data', (chunk) => {
    text += chunk;
  });
  request.on('end', () => {
    received.push({ key: request.headers['idempotency-key'] as string | undefined, body: JSON.parse(text) });
    if (answer.kind === 'status') {
      response.writeHead(answer.status, { 'content-type': 'text/plain' }).end(answer.status === 200 ? 'ok' : 'nope');
      return;
    }
    held.resolve();
    response.on('close', () => {
      if (!response.writableEnded) closedEarly.resolve();
    });
  });
});

beforeAll(async () => {
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  process.env.TASKGATE_WEBHOOK_URL = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
  platform = await startPlatform(database.url, { tools: [sendWebhook] as never });
  await platform.startWorker({ checkpointReadIntervalMs: 10 });
});
afterAll(async () => {
  await platform?.stop();
  receiver.closeAllConnections();
  await new Promise((resolve) => receiver.close(resolve));
  delete process.env.TASKGATE_WEBHOOK_URL;
});

const send = (key: string | undefined, event = 'order.paid') =>
  platform.service.submit(
    'acme',
    { tool: 'send_webhook', arguments: { event, payload: { order: 7 } } },
    key === undefined ? {} : { idempotencyKey: key },
  );
const ended = (id: string) =>
  waitForTask(
    () => platform.service.get('acme', id),
    (task: TaskRecord) => ['completed', 'failed', 'cancelled'].includes(task.status),
  );

describe('send_webhook', () => {
  it("POSTs the event with the call's idempotency key", async () => {
    answer = { kind: 'status', status: 200 };
    const { task } = await send('order-7-paid');
    expect(await ended(task.id)).toMatchObject({
      status: 'completed',
      result: { structuredContent: { status: 200 } },
    });
    expect(received.at(-1)).toEqual({ key: 'order-7-paid', body: { event: 'order.paid', payload: { order: 7 } } });
  });

  it('is refused without a key: nothing is sent', async () => {
    const before = received.length;
    await expect(send(undefined)).rejects.toMatchObject({ code: 'TG_IDEMPOTENCY_KEY_MISSING' });
    expect(received.length).toBe(before);
  });

  it("says the receiver's refusal as a tool error", async () => {
    answer = { kind: 'status', status: 503 };
    const { task } = await send('order-8-paid');
    const done = await ended(task.id);
    expect(done).toMatchObject({ status: 'completed', result: { isError: true } });
    expect(JSON.stringify(done.result)).toContain('the webhook answered 503: nope');
  });

  it('aborts its request when the task is cancelled: the receiver sees the connection close', async () => {
    answer = { kind: 'hold' };
    held = barrier();
    closedEarly = barrier();
    const { task } = await send('order-9-paid');
    await held.promise;
    await platform.service.cancel('acme', task.id, 'the order was refunded');
    await closedEarly.promise;
    expect(await ended(task.id)).toMatchObject({ status: 'cancelled' });
    expect(received.at(-1)?.key).toBe('order-9-paid');
  });
});
