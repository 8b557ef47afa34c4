// How long a short `taskgate` command takes, spawn to exit, as a person runs it: through the
// installed bin (node_modules/.bin/taskgate on the system PATH's Node, which hands over to the
// project's Node), and through npx. `--help` answers from the CLI's own modules; `tasks list` and
// `tools list` also make one REST request to a running server (a real one, on a fresh database,
// with the demo tools). The anchors, measured in the same run: `node -e 0` on the project's Node and
// on the PATH's (the launcher starts both, so no bin can exit sooner than the two together), and
// `npx --no-install node -e 0` (npm's own start, the floor of anything run through npx).
//   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench -- cli-start
import { spawn } from 'node:child_process';
import path from 'node:path';
import { CLI, cleanEnv, REPO_ROOT, RunningProcess } from '../test/support/cli.ts';
import { benchDatabase } from './support/bench-database.ts';
import { below, figure, printTable, reportGoals, summary } from './support/report.ts';

const RUNS = Number(process.env.RUNS ?? 20);
const PROJECT_NODE = path.join(REPO_ROOT, 'node_modules/.bin/node');
const BIN = path.join(REPO_ROOT, 'node_modules/.bin/taskgate');

/** Milliseconds from spawn to exit; any exit status but `expected` is a failed run. */
function exitTime(command: string, args: readonly string[], env: Record<string, string>, expected = 0) {
  return new Promise<number>((resolve, reject) => {
    const started = performance.now();
    const child = spawn(command, args, { cwd: REPO_ROOT, env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on('error', reject);
    child.on('close', (code) =>
      code === expected
        ? resolve(performance.now() - started)
        : reject(new Error(`${command} ${args.join(' ')} exited ${code}: ${stderr}`)),
    );
  });
}

const database = await benchDatabase();
const server = new RunningProcess(
  PROJECT_NODE,
  [CLI, 'start', '--no-migrate'],
  cleanEnv({ DATABASE_URL: database.url, PORT: '0' }),
);
const rows: Record<string, string | number>[] = [];
try {
  const started = await server.waitForLog((line) => line.msg === 'taskgate started');
  // The system PATH first, as a shell has it: the bin's `#!/usr/bin/env node` finds that Node.
  const env = cleanEnv({ PATH: `/usr/local/bin:/usr/bin:/bin`, TASKGATE_URL: `${started.url as string}/mcp` });
  const ways: [string, string, string[]][] = [
    ['anchor: project Node, node -e 0', PROJECT_NODE, ['-e', '0']],
    ['anchor: PATH Node, node -e 0', 'node', ['-e', '0']],
    ['taskgate --help (bin)', BIN, ['--help']],
    ['taskgate tasks list (bin)', BIN, ['tasks', 'list']],
    ['taskgate tools list (bin)', BIN, ['tools', 'list']],
    ['anchor: npx --no-install node -e 0', 'npx', ['--no-install', 'node', '-e', '0']],
    ['npx taskgate --help', 'npx', ['--no-install', 'taskgate', '--help']],
  ];
  for (const [label, command, args] of ways) {
    await exitTime(command, args, env); // warm the file and compile caches
    const samples: number[] = [];
    for (let run = 0; run < RUNS; run += 1) samples.push(await exitTime(command, args, env));
    const stats = summary(samples);
    rows.push({ path: label, runs: stats.n, 'p50 ms': stats.p50, 'p99 ms': stats.p99, 'max ms': stats.max });
  }
} finally {
  server.kill();
  await server.closed;
  await database.drop();
}
printTable(`spawn → exit, ${RUNS} runs each (a warm compile cache)`, rows);
const nodeFloor = figure(rows, 'anchor: project Node', 'p50 ms');
const pathFloor = figure(rows, 'anchor: PATH Node', 'p50 ms');
const launcherFloor = {
  label: 'PATH Node + project Node, node -e 0 each',
  value: typeof nodeFloor === 'number' && typeof pathFloor === 'number' ? nodeFloor + pathFloor : Number.NaN,
};
reportGoals({ RUNS }, [
  {
    metric: 'taskgate --help p50, bin',
    unit: 'ms',
    rule: below(500),
    ours: figure(rows, 'taskgate --help', 'p50 ms'),
    anchor: launcherFloor,
  },
  {
    metric: 'taskgate tasks list p50, bin',
    unit: 'ms',
    rule: below(500),
    ours: figure(rows, 'taskgate tasks list', 'p50 ms'),
    anchor: launcherFloor,
  },
  {
    metric: 'taskgate tools list p50, bin',
    unit: 'ms',
    rule: below(500),
    ours: figure(rows, 'taskgate tools list', 'p50 ms'),
    anchor: launcherFloor,
  },
]);
process.exit(0);
