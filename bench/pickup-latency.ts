// Pickup latency: from asking for a task to its handler starting, at a steady 200 tasks/s.
// Anchor, in the same run on the same database: pg-boss 12 from send() to handler start, with its
// default polling (2 s, no LISTEN/NOTIFY) and with NOTIFY turned on.
//   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench -- pickup-latency
import { setTimeout as delay } from 'node:timers/promises';
import { defineTool } from '@taskgate/sdk';
import { PgBoss } from 'pg-boss';
import { startPlatform } from '../test/support/task-platform.ts';
import { benchDatabase } from './support/bench-database.ts';
import { atRate, below, figure, printTable, reportGoals, summary } from './support/report.ts';

const RATE = Number(process.env.RATE ?? 200);
const TOTAL = Number(process.env.TOTAL ?? 2_000);
/** How long after the last send a run may wait for its stragglers: a run never hangs the bench. */
const STALL_MS = 30_000;
const stalled = (promise: Promise<void>) => Promise.race([promise.then(() => false), delay(STALL_MS).then(() => true)]);

const database = await benchDatabase();
const rows: Record<string, string | number>[] = [];
try {
  // Taskgate: TaskService.create (task row + event + job in one transaction) → handler start.
  const requested = new Map<number, number>();
  const started = new Map<number, number>();
  let onStart: (seq: number) => void = () => {};
  const probe = defineTool<{ seq: number }>({
    name: 'bench_probe',
    description: 'records when it starts',
    inputSchema: { type: 'object', properties: { seq: { type: 'integer' } }, required: ['seq'] },
    retry: 'safe',
    async handler({ seq }) {
      onStart(seq);
      return { content: [] };
    },
  });
  const taskgate = await startPlatform(database.url, { tools: [probe] as never });
  await taskgate.startWorker({ concurrency: 32 });
  const run = async (label: string, total: number) => {
    requested.clear();
    started.clear();
    const allStarted = new Promise<void>((resolve) => {
      onStart = (seq) => {
        started.set(seq, performance.now());
        if (started.size === total) resolve();
      };
    });
    await atRate(total, RATE, async (seq) => {
      requested.set(seq, performance.now());
      await taskgate.service.create('bench', { tool: 'bench_probe', arguments: { seq } });
    });
    if (await stalled(allStarted)) {
      throw new Error(`${label}: ${total - started.size} of ${total} tasks never started within ${STALL_MS} ms`);
    }
    return { label, latencies: [...started].map(([seq, at]) => at - (requested.get(seq) as number)) };
  };
  await run('warm-up', 100);
  // Statistics as a running system has them (BenchDatabase.analyze); the anchors below run after it too.
  await database.analyze();
  const ours = await run('taskgate', TOTAL);
  await taskgate.stop();
  rows.push(row('taskgate: create → handler start (LISTEN/NOTIFY, 32 handlers)', ours.latencies));

  // Anchors: raw pg-boss, send → handler start.
  for (const variant of [
    { label: 'pg-boss 12 defaults: send → handler start (2 s polling)', notify: false },
    { label: 'pg-boss 12 with useListenNotify + queue notify', notify: true },
  ]) {
    const boss = new PgBoss({
      connectionString: database.url,
      useListenNotify: variant.notify,
      supervise: false,
      schedule: false,
    });
    boss.on('error', () => {});
    await boss.start();
    const queue = `anchor_${variant.notify ? 'notify' : 'default'}`;
    await boss.createQueue(queue, variant.notify ? { notify: true } : {});
    const sent = new Map<number, number>();
    const began = new Map<number, number>();
    const done = new Promise<void>((resolve) => {
      // Default polling; the batch is sized so one poll every 2 s can keep up with the rate.
      void boss.work<{ seq: number }>(
        queue,
        variant.notify ? { localConcurrency: 8 } : { batchSize: Math.ceil(RATE * 2.5) },
        async (jobs) => {
          for (const job of jobs) began.set(job.data.seq, performance.now());
          if (began.size >= TOTAL) resolve();
        },
      );
    });
    await atRate(TOTAL, RATE, async (seq) => {
      sent.set(seq, performance.now());
      await boss.send(queue, { seq });
    });
    // pg-boss with notify has been seen to leave jobs unfetched for minutes: measured as far as
    // it got, said in the label.
    const stuck = (await stalled(done)) ? TOTAL - began.size : 0;
    await boss.stop({ graceful: false, close: true });
    rows.push(
      row(
        stuck === 0
          ? variant.label
          : `${variant.label} (${stuck} of ${TOTAL} never started within ${STALL_MS / 1000} s)`,
        [...began].map(([seq, at]) => at - (sent.get(seq) as number)),
      ),
    );
  }
} finally {
  await database.drop();
}

printTable(`Pickup latency at ${RATE} tasks/s, ${TOTAL} tasks each (ms)`, rows);
reportGoals({ RATE, TOTAL }, [
  {
    metric: 'pickup p99 (create → handler start)',
    unit: 'ms',
    rule: below(20),
    ours: figure(rows, 'taskgate', 'p99 ms'),
    anchor: { label: 'pg-boss 12, useListenNotify + queue notify', value: figure(rows, 'pg-boss 12 with', 'p99 ms') },
  },
]);
process.exit(0);

function row(label: string, latencies: number[]) {
  const s = summary(latencies);
  return { path: label, n: s.n, 'p50 ms': s.p50, 'p99 ms': s.p99, 'max ms': s.max };
}
