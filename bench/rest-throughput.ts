// End-to-end throughput of no-op tasks through the REST API (POST /v1/tasks → a worker runs the
// handler → the task is completed), against raw pg-boss send → work → complete of no-op jobs, in
// the same run on the same database, both driven by CONCURRENCY callers in this process.
//   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench -- rest-throughput
import { defineTool } from '@taskgate/sdk';
import { sql } from 'kysely';
import { PgBoss } from 'pg-boss';
import { Agent, request } from 'undici';
import { startApi, startPlatform } from '../test/support/task-platform.ts';
import { benchDatabase } from './support/bench-database.ts';
import { atLeastShareOfAnchor, figure, printTable, reportGoals } from './support/report.ts';

const TOTAL = Number(process.env.TOTAL ?? 3_000);
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 32);
const WORKERS = Number(process.env.WORKERS ?? 32); // the worker's default concurrency
const ANCHOR_DEADLINE_MS = 60_000;

const database = await benchDatabase();
const rows: Record<string, string | number>[] = [];
try {
  const noop = defineTool({
    name: 'noop',
    description: 'does nothing',
    inputSchema: { type: 'object' },
    retry: 'safe',
    async handler() {
      return { content: [] };
    },
  });
  const taskgate = await startPlatform(database.url, { tools: [noop] as never });
  await taskgate.startWorker({ concurrency: WORKERS });
  const api = await startApi(taskgate, database.url);
  const base = await api.app.listen({ host: '127.0.0.1', port: 0 });
  const agent = new Agent({ connections: CONCURRENCY, pipelining: 1 });
  const post = async () => {
    const response = await request(`${base}/v1/tasks`, {
      method: 'POST',
      dispatcher: agent,
      headers: { 'content-type': 'application/json' },
      body: '{"tool":"noop","arguments":{}}',
    });
    await response.body.dump();
    if (response.statusCode !== 201) throw new Error(`POST /v1/tasks answered ${response.statusCode}`);
  };
  const completed = async () => {
    const { rows: counts } = await sql<{
      n: number;
    }>`SELECT count(*)::int AS n FROM tasks WHERE status = 'completed'`.execute(taskgate.db);
    return counts[0]?.n ?? 0;
  };
  const drive = async (count: number) => {
    let next = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < count) {
          next++;
          await post();
        }
      }),
    );
  };
  await drive(200); // warm-up
  while ((await completed()) < 200) await new Promise((resolve) => setTimeout(resolve, 20));
  // Statistics as a running system has them (BenchDatabase.analyze); the anchors below run after it too.
  await database.analyze();
  const before = await completed();
  const started = performance.now();
  await drive(TOTAL);
  const accepted = performance.now() - started;
  while ((await completed()) < before + TOTAL) await new Promise((resolve) => setTimeout(resolve, 5));
  const elapsed = performance.now() - started;
  rows.push({
    path: `taskgate REST: POST /v1/tasks → completed (${WORKERS} handlers)`,
    tasks: TOTAL,
    'accepted/s': Math.round(TOTAL / (accepted / 1000)),
    'completed/s': Math.round(TOTAL / (elapsed / 1000)),
  });
  await api.close();
  await agent.close();
  await taskgate.stop();

  // Anchors: raw pg-boss send → work → complete of no-op jobs. Once with the same shape as
  // Taskgate's worker (WORKERS handlers taking one job at a time), once with its best settings
  // measured here (batches of 100, burst while batches come back full).
  for (const anchor of [
    { label: `pg-boss 12: send → work → complete (notify, ${WORKERS} × 1 job)`, work: { localConcurrency: WORKERS } },
    {
      label: 'pg-boss 12: send → work → complete (notify, batch 100 × 4, burst)',
      work: { batchSize: 100, localConcurrency: 4, burstWhenBatchFull: true },
    },
  ]) {
    const queue = `anchor_${rows.length}`;
    const boss = new PgBoss({
      connectionString: database.url,
      useListenNotify: true,
      supervise: false,
      schedule: false,
      max: 20,
    });
    boss.on('error', () => {});
    await boss.start();
    await boss.createQueue(queue, { notify: true });
    let done = 0;
    let target = Number.POSITIVE_INFINITY;
    let finished: () => void = () => {};
    await boss.work(queue, anchor.work, async (jobs) => {
      done += jobs.length;
      if (done >= target) finished();
    });
    const round = async (count: number) => {
      const all = new Promise<void>((resolve) => {
        finished = resolve;
      });
      target = done + count;
      const t0 = performance.now();
      let next = 0;
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (next < count) {
            next++;
            await boss.send(queue, {});
          }
        }),
      );
      const sent = performance.now() - t0;
      const before = target - count;
      // pg-boss with one job per handler drains a backlog only a few jobs per polling interval:
      // give each round a deadline and report the rate it reached.
      await Promise.race([all, new Promise((resolve) => setTimeout(resolve, ANCHOR_DEADLINE_MS))]);
      return { sent, elapsed: performance.now() - t0, completed: Math.min(count, done - before) };
    };
    await round(200);
    const measured = await round(TOTAL);
    rows.push({
      path: anchor.label,
      tasks: measured.completed === TOTAL ? TOTAL : `${measured.completed}/${TOTAL} in ${ANCHOR_DEADLINE_MS / 1000} s`,
      'accepted/s': Math.round(TOTAL / (measured.sent / 1000)),
      'completed/s': Math.round(measured.completed / (measured.elapsed / 1000)),
    });
    await boss.stop({ graceful: false, close: true });
  }
} finally {
  await database.drop();
}
const ours = rows[0]?.['completed/s'] as number;
for (const anchor of rows.slice(1, 3)) {
  const ratio = ours / (anchor['completed/s'] as number);
  rows.push({
    path: `taskgate / ${String(anchor.path).split(': ')[1]}`,
    tasks: '',
    'accepted/s': '',
    'completed/s': ratio.toFixed(2),
  });
}
printTable(
  `No-op task throughput, ${CONCURRENCY} concurrent callers, one process (2 cores shared with Postgres)`,
  rows,
);
// The goal's anchor is pg-boss at its best settings (the one the benchmark was introduced with).
reportGoals({ TOTAL, CONCURRENCY, WORKERS }, [
  {
    metric: 'REST no-op tasks completed/s',
    unit: 'tasks/s',
    rule: atLeastShareOfAnchor(0.7),
    ours: figure(rows, 'taskgate REST', 'completed/s'),
    anchor: {
      label: 'pg-boss 12 send → work → complete, batch 100 × 4, burst',
      value: figure(rows, 'pg-boss 12: send → work → complete (notify, batch', 'completed/s'),
    },
  },
]);
process.exit(0);
