import { DownstreamConnection, type DownstreamErrorKind } from '@taskgate/gateway';
import { afterEach, describe, expect, it } from 'vitest';
import { type HttpDownstreamFixture, startHttpDownstream } from '../support/http-downstream.ts';
import { waitForTask } from '../support/task-platform.ts';

// A downstream MCP server built with the official SDK v2 over Streamable HTTP, as a gateway
// worker holds it: 2026-07-28 negotiated, its tools listed, a call's progress relayed, a cancel
// that is the close of the call's own stream (no notifications/cancelled is POSTed) reaching the
// downstream handler's abort signal, a crash failing the call plainly, a reconnect to the
// restarted server after the backoff, the id map empty after each.
const quiet = { info: () => {}, warn: () => {} };
const open: DownstreamConnection[] = [];
const servers: HttpDownstreamFixture[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((connection) => connection.close()));
  await Promise.all(servers.splice(0).map((server) => server.kill()));
});

async function downstream(
  options: {
    now?: () => number;
    env?: Record<string, string>;
    bearerToken?: string;
    kind?: 'per-request' | 'handshake';
  } = {},
) {
  const server = await startHttpDownstream({ DOWNSTREAM_WIRE: '1', ...options.env }, options.kind);
  servers.push(server);
  const errors: DownstreamErrorKind[] = [];
  const connection = new DownstreamConnection({
    name: 'remote',
    http: { url: server.url, ...(options.bearerToken ? { bearerToken: options.bearerToken } : {}) },
    log: quiet,
    restart: { firstDelayMs: 1_000, maxDelayMs: 1_000 },
    random: () => 0.999,
    onError: (kind) => errors.push(kind),
    ...(options.now ? { now: options.now } : {}),
  });
  open.push(connection);
  return { connection, server, errors };
}

const never = () => new AbortController().signal;

