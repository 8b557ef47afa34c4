// subscriptions/listen at scale: 1,000 working tasks watched by 100 listen streams.
// (1) Delivery lag, from the commit of each task's status change to the notifications/tasks that
//     carries it arriving at its listener (a separate process), p50/p99; goal p99 < 50 ms. The
//     changes are 2025-11-25 cancels (a committed `cancelled` at once) written by a third process
//     (bench/support/status-writer.ts), as a worker's writes would be.
//     Anchor, same run: the same number of bare Postgres NOTIFYs at the same rate, from commit to a
//     LISTENing pg client in this process — the floor for anything fed by NOTIFY.
// (2) API memory while 100 streams stall, each watching all 1,000 tasks, as every task changes
//     status 13 times (ROUNDS of working ⇄ input_required, then cancelled): heap+buffers and RSS of
//     this (the API) process after each round — it must level off once the listen buffers (one slot
//     per watched task) are full — then the readers resume and must get every task's final status.
//   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench -- mcp-task-notifications
import { type ChildProcess, fork } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import pg from 'pg';
import { startApi, startPlatform } from '../test/support/task-platform.ts';
import { benchDatabase } from './support/bench-database.ts';
import { atLeast, below, belowAnchor, figure, printTable, reportGoals, summary } from './support/report.ts';

const TASKS = Number(process.env.TASKS ?? 1_000);
const STREAMS = Number(process.env.STREAMS ?? 100);
const RATE = Number(process.env.RATE ?? 500); // status changes per second
const ROUNDS = Number(process.env.ROUNDS ?? 6);
// A 2 KB status message makes each notification large enough that 100 stalled readers outgrow the
// kernel's socket buffers (about 4 MB each on loopback here) and the server's own buffers fill.
const QUESTION = `bench question ${'·'.repeat(1_000)}`;
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const now = () => performance.timeOrigin + performance.now();

const rows: Record<string, string | number>[] = [];
// (2)'s figures for its goals: heap+buffers growth (MB) after round 2 and after the last round, and
// final statuses.
const stalledReport = { filledMb: Number.NaN, lastRoundMb: Number.NaN, pairsCancelled: Number.NaN };
const database = await benchDatabase();
try {
  // No worker: the tasks stay working until the bench changes their status (tasks/cancel of
  // 2025-11-25, which commits `cancelled` at once).
  const platform = await startPlatform(database.url);
  const api = await startApi(platform, database.url, { events: { keepaliveMs: 15_000, pollMs: 5_000 } });
  await api.app.listen({ host: '127.0.0.1', port: 0 });
  const url = `http://127.0.0.1:${(api.app.server.address() as AddressInfo).port}/mcp`;
  const create = async () =>
    Promise.all(
      Array.from({ length: TASKS }, (_, n) =>
        platform.service.create('default', { tool: 'slow_compute', arguments: { seconds: 600, label: `t${n}` } }),
      ),
    ).then((tasks) => tasks.map((task) => task.id));

  // Status changes come from a process of their own, as a worker's would.
  const writer = fork(path.join(import.meta.dirname, 'support/status-writer.ts'), { stdio: 'inherit' });
  const write = (ids: readonly string[], change: 'cancel' | 'park' | 'answer', key?: string, message?: string) =>
    new Promise<Map<string, number>>((resolve) => {
      writer.once('message', (reply) => resolve(new Map((reply as { committed: [string, number][] }).committed)));
      writer.send({ url: database.url, ids, rate: RATE, change, key, message });
    });

  // (1) Lag: each stream watches its own tenth of the tasks.
  const ids = await create();
  const groups = Array.from({ length: STREAMS }, (_, s) => ids.filter((_, n) => n % STREAMS === s));
  const lagClients = await openClients(url, groups, false);
  const committed = await write(ids, 'cancel');
  const lag = await report(lagClients, TASKS);
  const lags = lag.received.map(([id, at]) => at - (committed.get(id) as number));
  rows.push(
    row(`taskgate notifications/tasks (${STREAMS} streams × ${TASKS / STREAMS} tasks)`, lags, lag.received.length),
  );

  // Anchor: bare NOTIFY → LISTEN, same count and rate.
  rows.push(row('anchor: Postgres NOTIFY → LISTEN (pg client)', await notifyAnchor(database.url), TASKS));

  // (2) Stalled readers, each watching every task, while every task changes status again and again
  // (working ⇄ input_required, ROUNDS times, then cancelled). Memory is read after the first round
  // and at the end: with one slot per task and stream, more changes must not mean more memory.
  const stalledIds = await create();
  const stalled = await openClients(
    url,
    Array.from({ length: STREAMS }, () => stalledIds),
    true,
  );
  const before = memory();
  const memoryAfterRound: { held: number; rss: number; heapTotal: number }[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    const key = `question-${round}`;
    await write(stalledIds, 'park', key, QUESTION);
    await write(stalledIds, 'answer', key);
    // Let every subscription read and queue what it heard (a bench pause, not a race).
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    memoryAfterRound.push(memory());
    const reading = memoryAfterRound.at(-1) as { held: number; rss: number; heapTotal: number };
    console.error(
      `round ${round}: heap+buffers ${mb(reading.held - before.held)} MB, rss ${mb(reading.rss - before.rss)} MB`,
    );
  }
  await write(stalledIds, 'cancel');
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  const end = memory();
  stalled.send({ resume: true });
  const delivered = await report(stalled, TASKS * STREAMS);
  // Per stream, the last status each task reported must be its final one.
  const last = new Map<string, string>();
  for (const [id, , status, stream] of delivered.received) last.set(`${stream}/${id}`, status);
  stalledReport.filledMb = ((memoryAfterRound[1]?.held ?? Number.NaN) - before.held) / 2 ** 20;
  stalledReport.lastRoundMb = ((memoryAfterRound.at(-1)?.held ?? Number.NaN) - before.held) / 2 ** 20;
  stalledReport.pairsCancelled = [...last.values()].filter((status) => status === 'cancelled').length;
  printTable(`${STREAMS} stalled streams × ${TASKS} tasks each; every task changes status ${2 * ROUNDS + 1} times`, [
    {
      'heap+buffers MB after each round, then at the end': [...memoryAfterRound, end]
        .map((reading) => mb(reading.held - before.held))
        .join(' '),
      'rss MB after each round, then at the end': [...memoryAfterRound, end]
        .map((reading) => mb(reading.rss - before.rss))
        .join(' '),
      'status changes offered to streams': TASKS * (2 * ROUNDS + 1) * STREAMS,
      'notifications delivered after resume': delivered.received.length,
      'stream × task pairs ending cancelled': stalledReport.pairsCancelled,
    },
  ]);
  await api.close();
  writer.send({ stop: true });
  await platform.stop();
} finally {
  await database.drop();
}
printTable(`status commit → notification received, ${TASKS} tasks at ${RATE}/s`, rows);
reportGoals({ TASKS, STREAMS, RATE, ROUNDS }, [
  {
    metric: 'notifications/tasks lag p99 (status commit → listener)',
    unit: 'ms',
    rule: below(50),
    ours: figure(rows, 'taskgate', 'p99 ms'),
    anchor: { label: 'bare NOTIFY → LISTEN', value: figure(rows, 'anchor', 'p99 ms') },
  },
  {
    // "Bounded": with one slot per task and stream, once the buffers have filled the later rounds'
    // changes must not add memory. They fill over the first two rounds (the notifications of round
    // 1 are still being read when it is measured); rounds 3 and on must add less than a tenth of
    // what those two did (an unbounded buffer adds about as much again every round).
    metric: 'stalled streams: heap+buffers added after round 2, ×10',
    unit: 'MB',
    rule: belowAnchor(),
    ours: 10 * (stalledReport.lastRoundMb - stalledReport.filledMb),
    anchor: { label: 'added by rounds 1 and 2, same streams', value: stalledReport.filledMb },
  },
  {
    metric: 'stalled streams: stream × task pairs ending with the final status',
    unit: 'pairs',
    rule: atLeast(TASKS * STREAMS),
    ours: stalledReport.pairsCancelled,
  },
]);
process.exit(0);

