import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DownstreamConnection, type DownstreamOptions } from '@taskgate/gateway';
import { afterEach, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/cli.ts';
import { waitForTask } from '../support/task-platform.ts';

// A downstream that answers with a task (the official SDK v1's experimental tasks, 2025-11-25,
// over stdio): the gateway asks for a task, polls it to its end and reads its result; a stop
// becomes tasks/cancel, after which the downstream's work stops at its next step; the id map
// holds the task while it lives downstream and is empty at the end.
const FIXTURE = path.join(REPO_ROOT, 'test/fixtures/downstream-task-server.ts');
const open: DownstreamConnection[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((connection) => connection.close()));
});

function downstream(extra: Pick<DownstreamOptions, 'onOrphan' | 'taskCancelGraceMs' | 'now' | 'restart'> = {}) {
  const logFile = path.join(mkdtempSync(path.join(tmpdir(), 'tg-task-downstream-')), 'log');
  writeFileSync(logFile, '');
  const connection = new DownstreamConnection({
    name: 'tasks',
    stdio: { command: process.execPath, args: [FIXTURE], env: { DOWNSTREAM_LOG: logFile, STUBBORN_MS: '1500' } },
    log: { info: () => {}, warn: () => {} },
    // Long enough for a loaded machine to answer a tasks/cancel; the orphan test sets its own.
    taskCancelGraceMs: 5_000,
    ...extra,
  });
  open.push(connection);
  return { connection, lines: () => readFileSync(logFile, 'utf8').split('\n').filter(Boolean) };
}

const never = () => new AbortController().signal;

