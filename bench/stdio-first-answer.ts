// How soon `taskgate mcp-stdio` answers a client's first message (initialize) after the client
// spawns it: the AI SDK gives a stdio server one second, and the database, the worker and the
// catalog take longer than that to start (seconds on the embedded database). Measured from spawn
// to the first line on stdout, RUNS times each way a client launches it — the project's Node
// directly, the bin through the system PATH's Node (the launcher hands over to the project's), and
// npx — next to the official SDK v1 stdio server launched with the project's Node. npx's own
// start (npm loading its CLI on the system Node before it launches anything) is measured too, as
// the time `npx --no-install node -e 0` takes to exit: no server launched through npx can answer
// sooner than that, so it is the npx figure's anchor.
//   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench -- stdio-first-answer
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { cleanEnv, REPO_ROOT } from '../test/support/cli.ts';
import { benchDatabase } from './support/bench-database.ts';
import { below, figure, printTable, reportGoals, summary } from './support/report.ts';

const RUNS = Number(process.env.RUNS ?? 10);
const PROJECT_NODE = path.join(REPO_ROOT, 'node_modules/.bin/node');
const BIN = path.join(REPO_ROOT, 'node_modules/.bin/taskgate');
const INITIALIZE = `${JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1' } },
})}\n`;

/** Milliseconds from spawn to the first stdout line; the child is then told to stop (stdin end). */
function firstAnswer(command: string, args: readonly string[], env: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(command, args, { cwd: REPO_ROOT, env, stdio: ['pipe', 'pipe', 'ignore'] });
    let answeredAt: number | null = null;
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (answeredAt === null && output.includes('\n')) {
        answeredAt = performance.now() - started;
        const line = JSON.parse(output.slice(0, output.indexOf('\n'))) as { id?: unknown; result?: unknown };
        if (line.id !== 1 || line.result === undefined) reject(new Error(`not an answer: ${output}`));
        child.stdin.end();
      }
    });
    child.on('error', reject);
    child.on('close', (code) =>
      answeredAt === null ? reject(new Error(`${command} exited ${code} without answering`)) : resolve(answeredAt),
    );
    child.stdin.write(INITIALIZE);
  });
}

/** Milliseconds from spawn to exit of a command that answers nothing (npx's own start). */
function exitTime(command: string, args: readonly string[], env: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(command, args, { cwd: REPO_ROOT, env, stdio: 'ignore' });
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve(performance.now() - started) : reject(new Error(`${command} exited ${code}`)),
    );
  });
}

const database = await benchDatabase();
const rows: Record<string, string | number>[] = [];
/** The empty compile caches of the first-launch runs, removed at the end. */
const coldDirs: string[] = [];
try {
  // The system PATH first, as an MCP client's environment has it (its Node is whatever is there).
  const env = cleanEnv({ DATABASE_URL: database.url, PATH: `/usr/local/bin:/usr/bin:/bin` });
  const direct = [path.join(REPO_ROOT, 'apps/cli/bin/taskgate.js'), 'mcp-stdio'];
  const ways: [string, string, string[], { coldCache?: boolean }?][] = [
    ['project Node: node_modules/.bin/node apps/cli/bin/taskgate.js mcp-stdio', PROJECT_NODE, direct],
    // The launcher keeps V8's compiled code on disk (module.enableCompileCache): every run above
    // finds it from the run before. A first launch (a new machine, a new Taskgate) does not.
    [
      'first launch (an empty compile cache each run): project Node, as above',
      PROJECT_NODE,
      direct,
      { coldCache: true },
    ],
    ['system PATH Node: node_modules/.bin/taskgate mcp-stdio (the launcher hands over)', BIN, ['mcp-stdio']],
    ['npx taskgate mcp-stdio', 'npx', ['--no-install', 'taskgate', 'mcp-stdio']],
    [
      'SDK v1 stdio server (McpServer + StdioServerTransport), project Node',
      PROJECT_NODE,
      [path.join(import.meta.dirname, 'support/sdk-stdio-anchor.ts')],
    ],
  ];
  const envOf = (options?: { coldCache?: boolean }) => {
    if (!options?.coldCache) return env;
    const dir = mkdtempSync(path.join(os.tmpdir(), 'taskgate-bench-compile-cache-'));
    coldDirs.push(dir);
    return { ...env, NODE_COMPILE_CACHE: dir };
  };
  for (const [label, command, args, options] of ways) {
    await firstAnswer(command, args, envOf(options)); // warm the file cache
    const samples: number[] = [];
    for (let run = 0; run < RUNS; run += 1) samples.push(await firstAnswer(command, args, envOf(options)));
    const stats = summary(samples);
    rows.push({ path: label, runs: stats.n, 'p50 ms': stats.p50, 'p99 ms': stats.p99, 'max ms': stats.max });
  }
  const floorArgs = ['--no-install', 'node', '-e', '0'];
  await exitTime('npx', floorArgs, env);
  const floor: number[] = [];
  for (let run = 0; run < RUNS; run += 1) floor.push(await exitTime('npx', floorArgs, env));
  const stats = summary(floor);
  rows.push({
    path: 'npx floor: npx --no-install node -e 0, spawn to exit (npm alone)',
    runs: stats.n,
    'p50 ms': stats.p50,
    'p99 ms': stats.p99,
    'max ms': stats.max,
  });
} finally {
  await database.drop();
  for (const dir of coldDirs) rmSync(dir, { recursive: true, force: true });
}
printTable(`spawn → first answer (initialize), ${RUNS} runs each, external database`, rows);
const anchor = { label: 'SDK v1 stdio server', value: figure(rows, 'SDK v1 stdio', 'p99 ms') };
reportGoals({ RUNS }, [
  {
    metric: 'mcp-stdio first answer p99, project Node',
    unit: 'ms',
    rule: below(300),
    ours: figure(rows, 'project Node', 'p99 ms'),
    anchor,
  },
  {
    metric: 'mcp-stdio first answer p99, npx',
    unit: 'ms',
    rule: below(300),
    ours: figure(rows, 'npx taskgate', 'p99 ms'),
    anchor: { label: 'npx --no-install node -e 0 exits', value: figure(rows, 'npx floor', 'p99 ms') },
  },
]);
process.exit(0);