describe('a Streamable HTTP downstream (SDK v2, 2026-07-28)', () => {
  it('lists its tools and relays a call with its progress; the id map is empty after', async () => {
    const { connection, server } = await downstream();
    expect((await connection.start()).map((tool) => tool.name)).toEqual(['slow_echo', 'crash']);
    // 2026-07-28: no initialize; server/discover, then each request on a POST of its own.
    expect(server.lines()).toContain('wire server/discover');
    expect(server.lines()).not.toContain('wire initialize');
    const progress: number[] = [];
    const result = await connection.call(
      'slow_echo',
      { text: 'hi', steps: 3 },
      { signal: never(), label: 'task-1', onProgress: (value) => progress.push(value) },
    );
    expect(result).toMatchObject({
      content: [{ type: 'text', text: 'echo: hi' }],
      structuredContent: { echoed: 'hi' },
    });
    expect(progress).toEqual([1, 2, 3]);
    expect(server.lines().filter((line) => !line.startsWith('wire'))).toEqual(['started task-1', 'done task-1']);
    expect(connection.inFlight).toEqual([]);
  });

  it("turns the task's stop into the close of the call's stream, which aborts the downstream handler", async () => {
    const { connection, server } = await downstream();
    await connection.start();
    const stop = new AbortController();
    let entries = -1;
    const call = connection.call(
      'slow_echo',
      { text: 'long', steps: 200 },
      {
        signal: stop.signal,
        label: 'task-2',
        onProgress: () => {
          // While the call lives, the id map has it.
          entries = connection.inFlight.length;
          stop.abort(new Error('the task was cancelled'));
        },
      },
    );
    await expect(call).rejects.toThrow('the task was cancelled');
    expect(entries).toBe(1);
    expect(connection.inFlight).toEqual([]);
    await waitForTask(
      async () => server.lines(),
      (seen) => seen.includes('aborted task-2'),
    );
    expect(server.lines()).not.toContain('done task-2');
    // The cancel was the stream's close: nothing was POSTed for it.
    expect(server.lines()).not.toContain('wire notifications/cancelled');
    const after = await connection.call('slow_echo', { text: 'again', steps: 0 }, { signal: never(), label: 'task-3' });
    expect(after.structuredContent).toEqual({ echoed: 'again' });
    expect(connection.inFlight).toEqual([]);
  });

  it('fails a call plainly when the server crashes, refuses calls during the backoff, then reconnects', async () => {
    let now = 1_000_000;
    const { connection, server, errors } = await downstream({ now: () => now });
    await connection.start();
    await expect(connection.call('crash', {}, { signal: never(), label: 'task-4' })).rejects.toMatchObject({
      code: 'TG_DOWNSTREAM_GONE',
      message: expect.stringContaining(
        'downstream remote could not be reached; whether the call took effect there is unknown',
      ),
    });
    await server.exited();
    expect(server.lines()).toContain('crash task-4');
    expect(connection.inFlight).toEqual([]);
    expect(connection.connected).toBe(false);
    await expect(
      connection.call('slow_echo', { text: 'x', steps: 0 }, { signal: never(), label: 'task-5' }),
    ).rejects.toMatchObject({ code: 'TG_DOWNSTREAM_UNAVAILABLE', message: expect.stringMatching(/restarts in 1 s/) });
    // Still down after the backoff: the reconnect fails, and waits a backoff again.
    now += 1_000;
    await expect(
      connection.call('slow_echo', { text: 'x', steps: 0 }, { signal: never(), label: 'task-6' }),
    ).rejects.toMatchObject({ code: 'TG_DOWNSTREAM_UNAVAILABLE', message: expect.stringContaining('did not start') });
    await server.start();
    now += 1_000;
    const back = await connection.call('slow_echo', { text: 'back', steps: 0 }, { signal: never(), label: 'task-7' });
    expect(back.structuredContent).toEqual({ echoed: 'back' });
    expect(connection.connected).toBe(true);
    expect(connection.inFlight).toEqual([]);
    expect(errors).toEqual(['gone', 'unavailable', 'unavailable']);
  });

  it('fails the calls in flight when the server is killed under them, and empties the id map', async () => {
    const { connection, server } = await downstream();
    await connection.start();
    // With progress, each response is an SSE stream already open when the server dies: the
    // stream's end, with no response on it, is what fails the call.
    const calls = Promise.allSettled(
      [1, 2, 3].map((n) =>
        connection.call(
          'slow_echo',
          { text: `n${n}`, steps: 400 },
          { signal: never(), label: `many-${n}`, onProgress: () => {} },
        ),
      ),
    );
    await waitForTask(
      async () => server.lines().filter((line) => line.startsWith('started many-')).length,
      (started) => started === 3,
    );
    expect(connection.inFlight.map((entry) => entry.label).sort()).toEqual(['many-1', 'many-2', 'many-3']);
    await server.kill();
    for (const outcome of await calls) {
      expect(outcome).toMatchObject({ status: 'rejected', reason: { code: 'TG_DOWNSTREAM_GONE' } });
    }
    expect(connection.inFlight).toEqual([]);
  });

  it('fails a call whose response stream is cut before its response, and only that call', async () => {
    const { connection, server } = await downstream();
    await connection.start();
    const other = connection.call(
      'slow_echo',
      { text: 'kept', steps: 6 },
      { signal: never(), label: 'kept', onProgress: () => {} },
    );
    // Without a bound of its own (no clocks here), only the stream's end can end this call.
    await expect(
      connection.call(
        'slow_echo',
        { text: 'drop', steps: 400 },
        { signal: never(), label: 'dropped', onProgress: () => {} },
      ),
    ).rejects.toMatchObject({
      code: 'TG_DOWNSTREAM_GONE',
      message: expect.stringContaining("ended the call's response stream before its response"),
    });
    expect((await other).structuredContent).toEqual({ echoed: 'kept' });
    expect(connection.connected).toBe(true);
    expect(connection.inFlight).toEqual([]);
    expect(server.lines()).toContain('started dropped');
  });

  it('fails only the call an HTTP error status answered, and serves the others on', async () => {
    const { connection, server, errors } = await downstream({ env: { DOWNSTREAM_FAIL_TOOL: 'crash' } });
    await connection.start();
    const long = connection.call(
      'slow_echo',
      { text: 'on', steps: 6 },
      { signal: never(), label: 'long', onProgress: () => {} },
    );
    await expect(connection.call('crash', {}, { signal: never(), label: 'refused' })).rejects.toMatchObject({
      code: 'TG_DOWNSTREAM_GONE',
      // What the server said in its body is not echoed (it may echo what it was sent).
      message: 'downstream remote answered the call with HTTP 503; whether the call took effect there is unknown',
    });
    expect(connection.connected).toBe(true);
    expect((await long).structuredContent).toEqual({ echoed: 'on' });
    expect(server.lines()).not.toContain('crash refused');
    expect(errors).toEqual(['gone']);
    expect(connection.inFlight).toEqual([]);
  });

  it('sends its bearer token, and names the server that refuses it', async () => {
    const good = await downstream({ env: { DOWNSTREAM_TOKEN: 'sesame' }, bearerToken: 'sesame' });
    expect((await good.connection.start()).length).toBe(2);
    const bad = await downstream({ env: { DOWNSTREAM_TOKEN: 'sesame' }, bearerToken: 'wrong' });
    await expect(bad.connection.start()).rejects.toMatchObject({
      code: 'TG_DOWNSTREAM_UNAVAILABLE',
      message: expect.stringContaining(`downstream remote did not start (${bad.server.url})`),
    });
  });
});

describe('a Streamable HTTP downstream of the 2025 revisions (SDK v1, with sessions)', () => {
  it("is reached through its session; a stop is its own POSTed notifications/cancelled, with the gateway's id", async () => {
    const { connection, server } = await downstream({ kind: 'handshake' });
    expect((await connection.start()).map((tool) => tool.name)).toContain('slow_echo');
    // The discover probe was refused, and the 2025 handshake followed.
    expect(server.lines()).toContain('wire initialize');
    const progress: number[] = [];
    const done = await connection.call(
      'slow_echo',
      { text: 'old', steps: 2 },
      { signal: never(), label: 'legacy-1', onProgress: (value) => progress.push(value) },
    );
    expect(done.structuredContent).toEqual({ echoed: 'old' });
    expect(progress.length).toBeGreaterThanOrEqual(1);

    const stop = new AbortController();
    let sentId: string | number | undefined;
    const call = connection.call(
      'slow_echo',
      { text: 'long', steps: 400 },
      {
        signal: stop.signal,
        label: 'legacy-2',
        onProgress: () => {
          sentId = connection.inFlight[0]?.requestId;
          stop.abort(new Error('the task was cancelled'));
        },
      },
    );
    await expect(call).rejects.toThrow('the task was cancelled');
    expect(sentId).toBeDefined();
    expect(connection.inFlight).toEqual([]);
    await waitForTask(
      async () => server.lines(),
      (lines) => lines.includes('aborted legacy-2'),
    );
    expect(server.lines()).toContain('wire notifications/cancelled');
    expect(server.lines()).not.toContain('done legacy-2');
  });
});
