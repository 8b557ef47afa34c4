// bench/mcp-throughput.ts as it is in this checkout, against the same benchmark at BENCH_BASE_REF
// (default c70a941: the last commit before the MCP dispatcher restructure, issue 15), measured back
// to back: the two run alternately, ROUNDS rounds each, each round a process of its own on a
// database of its own (mcp-throughput's own setup: API and worker in one process, an SDK server as
// its anchor). Both sides' inline and durable tools/call rates are printed; the goal is that the
// restructure made neither worse.
//   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench -- mcp-throughput-base
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { checkoutBase, REPO } from './support/base-checkout.ts';
import { atLeastShareOfAnchor, median, printTable, reportGoals } from './support/report.ts';

const DEFAULT_BASE = 'c70a941';
const BASE_REF = process.env.BENCH_BASE_REF ?? DEFAULT_BASE;
const SECONDS = Number(process.env.SECONDS ?? 5);
// Three rounds a side: one side's rounds differ by up to 10% on this 2-core machine.
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const CONNECTIONS = Number(process.env.CONNECTIONS ?? 32);
const METRICS = { inline: 'MCP tools/call inline', durable: 'MCP tools/call durable (after ANALYZE)' } as const;

type Rates = Record<keyof typeof METRICS, number>;

const base = checkoutBase(BASE_REF);
const scratch = mkdtempSync(path.join(tmpdir(), 'tg-bench-throughput-'));
try {
  const sides = [
    { label: `at ${BASE_REF}${BASE_REF === DEFAULT_BASE ? ' (before the restructure)' : ''}`, root: base.root },
    { label: 'this checkout', root: REPO },
  ];
  const rates: Rates[][] = sides.map(() => []);
  const rows: Record<string, string | number>[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    for (const [index, side] of sides.entries()) {
      const measured = runThroughput(side.root, path.join(scratch, `${index}-${round}.jsonl`));
      (rates[index] as Rates[]).push(measured);
      rows.push({
        round: round + 1,
        path: side.label,
        'inline calls/s': Math.round(measured.inline),
        'durable calls/s': Math.round(measured.durable),
      });
    }
  }
  printTable(`mcp-throughput, ${CONNECTIONS} connections, ${SECONDS} s per phase, alternating rounds`, rows);
  const rate = (index: number, kind: keyof Rates) =>
    median((rates[index] as Rates[]).map((measured) => measured[kind]));
  reportGoals({ SECONDS, ROUNDS, CONNECTIONS, BENCH_BASE_REF: BASE_REF }, [
    {
      metric: 'MCP tools/call inline calls/s, median of rounds',
      unit: 'calls/s',
      rule: atLeastShareOfAnchor(0.95),
      ours: rate(1, 'inline'),
      anchor: { label: `the same benchmark at ${BASE_REF}, same run`, value: rate(0, 'inline') },
    },
    {
      metric: 'MCP tools/call durable calls/s, median of rounds',
      unit: 'calls/s',
      rule: atLeastShareOfAnchor(0.95),
      ours: rate(1, 'durable'),
      anchor: { label: `the same benchmark at ${BASE_REF}, same run`, value: rate(0, 'durable') },
    },
  ]);
} finally {
  rmSync(scratch, { recursive: true, force: true });
  base.remove();
}

/** One run of a checkout's bench/mcp-throughput.ts: the inline and durable rates it reported. */
function runThroughput(root: string, resultsFile: string): Rates {
  writeFileSync(resultsFile, '');
  const ended = spawnSync(process.execPath, [path.join(root, 'bench/mcp-throughput.ts')], {
    cwd: root,
    stdio: ['ignore', 'ignore', 'inherit'],
    env: {
      ...process.env,
      BENCH_RESULTS_FILE: resultsFile,
      SECONDS: String(SECONDS),
      CONNECTIONS: String(CONNECTIONS),
    },
  });
  if (ended.status !== 0) throw new Error(`mcp-throughput in ${root} exited with ${ended.status ?? ended.signal}`);
  const goals = readFileSync(resultsFile, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as { kind: string; goals?: { metric: string; ours: unknown }[] })
    .flatMap((line) => (line.kind === 'goals' ? (line.goals ?? []) : []));
  const ours = (metric: string) => {
    const value = goals.find((goal) => goal.metric === metric)?.ours;
    if (typeof value !== 'number' || !Number.isFinite(value))
      throw new Error(`mcp-throughput in ${root} reported no ${metric}`);
    return value;
  };
  return { inline: ours(METRICS.inline), durable: ours(METRICS.durable) };
}
