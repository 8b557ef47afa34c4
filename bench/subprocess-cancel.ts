// Subprocess tree cancel: from a task's stop (its signal aborting, what a cancel, a clock or a
// release does at the worker) to the last process of a ctx.spawn() tree gone — a shell and two
// sleeping children — for a tree that dies of SIGTERM and for one that ignores it (SIGKILL at the
// grace period). "Gone" is checked in /proc, zombies left out (nothing reaps orphans here).
// Anchor, same run: the same tree started with child_process.spawn({ detached: true }) and killed
// by hand with process.kill(-pgid, 'SIGTERM'), timed to the same /proc check: the kernel's floor.
//   npm run bench -- subprocess-cancel
import { spawn } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { TaskCancelledError } from '@taskgate/sdk';
import { runSubprocess } from '../packages/tools/src/subprocess.ts';
import { liveProcessesWith } from '../test/support/process-tree.ts';
import { below, figure, printTable, reportGoals, summary } from './support/report.ts';

const RUNS = Number(process.env.RUNS ?? 40);
const GRACE_MS = Number(process.env.GRACE_MS ?? 200);

async function until(predicate: () => boolean): Promise<void> {
  const deadline = performance.now() + 10_000;
  while (!predicate()) {
    if (performance.now() > deadline) throw new Error('the tree never reached the state waited for');
    await new Promise((resolve) => setImmediate(resolve));
  }
}

function tree(seconds: string, ignoreTerm: boolean): string[] {
  return ['-c', `${ignoreTerm ? 'trap "" TERM; ' : ''}sleep ${seconds} & sleep ${seconds} & wait`, 'tree', seconds];
}

const marker = () => `${randomInt(100_000, 999_999)}.${randomInt(1_000, 9_999)}`;

/** ctx.spawn's stop: abort → spawn() rejected; the tree must be gone by then (counted if not). */
async function ours(ignoreTerm: boolean): Promise<{ latencies: number[]; left: number }> {
  const latencies: number[] = [];
  let left = 0;
  for (let run = 0; run < RUNS; run++) {
    const seconds = marker();
    const stop = new AbortController();
    const running = runSubprocess(
      'sh',
      tree(seconds, ignoreTerm),
      {},
      {
        signal: stop.signal,
        graceMs: GRACE_MS,
        log: () => {},
      },
    ).catch(() => {});
    await until(() => liveProcessesWith(seconds).length === 3);
    const started = performance.now();
    stop.abort(new TaskCancelledError('bench'));
    await running;
    latencies.push(performance.now() - started);
    if (liveProcessesWith(seconds).length > 0) left += 1;
  }
  return { latencies, left };
}

/** By hand: kill the group, poll /proc until nothing of it runs. */
async function anchor(): Promise<number[]> {
  const latencies: number[] = [];
  for (let run = 0; run < RUNS; run++) {
    const seconds = marker();
    const child = spawn('sh', tree(seconds, false), { detached: true, stdio: 'ignore' });
    await until(() => liveProcessesWith(seconds).length === 3);
    const started = performance.now();
    process.kill(-(child.pid as number), 'SIGTERM');
    await until(() => liveProcessesWith(seconds).length === 0);
    latencies.push(performance.now() - started);
  }
  return latencies;
}

const rows: Record<string, string | number>[] = [];
const row = (path: string, latencies: number[], left: number | string) => {
  const s = summary(latencies);
  rows.push({ path, n: s.n, 'p50 ms': s.p50, 'p99 ms': s.p99, 'max ms': s.max, 'trees left': left });
};
const terminated = await ours(false);
row('ctx.spawn: tree that dies of SIGTERM, stop → spawn() rejected', terminated.latencies, terminated.left);
const killed = await ours(true);
row(`ctx.spawn: tree that ignores SIGTERM, grace ${GRACE_MS} ms`, killed.latencies, killed.left);
row('by hand: kill(-pgid, SIGTERM) → /proc empty', await anchor(), '-');
printTable('Subprocess tree cancel (a shell and two sleeping children)', rows);
reportGoals({ RUNS, GRACE_MS }, [
  {
    metric: 'subprocess tree (dies of SIGTERM) stop → last process gone p99',
    unit: 'ms',
    rule: below(50),
    ours: figure(rows, 'ctx.spawn: tree that dies', 'p99 ms'),
    anchor: { label: 'kill(-pgid) by hand → /proc empty', value: figure(rows, 'by hand', 'p99 ms') },
  },
  {
    metric: `subprocess tree (ignores SIGTERM) stop → last process gone p99 (grace ${GRACE_MS} ms + 50 ms)`,
    unit: 'ms',
    rule: below(GRACE_MS + 50),
    ours: figure(rows, 'ctx.spawn: tree that ignores', 'p99 ms'),
    anchor: { label: 'kill(-pgid) by hand → /proc empty', value: figure(rows, 'by hand', 'p99 ms') },
  },
]);
process.exit(terminated.left + killed.left === 0 ? 0 : 1);
