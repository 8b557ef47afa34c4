import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DownstreamConnection, DownstreamError } from '@taskgate/gateway';
import { afterEach, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/cli.ts';
import { liveProcessesWith } from '../support/process-tree.ts';
import { waitForTask } from '../support/task-platform.ts';

// A downstream MCP server built with the official SDK (v1) over stdio, as a gateway worker holds
// it: its tools listed, a call's progress relayed, a cancel reaching the downstream handler's own
// abort signal, a crash failing the call plainly, a restart after the backoff, the id map empty.
const FIXTURE = path.join(REPO_ROOT, 'test/fixtures/downstream-stdio-server.ts');
const quiet = { info: () => {}, warn: () => {} };
const open: DownstreamConnection[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((connection) => connection.close()));
});

function downstream(
  overrides: {
    now?: () => number;
    command?: string;
    args?: string[];
    onToolsChanged?: (tools: readonly { name: string }[]) => void;
  } = {},
) {
  const logFile = path.join(mkdtempSync(path.join(tmpdir(), 'tg-downstream-')), 'log');
  writeFileSync(logFile, '');
  const connection = new DownstreamConnection({
    name: 'fixture',
    stdio: {
      command: overrides.command ?? process.execPath,
      args: overrides.args ?? [FIXTURE],
      env: { DOWNSTREAM_LOG: logFile },
    },
    log: quiet,
    restart: { firstDelayMs: 1_000, maxDelayMs: 1_000 },
    random: () => 0.999,
    ...(overrides.now ? { now: overrides.now } : {}),
    ...(overrides.onToolsChanged ? { onToolsChanged: overrides.onToolsChanged } : {}),
  });
  open.push(connection);
  const lines = () => readFileSync(logFile, 'utf8').split('\n').filter(Boolean);
  return { connection, lines };
}