describe('a downstream that answers with a task', () => {
  it('is polled to its end, its result read, its progress relayed; the map holds the task meanwhile', async () => {
    const { connection, lines } = downstream();
    const tools = await connection.start();
    expect(tools.find((tool) => tool.name === 'slow_task')?.execution).toEqual({ taskSupport: 'required' });
    const progress: number[] = [];
    const seen: string[] = [];
    const result = await connection.call(
      'slow_task',
      { steps: 4 },
      {
        signal: never(),
        label: 'task-1',
        asTask: true,
        onProgress: (value) => {
          progress.push(value);
          seen.push(...connection.inFlight.map((entry) => `${entry.kind} ${entry.label}`));
        },
      },
    );
    expect(result).toMatchObject({ content: [{ type: 'text', text: 'did 4 steps' }], structuredContent: { steps: 4 } });
    expect(progress.slice(0, 3)).toEqual([1, 2, 3]);
    // While the work went on downstream, the map held it as a task (the tools/call was answered).
    expect(new Set(seen)).toEqual(new Set(['task task-1']));
    expect(lines()).toEqual(['started task-1', 'done task-1']);
    expect(connection.inFlight).toEqual([]);
  });

  it('turns a stop into tasks/cancel, and the downstream work stops', async () => {
    const { connection, lines } = downstream();
    await connection.start();
    const stop = new AbortController();
    const call = connection.call(
      'slow_task',
      { steps: 400 },
      {
        signal: stop.signal,
        label: 'task-2',
        asTask: true,
        onProgress: () => stop.abort(new Error('the task was cancelled')),
      },
    );
    await expect(call).rejects.toThrow('the task was cancelled');
    expect(connection.inFlight).toEqual([]);
    await waitForTask(
      async () => lines(),
      (found) => found.includes('aborted task-2'),
    );
    expect(lines()).not.toContain('done task-2');
  });

  it("gives a failed task's result as the call's", async () => {
    const { connection } = downstream();
    const result = await connection.call('fail_task', {}, { signal: never(), label: 'task-3', asTask: true });
    expect(result).toMatchObject({
      isError: true,
      content: [{ type: 'text', text: 'the downstream could not do it' }],
    });
    expect(connection.inFlight).toEqual([]);
  });

  it('counts a task still running after its grace period as orphaned, and keeps it mapped until it ends', async () => {
    const orphans: string[] = [];
    const { connection, lines } = downstream({
      onOrphan: ({ tool, label, delta }) => orphans.push(`${tool} ${label} ${delta}`),
      taskCancelGraceMs: 100,
    });
    await connection.start();
    const stop = new AbortController();
    const call = connection.call('stubborn_task', {}, { signal: stop.signal, label: 'task-4', asTask: true });
    // Once the create is answered (the map holds the task): the stop meets a task it knows of.
    await waitForTask(
      async () => connection.inFlight.map((entry) => entry.kind),
      (kinds) => kinds.includes('task'),
    );
    stop.abort(new Error('the task was cancelled'));
    await expect(call).rejects.toThrow('the task was cancelled');
    // Released after the grace period (100 ms) while the downstream task still runs (1.5 s after
    // its cancel), or while its cancel is not even answered yet (a loaded machine): either way
    // it is not known to have ended, so it is orphaned work, kept in the map.
    expect(orphans).toEqual(['stubborn_task task-4 1']);
    expect(connection.inFlight.map((entry) => `${entry.kind} ${entry.label}`)).toEqual(['task task-4']);
    await waitForTask(
      async () => lines(),
      (found) => found.includes('ignored cancel'),
    );
    await waitForTask(
      async () => orphans.length,
      (count) => count === 2,
      5_000,
    );
    expect(orphans).toEqual(['stubborn_task task-4 1', 'stubborn_task task-4 -1']);
    expect(lines()).toContain('stubborn ended');
    expect(connection.inFlight).toEqual([]);
  });

  it('cancels a task that asks for input, which a gateway cannot give, and says so', async () => {
    const { connection } = downstream();
    await expect(
      connection.call('asking_task', {}, { signal: never(), label: 'task-5', asTask: true }),
    ).rejects.toMatchObject({
      code: 'TG_DOWNSTREAM_TASK_ENDED',
      message: expect.stringContaining('input_required without a result: it asks for input'),
    });
    expect(connection.inFlight).toEqual([]);
  });

  it('gives the result of a task that completed before its cancel landed', async () => {
    const { connection, lines } = downstream();
    await connection.start();
    const stop = new AbortController();
    const call = connection.call('done_task', {}, { signal: stop.signal, label: 'task-6', asTask: true });
    await waitForTask(
      async () => connection.inFlight.map((entry) => entry.kind),
      (kinds) => kinds.includes('task'),
    );
    expect(lines()).toContain('started task-6');
    stop.abort(new Error('the task was cancelled'));
    // The work was done downstream: its result, not a cancel.
    expect(await call).toMatchObject({ content: [{ type: 'text', text: 'already done' }] });
    expect(connection.inFlight).toEqual([]);
  });

  it('fails the call plainly when the server crashes under its task, then restarts it', async () => {
    let now = 1_000_000;
    const orphans: number[] = [];
    const { connection, lines } = downstream({
      now: () => now,
      restart: { firstDelayMs: 1_000, maxDelayMs: 1_000 },
      onOrphan: ({ delta }) => orphans.push(delta),
    });
    await connection.start();
    await expect(
      connection.call('crash_task', {}, { signal: never(), label: 'task-7', asTask: true }),
    ).rejects.toMatchObject({
      code: 'TG_DOWNSTREAM_GONE',
      message: expect.stringContaining('downstream tasks exited with status 3'),
    });
    expect(lines()).toContain('started task-7');
    expect(connection.inFlight).toEqual([]);
    // Its process group went with it: no work of it goes on, so none is counted as orphaned.
    expect(orphans).toEqual([]);
    now += 2_000;
    const result = await connection.call('slow_task', { steps: 1 }, { signal: never(), label: 'task-8', asTask: true });
    expect(result).toMatchObject({ structuredContent: { steps: 1 } });
    expect(connection.inFlight).toEqual([]);
  });
});
