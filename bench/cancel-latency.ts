// Cancel latency: from a cancel request (TaskService.cancel, what POST /v1/tasks/:id/cancel runs)
// to the running handler's ctx.signal aborting, for tasks that are mid-run.
// Anchor, same run, same database: pg-boss 12's cancel() on an active job, and whether the
// running handler's job.signal ever hears of it (it is not told; it would run to its end).
//   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench -- cancel-latency
import { defineTool } from '@taskgate/sdk';
import { PgBoss } from 'pg-boss';
import { startPlatform } from '../test/support/task-platform.ts';
import { benchDatabase } from './support/bench-database.ts';
import { below, figure, printTable, reportGoals, summary } from './support/report.ts';

const AT_ONCE = 8;
const TOTAL = Math.ceil(Number(process.env.TOTAL ?? 296) / AT_ONCE) * AT_ONCE;
const ANCHOR_WAIT_MS = 3_000;

const database = await benchDatabase();
const rows: Record<string, string | number>[] = [];
try {
  const running = new Map<number, () => void>();
  const aborted = new Map<number, number>();
  const waitingFor = new Map<number, () => void>();
  const spinner = defineTool<{ seq: number }>({
    name: 'spinner',
    description: 'runs until its signal aborts; never checkpoints on its own',
    inputSchema: { type: 'object', properties: { seq: { type: 'integer' } }, required: ['seq'] },
    retry: 'safe',
    async handler({ seq }, ctx) {
      await new Promise<void>((resolve) => {
        ctx.signal.addEventListener('abort', () => {
          aborted.set(seq, performance.now());
          waitingFor.get(seq)?.();
          resolve();
        });
        running.get(seq)?.();
      });
      return { content: [] };
    },
  });
  const taskgate = await startPlatform(database.url, { tools: [spinner] as never });
  await taskgate.startWorker({ concurrency: AT_ONCE });
  const latencies: number[] = [];
  for (let batch = 0; batch < TOTAL / AT_ONCE; batch++) {
    const seqs = Array.from({ length: AT_ONCE }, (_, i) => batch * AT_ONCE + i);
    const ids = await Promise.all(
      seqs.map(async (seq) => {
        const started = new Promise<void>((resolve) => running.set(seq, resolve));
        const task = await taskgate.service.create('bench', { tool: 'spinner', arguments: { seq } });
        await started;
        return task.id;
      }),
    );
    await Promise.all(
      seqs.map(async (seq, index) => {
        const abort = new Promise<void>((resolve) => waitingFor.set(seq, resolve));
        const requested = performance.now();
        await taskgate.service.cancel('bench', ids[index] as string, 'bench');
        await abort;
        latencies.push((aborted.get(seq) as number) - requested);
      }),
    );
  }
  await taskgate.stop();
  const ours = summary(latencies);
  rows.push({
    path: 'taskgate: cancel request → ctx.signal aborted (LISTEN/NOTIFY)',
    n: ours.n,
    'p50 ms': ours.p50,
    'p99 ms': ours.p99,
    'max ms': ours.max,
    heard: `${ours.n}/${TOTAL}`,
  });

  // Anchor: pg-boss cancel() on active jobs, the same way: how soon does the handler's
  // job.signal abort? (With useListenNotify on, pg-boss 12 tells the worker holding the job.)
  const boss = new PgBoss({ connectionString: database.url, useListenNotify: true, supervise: false, schedule: false });
  boss.on('error', () => {});
  await boss.start();
  await boss.createQueue('anchor', { notify: true });
  const anchorLatencies: number[] = [];
  let unheard = 0;
  const jobStarted = new Map<number, () => void>();
  const jobAborted = new Map<number, number>();
  const jobDone = new Map<number, () => void>();
  await boss.work<{ seq: number }>('anchor', { localConcurrency: AT_ONCE }, async ([job]) => {
    if (!job) return;
    const seq = job.data.seq;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        unheard++;
        jobDone.get(seq)?.();
        resolve();
      }, ANCHOR_WAIT_MS);
      job.signal.addEventListener('abort', () => {
        clearTimeout(timer);
        jobAborted.set(seq, performance.now());
        jobDone.get(seq)?.();
        resolve();
      });
      jobStarted.get(seq)?.();
    });
  });
  for (let batch = 0; batch < Math.min(TOTAL, 96) / AT_ONCE; batch++) {
    const seqs = Array.from({ length: AT_ONCE }, (_, i) => batch * AT_ONCE + i);
    const ids = await Promise.all(
      seqs.map(async (seq) => {
        const started = new Promise<void>((resolve) => jobStarted.set(seq, resolve));
        const id = (await boss.send('anchor', { seq })) as string;
        await started;
        return id;
      }),
    );
    await Promise.all(
      seqs.map(async (seq, index) => {
        const done = new Promise<void>((resolve) => jobDone.set(seq, resolve));
        const requested = performance.now();
        await boss.cancel('anchor', ids[index] as string);
        await done;
        const at = jobAborted.get(seq);
        if (at !== undefined) anchorLatencies.push(at - requested);
      }),
    );
  }
  const theirs = summary(anchorLatencies);
  rows.push({
    path: 'pg-boss 12: cancel() → job.signal aborted (useListenNotify)',
    n: theirs.n + unheard,
    'p50 ms': theirs.n === 0 ? 'never' : theirs.p50,
    'p99 ms': theirs.n === 0 ? 'never' : theirs.p99,
    'max ms': theirs.n === 0 ? 'never' : theirs.max,
    heard: `${theirs.n}/${theirs.n + unheard} within ${ANCHOR_WAIT_MS} ms`,
  });
  await boss.stop({ graceful: false, close: true });
} finally {
  await database.drop();
}
printTable('Cancel latency for running handlers', rows);
reportGoals({ TOTAL }, [
  {
    metric: 'cancel → ctx.signal aborted p99',
    unit: 'ms',
    rule: below(50),
    ours: figure(rows, 'taskgate', 'p99 ms'),
    anchor: { label: 'pg-boss 12 cancel() → job.signal', value: figure(rows, 'pg-boss', 'p99 ms') },
  },
]);
process.exit(0);
