import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { TaskgateClient } from '@taskgate/client';
import { isTaskgateError } from '@taskgate/errors';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/cli.ts';

// The client over a real pipe to a real subprocess (test/fixtures/scripted-stdio-server.ts, which
// logs every line it reads). Orders are forced by the pipe itself: a server handles its lines in
// order, so once an `echo` sent after X is answered, the server has read X — and whatever the
// server wrote before that answer has reached the client.
const SERVER = path.join(REPO_ROOT, 'test/fixtures/scripted-stdio-server.ts');

interface WireLine {
  readonly id?: number;
  readonly method?: string;
  readonly params?: { readonly name?: string; readonly requestId?: number };
}

let dir: string;
let wireLog: string;
const clients: TaskgateClient[] = [];

beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'taskgate-client-'));
  wireLog = path.join(dir, 'wire.jsonl');
});
afterEach(async () => {
  for (const client of clients.splice(0)) await client.close();
  await rm(dir, { recursive: true, force: true });
});

async function connect(
  extra: Parameters<typeof TaskgateClient.connectStdio>[1] = {},
  env: Record<string, string> = {},
) {
  const client = await TaskgateClient.connectStdio(
    { command: process.execPath, args: [SERVER], env: { PATH: process.env.PATH ?? '', WIRE_LOG: wireLog, ...env } },
    extra,
  );
  clients.push(client);
  return client;
}

async function wire(): Promise<WireLine[]> {
  return (await readFile(wireLog, 'utf8'))
    .trimEnd()
    .split('\n')
    .map((line) => JSON.parse(line) as WireLine);
}

async function rejection(promise: Promise<unknown>) {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('resolved');
}

describe('TaskgateClient over stdio', () => {
  it('complete before cancel: the result is returned, and a later abort sends nothing', async () => {
    const client = await connect();
    const controller = new AbortController();
    const result = await client.callTool('echo', { n: 1 }, { signal: controller.signal });
    expect(result.content).toEqual([{ type: 'text', text: '{"n":1}' }]);
    controller.abort();
    await client.callTool('echo', { n: 2 });
    expect((await wire()).filter((line) => line.method === 'notifications/cancelled')).toEqual([]);
    expect(client.stats).toMatchObject({ pending: 0, tombstones: 0, lateDropped: 0, unknown: 0 });
  });

  it('cancel before complete: the waiter ends at once, the cancel is a notification, the late answer is dropped silently', async () => {
    const late: string[] = [];
    const unknown: unknown[] = [];
    const errors: Error[] = [];
    const client = await connect({
      onLateResponse: (method) => late.push(method),
      onUnknownResponse: (message) => unknown.push(message),
      onError: (error) => errors.push(error),
    });
    const controller = new AbortController();
    const held = client.callTool('hold', {}, { signal: controller.signal });
    await client.callTool('echo', {}); // the server has read the hold call
    controller.abort(new Error('user pressed stop'));
    const error = await rejection(held);
    expect(isTaskgateError(error) && error.code).toBe('TG_CALL_CANCELLED');
    expect((error as Error).message).toBe('tools/call was cancelled (user pressed stop); the server was told to stop');

    // The server answers the hold call when the cancel arrives, before it reads this echo.
    await client.callTool('echo', {});
    expect(late).toEqual(['tools/call']);
    expect(unknown).toEqual([]);
    // Silently: the SDK never saw it (it would report "a response for an unknown message ID").
    expect(errors).toEqual([]);
    expect(client.stats).toMatchObject({ pending: 0, lateDropped: 1, unknown: 0 });

    const lines = await wire();
    const call = lines.find((line) => line.method === 'tools/call' && line.params?.name === 'hold');
    const cancels = lines.filter((line) => line.method === 'notifications/cancelled');
    expect(cancels.map((line) => line.params?.requestId)).toEqual([call?.id]);
  });

  it('passes on every progress written with the result in one chunk, the last one included', async () => {
    const client = await connect();
    const progress: number[] = [];
    const result = await client.callTool(
      'burst',
      { steps: 3 },
      { onProgress: (update) => progress.push(update.progress) },
    );
    expect(result.content).toEqual([{ type: 'text', text: 'burst' }]);
    expect(progress).toEqual([1, 2, 3]);
  });

  it('puts ids on the wire that only count up', async () => {
    const client = await connect();
    const controller = new AbortController();
    const held = client.callTool('hold', {}, { signal: controller.signal });
    await client.callTool('echo', {});
    controller.abort();
    await rejection(held);
    await client.listTools();
    await client.callTool('echo', {});
    const ids = (await wire()).filter((line) => typeof line.id === 'number').map((line) => line.id as number);
    expect(ids.length).toBeGreaterThanOrEqual(5);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('idle clock: no progress ends the call as TG_CALL_TIMEOUT (idle) and sends the cancel', async () => {
    const client = await connect();
    const error = await rejection(client.callTool('silent', {}, { idleMs: 150, maxMs: 30_000 }));
    expect(isTaskgateError(error) && error.code).toBe('TG_CALL_TIMEOUT');
    expect((error as { details?: unknown }).details).toEqual({ clock: 'idle', limitMs: 150 });
    await client.callTool('echo', {});
    const lines = await wire();
    const call = lines.find((line) => line.params?.name === 'silent');
    expect(
      lines.filter((line) => line.method === 'notifications/cancelled').map((line) => line.params?.requestId),
    ).toEqual([call?.id]);
  });

  it('max clock: steady progress keeps the idle clock back, never the max clock', async () => {
    const client = await connect();
    let progress = 0;
    const started = performance.now();
    const error = await rejection(
      client.callTool('ticking', { everyMs: 20 }, { idleMs: 5_000, maxMs: 400, onProgress: () => (progress += 1) }),
    );
    const ms = performance.now() - started;
    expect(isTaskgateError(error) && error.code).toBe('TG_CALL_TIMEOUT');
    expect((error as { details?: unknown }).details).toEqual({ clock: 'max', limitMs: 400 });
    expect(progress).toBeGreaterThan(0);
    expect(ms).toBeLessThan(5_000);
    await client.callTool('echo', {});
    expect((await wire()).some((line) => line.method === 'notifications/cancelled')).toBe(true);
  });

  it('a call cancelled before it starts sends nothing', async () => {
    const client = await connect();
    const error = await rejection(client.callTool('echo', {}, { signal: AbortSignal.abort() }));
    expect((error as Error).name).toBe('AbortError');
    await client.callTool('echo', { after: true });
    expect((await wire()).filter((line) => line.method === 'tools/call')).toHaveLength(1);
  });

  it('a server SIGKILLed with the call sent: the outcome is unknown, not retried; later calls fail at once', async () => {
    const client = await connect();
    const error = await rejection(client.callTool('crash', { order: 7 }));
    // The fixture's tools carry no retry policy, so they are unsafe: one attempt, then a handle.
    expect(isTaskgateError(error) && error.code).toBe('TG_CALL_OUTCOME_UNKNOWN');
    expect((error as { details?: { handle?: unknown } }).details?.handle).toMatchObject({
      tool: 'crash',
      attempts: 1,
      retryClass: 'unsafe',
    });
    expect((await wire()).filter((line) => line.method === 'tools/call')).toHaveLength(1);
    const started = performance.now();
    const after = await rejection(client.callTool('echo', {}));
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(isTaskgateError(after) && after.code).toBe('TG_SERVER_UNREACHABLE');
    expect((after as Error).message).toMatch(/stdio server .* exited|has ended/);
  });
});
