import { TaskgateClient } from '@taskgate/client';
import { isTaskgateError } from '@taskgate/errors';
import { afterEach, describe, expect, it } from 'vitest';
import { type HttpDownstreamFixture, startHttpDownstream } from '../support/http-downstream.ts';
import { startRecorder } from '../support/http-recorder.ts';

// The client's HTTP side against the official SDK's servers (test/fixtures/downstream-http-server.ts
// on SDK v2: 2026-07-28; downstream-http-handshake-server.ts on SDK v1: 2025-11-25 sessions), through a
// recording proxy that sees every header and message, and which response streams the client closed.
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setUp(kind: 'per-request' | 'handshake') {
  const downstream = await startHttpDownstream({}, kind);
  cleanups.push(() => downstream.kill());
  const recorder = await startRecorder(downstream.url);
  cleanups.push(() => recorder.close());
  const client = await TaskgateClient.connectHttp({ url: recorder.url });
  cleanups.push(() => client.close());
  return { downstream, recorder, client };
}

/** Waits for a line of the downstream's own log (another process: polled, with a bound). */
async function logged(downstream: HttpDownstreamFixture, prefix: string): Promise<void> {
  const deadline = performance.now() + 5_000;
  while (!downstream.lines().some((line) => line.startsWith(prefix))) {
    if (performance.now() > deadline) throw new Error(`no "${prefix}" line; log: ${downstream.lines().join(' | ')}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Starts slow_echo, resolving once its first progress arrived (its handler is running). */
function runningCall(client: TaskgateClient, controller: AbortController) {
  let started!: () => void;
  const running = new Promise<void>((resolve) => {
    started = resolve;
  });
  const call = client.callTool(
    'slow_echo',
    { text: 'x', steps: 400 },
    { signal: controller.signal, onProgress: () => started() },
  );
  call.catch(() => {});
  return { call, running };
}

async function cancelledError(call: Promise<unknown>) {
  const error = await call.then(
    () => null,
    (reason: unknown) => reason,
  );
  expect(isTaskgateError(error) && error.code).toBe('TG_CALL_CANCELLED');
}

const sentMethods = (requests: { messages: readonly Record<string, unknown>[] }[]) =>
  requests.flatMap((request) => request.messages.map((message) => message.method ?? 'response'));

describe('TaskgateClient over Streamable HTTP 2026-07-28 (SDK v2 server)', () => {
  it('cancels by closing the call’s own stream, and never POSTs a cancel', async () => {
    const { downstream, recorder, client } = await setUp('per-request');
    expect(client.server.protocolVersion).toBe('2026-07-28');
    const controller = new AbortController();
    const { call, running } = runningCall(client, controller);
    await running;
    controller.abort(new Error('stop'));
    await cancelledError(call);
    await logged(downstream, 'aborted');

    expect(sentMethods(recorder.requests)).not.toContain('notifications/cancelled');
    const posted = recorder.requests.filter((request) => request.messages.some((m) => m.method === 'tools/call'));
    expect(posted).toHaveLength(1);
    expect(posted[0]?.clientClosedEarly).toBe(true);
    expect(recorder.requests.filter((request) => 'last-event-id' in request.headers)).toEqual([]);
  });

  it('complete before cancel: the result, and nothing more on the wire', async () => {
    const { recorder, client } = await setUp('per-request');
    const controller = new AbortController();
    const result = await client.callTool('slow_echo', { text: 'hi', steps: 1 }, { signal: controller.signal });
    expect(result.structuredContent).toEqual({ echoed: 'hi' });
    const before = recorder.requests.length;
    controller.abort();
    await client.listTools();
    expect(sentMethods(recorder.requests.slice(before))).toEqual(['tools/list']);
    expect(recorder.requests.every((request) => !request.clientClosedEarly)).toBe(true);
  });
});

describe('TaskgateClient over a 2025-11-25 session (SDK v1 server)', () => {
  it('cancels with a POSTed notifications/cancelled naming the call’s wire id', async () => {
    const { downstream, recorder, client } = await setUp('handshake');
    expect(client.server.protocolVersion).toBe('2025-11-25');
    const controller = new AbortController();
    const { call, running } = runningCall(client, controller);
    await running;
    controller.abort(new Error('stop'));
    await cancelledError(call);
    await logged(downstream, 'aborted');

    const messages = recorder.requests.flatMap((request) => request.messages);
    const sent = messages.find((message) => message.method === 'tools/call');
    const cancels = messages.filter((message) => message.method === 'notifications/cancelled');
    expect(cancels.map((message) => (message.params as { requestId?: unknown }).requestId)).toEqual([sent?.id]);
    expect(recorder.requests.filter((request) => 'last-event-id' in request.headers)).toEqual([]);
  });
});