function memory(): { held: number; rss: number; heapTotal: number } {
  gc();
  const usage = process.memoryUsage();
  return { held: usage.heapUsed + usage.external + usage.arrayBuffers, rss: usage.rss, heapTotal: usage.heapTotal };
}

function mb(bytes: number): string {
  return (bytes / 2 ** 20).toFixed(1);
}

function row(what: string, lags: number[], count: number) {
  const s = summary(lags);
  return { path: what, notifications: count, 'p50 ms': s.p50, 'p99 ms': s.p99, 'max ms': s.max };
}

/** Changes every task's status at RATE per second; resolves with each commit's time. */
async function changeAll(
  ids: readonly string[],
  change: (id: string) => Promise<unknown>,
): Promise<Map<string, number>> {
  const committed = new Map<string, number>();
  const started = performance.now();
  await Promise.all(
    ids.map(async (id, n) => {
      const due = started + (n * 1000) / RATE - performance.now();
      if (due > 0) await new Promise((resolve) => setTimeout(resolve, due));
      await change(id);
      committed.set(id, now());
    }),
  );
  return committed;
}

async function openClients(url: string, groups: string[][], stall: boolean): Promise<ChildProcess> {
  const child = fork(path.join(import.meta.dirname, 'support/listen-clients.ts'), { stdio: 'inherit' });
  await new Promise<void>((resolve) => {
    child.once('message', () => resolve());
    child.send({ open: { url, groups, stall } });
  });
  return child;
}

/** The child's notifications once `expected` have arrived (or after 30 s); the child then exits. */
function report(child: ChildProcess, expected: number): Promise<{ received: [string, number, string, number][] }> {
  return new Promise((resolve) => {
    child.once('message', (message) => resolve(message as { received: [string, number, string, number][] }));
    child.send({ report: { expected, timeoutMs: 30_000 } });
  });
}

async function notifyAnchor(url: string): Promise<number[]> {
  const listener = new pg.Client({ connectionString: url });
  const sender = new pg.Client({ connectionString: url });
  await Promise.all([listener.connect(), sender.connect()]);
  const arrived = new Map<string, number>();
  let done!: () => void;
  const all = new Promise<void>((resolve) => {
    done = resolve;
  });
  listener.on('notification', (message) => {
    arrived.set(message.payload as string, now());
    if (arrived.size === TASKS) done();
  });
  await listener.query('LISTEN bench_anchor');
  // The commit time is taken when the statement returns, as for the tasks above.
  const sent = await changeAll(
    Array.from({ length: TASKS }, (_, n) => `n${n}`),
    (id) => sender.query('SELECT pg_notify($1, $2)', ['bench_anchor', id]),
  );
  await all;
  await Promise.all([listener.end(), sender.end()]);
  return [...arrived].map(([id, at]) => at - (sent.get(id) as number));
}
