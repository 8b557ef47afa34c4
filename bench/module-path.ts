// The durable tools/call path with greet served from a tool module (examples/demo), against the same
// path in the code before tool modules existed (BENCH_BASE_REF, default 5b563df), measured back to
// back on the same machine: each side is an API process and a worker process of the real CLI, on a
// database of its own, driven by the same load generator, in alternating rounds.
//   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench -- module-path
import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { checkoutBase, REPO } from './support/base-checkout.ts';
import { type BenchDatabase, benchDatabase } from './support/bench-database.ts';
import { greetCall, type LoadResult, loadFromChild } from './support/http-load.ts';
import { atLeastShareOfAnchor, median, printTable, reportGoals } from './support/report.ts';

const BASE_REF = process.env.BENCH_BASE_REF ?? '5b563df';
const CONNECTIONS = Number(process.env.CONNECTIONS ?? 32);
const SECONDS = Number(process.env.SECONDS ?? 10);
// Four rounds a side: on this 2-core machine one side's rounds differ by up to 15%, so two decided nothing.
const ROUNDS = Number(process.env.ROUNDS ?? 4);

/** How each side runs: its checkout and the arguments its API and worker processes get. */
interface Side {
  readonly label: string;
  readonly root: string;
  readonly api: string[];
  readonly worker: string[];
}

const base = checkoutBase(BASE_REF);
const baseRoot = base.root;
const processes: ChildProcess[] = [];
const databases: BenchDatabase[] = [];
const rows: Record<string, string | number>[] = [];
try {
  const demo = path.join(REPO, 'examples/demo/index.ts');
  const sides: Side[] = [
    {
      label: `before tool modules (${BASE_REF})`,
      root: baseRoot,
      api: ['--role', 'api'],
      worker: ['--role', 'worker'],
    },
    {
      label: 'greet from examples/demo',
      root: REPO,
      api: ['--role', 'api', '--tools', demo],
      worker: ['--role', 'worker', '--tools', demo],
    },
  ];
  const origins: string[] = [];
  for (const side of sides) {
    const database = await benchDatabase({ migrate: false });
    databases.push(database);
    origins.push(await startSide(side, database.url));
    // Warm-up, then statistics, as a running system has them after its first minute.
    await loadFromChild(origins.at(-1) as string, greetCall('greet'), { connections: CONNECTIONS, seconds: 3 });
    await database.analyze();
  }
  const results: LoadResult[][] = sides.map(() => []);
  for (let round = 0; round < ROUNDS; round++) {
    for (const [index, side] of sides.entries()) {
      const result = await loadFromChild(origins[index] as string, greetCall('greet'), {
        connections: CONNECTIONS,
        seconds: SECONDS,
      });
      (results[index] as LoadResult[]).push(result);
      rows.push({
        round: round + 1,
        path: side.label,
        'calls/s': Math.round(result.calls / result.seconds),
        'p50 ms': result.p50,
        'p99 ms': result.p99,
        errors: result.errors,
      });
    }
  }
  printTable(
    `Durable tools/call of greet, ${CONNECTIONS} connections, ${SECONDS} s per round, API and worker processes`,
    rows,
  );
  const rate = (index: number) =>
    median((results[index] as LoadResult[]).map((result) => result.calls / result.seconds));
  reportGoals({ CONNECTIONS, SECONDS, ROUNDS, BENCH_BASE_REF: BASE_REF }, [
    {
      metric: 'durable tools/call calls/s, tool from a module, median of rounds',
      unit: 'calls/s',
      rule: atLeastShareOfAnchor(0.95),
      ours: rate(1),
      anchor: { label: `the same path at ${BASE_REF}, same run`, value: rate(0) },
    },
  ]);
} finally {
  for (const child of processes) child.kill('SIGTERM');
  await Promise.all(
    processes.map(
      (child) => new Promise((resolve) => (child.exitCode === null ? child.once('exit', resolve) : resolve(null))),
    ),
  );
  for (const database of databases) await database.drop();
  base.remove();
}
process.exit(0);

/** Starts a side's worker (which migrates its database) and then its API; resolves with the API's origin. */
async function startSide(side: Side, databaseUrl: string): Promise<string> {
  await startCli(side, [...side.worker], databaseUrl);
  const started = await startCli(side, [...side.api, '--no-migrate'], databaseUrl);
  return String(started.url);
}

function startCli(side: Side, args: string[], databaseUrl: string): Promise<Record<string, unknown>> {
  const child = spawn(process.execPath, [path.join(side.root, 'apps/cli/bin/taskgate.js'), 'start', ...args], {
    cwd: side.root,
    env: {
      PATH: process.env.PATH,
      DATABASE_URL: databaseUrl,
      PORT: '0',
      LOG_LEVEL: 'info',
      TASKGATE_WORKER_CONCURRENCY: '32',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  processes.push(child);
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${side.label}: taskgate ${args.join(' ')} exited with ${code}`)));
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      try {
        const entry = JSON.parse(line) as Record<string, unknown>;
        if (entry.msg === 'taskgate started') resolve(entry);
      } catch {
        // not a log line
      }
    });
  });
}