describe('a stdio downstream', () => {
  it('lists its tools and relays a call with its progress; the id map is empty after', async () => {
    const { connection, lines } = downstream();
    expect((await connection.start()).map((tool) => tool.name)).toEqual([
      'slow_echo',
      'crash',
      'grow',
      'shrink',
      'not a valid name!',
    ]);
    const progress: number[] = [];
    const result = await connection.call(
      'slow_echo',
      { text: 'hi', steps: 3 },
      { signal: new AbortController().signal, label: 'task-1', onProgress: (value) => progress.push(value) },
    );
    expect(result).toMatchObject({
      content: [{ type: 'text', text: 'echo: hi' }],
      structuredContent: { echoed: 'hi' },
    });
    // The SDK handles a notification a microtask after the line it came on, so the last one can
    // lose the race with the response right behind it; the ones before it always arrive.
    expect(progress.slice(0, 2)).toEqual([1, 2]);
    expect(progress.length).toBeGreaterThanOrEqual(2);
    expect(lines()).toEqual(['started task-1', 'done task-1']);
    expect(connection.inFlight).toEqual([]);
  });

  it("turns the task's stop into the downstream's own cancel, which aborts its handler", async () => {
    const { connection, lines } = downstream();
    const stop = new AbortController();
    const call = connection.call(
      'slow_echo',
      { text: 'long', steps: 200 },
      {
        signal: stop.signal,
        label: 'task-2',
        onProgress: () => stop.abort(new Error('the task was cancelled')),
      },
    );
    await expect(call).rejects.toThrow('the task was cancelled');
    // Over as soon as the cancel is sent: nothing waits for a response that will not come.
    expect(connection.inFlight).toEqual([]);
    await waitForTask(
      async () => lines(),
      (seen) => seen.includes('aborted task-2'),
    );
    expect(lines()).not.toContain('done task-2');
    // The connection serves on.
    const after = await connection.call(
      'slow_echo',
      { text: 'again', steps: 0 },
      { signal: new AbortController().signal, label: 'task-3' },
    );
    expect(after.structuredContent).toEqual({ echoed: 'again' });
  });

  it('fails a call plainly when the downstream crashes, refuses calls during its backoff, then restarts', async () => {
    let now = 1_000_000;
    const { connection, lines } = downstream({ now: () => now });
    await connection.start();
    const crashed = connection.call('crash', {}, { signal: new AbortController().signal, label: 'task-4' });
    await expect(crashed).rejects.toBeInstanceOf(DownstreamError);
    await expect(crashed).rejects.toMatchObject({
      code: 'TG_DOWNSTREAM_GONE',
      message: expect.stringContaining('downstream fixture exited'),
    });
    expect(lines()).toContain('crash task-4');
    expect(connection.inFlight).toEqual([]);
    // Within its backoff: refused at once, saying when it restarts.
    await expect(
      connection.call('slow_echo', { text: 'x', steps: 0 }, { signal: new AbortController().signal, label: 'task-5' }),
    ).rejects.toMatchObject({ code: 'TG_DOWNSTREAM_UNAVAILABLE', message: expect.stringMatching(/restarts in 1 s/) });
    now += 1_000;
    const restarted = await connection.call(
      'slow_echo',
      { text: 'back', steps: 0 },
      { signal: new AbortController().signal, label: 'task-6' },
    );
    expect(restarted.structuredContent).toEqual({ echoed: 'back' });
    expect(connection.inFlight).toEqual([]);
  });

  it('fails a crashed call at once even when a child of the server still holds its output', async () => {
    const sleep = `${300 + (process.pid % 100)}.${Date.now() % 10_000}`;
    // A wrapper shell leaves a sleep behind that inherited the server's stdout and stderr.
    const { connection } = downstream({
      command: 'sh',
      args: ['-c', `sleep ${sleep} & exec "$0" "$1"`, process.execPath, FIXTURE],
    });
    await connection.start();
    const started = Date.now();
    await expect(
      connection.call('crash', {}, { signal: new AbortController().signal, label: 'task-7' }),
    ).rejects.toMatchObject({ code: 'TG_DOWNSTREAM_GONE', message: expect.stringContaining('exited with status 3') });
    expect(Date.now() - started).toBeLessThan(2_000);
    // The server's process group goes with it: the sleep it left is killed too.
    await waitForTask(
      async () => liveProcessesWith(sleep).length,
      (left) => left === 0,
      5_000,
    );
  });

  it('leaves nothing running when it is closed while it starts', async () => {
    const marker = `${Date.now()}.closed.${process.pid}`;
    const { connection } = downstream({ args: [FIXTURE, marker] });
    const starting = connection.start();
    await connection.close();
    await expect(starting).rejects.toMatchObject({ code: 'TG_DOWNSTREAM_UNAVAILABLE' });
    await expect(
      connection.call('slow_echo', { text: 'x', steps: 0 }, { signal: new AbortController().signal, label: 'late' }),
    ).rejects.toMatchObject({ message: 'downstream fixture is stopped' });
    await waitForTask(
      async () => liveProcessesWith(marker).length,
      (left) => left === 0,
      5_000,
    );
  });

  it("lists the downstream's tools again when it says they changed, and hands the new list on", async () => {
    const lists: string[][] = [];
    const { connection } = downstream({ onToolsChanged: (tools) => lists.push(tools.map((tool) => tool.name)) });
    await connection.start();
    await connection.call('grow', {}, { signal: new AbortController().signal, label: 'task-8' });
    await waitForTask(
      async () => lists.length,
      (count) => count === 1,
    );
    expect(lists[0]).toContain('late_echo');
    expect(connection.tools.map((tool) => tool.name)).toContain('late_echo');
    const late = await connection.call('late_echo', {}, { signal: new AbortController().signal, label: 'task-9' });
    expect(late.content).toEqual([{ type: 'text', text: 'late' }]);
  });

  it('names the command of a downstream that cannot start', async () => {
    const { connection } = downstream({ command: '/no/such/server' });
    await expect(connection.start()).rejects.toMatchObject({
      code: 'TG_DOWNSTREAM_UNAVAILABLE',
      message: expect.stringContaining('downstream fixture did not start (/no/such/server)'),
    });
  });
});
