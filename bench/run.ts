// npm run bench -- [name …]: runs bench/<name>.ts (every benchmark, one after another, without a name),
// then prints one summary of the goals and writes it to bench/results/latest.md, with every figure the
// benchmarks printed in bench/results/latest.json. A run of some benchmarks replaces only their rows.
// The exit status is not a verdict: an unmet goal is reported, a crashed benchmark fails the run.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { printGoals } from './support/report.ts';
import {
  type BenchmarkResult,
  collect,
  merge,
  type Results,
  renderJson,
  renderMarkdown,
  summaryRows,
} from './support/results.ts';

const dir = import.meta.dirname;
const resultsDir = path.join(dir, 'results');
const available = readdirSync(dir)
  .filter((file) => file.endsWith('.ts') && file !== 'run.ts')
  .map((file) => file.slice(0, -3))
  .sort();
const names = process.argv.slice(2);
const unknown = names.filter((name) => !available.includes(name));
if (unknown.length > 0) {
  console.error(`unknown benchmark ${JSON.stringify(unknown[0])}; available: ${available.join(', ')}`);
  process.exit(64);
}
const selected = names.length > 0 ? available.filter((name) => names.includes(name)) : available;

const commit = currentCommit();
const scratch = mkdtempSync(path.join(tmpdir(), 'tg-bench-'));
const ran: Record<string, BenchmarkResult> = {};
try {
  for (const bench of selected) {
    console.log(`== ${bench}`);
    const file = path.join(scratch, `${bench}.jsonl`);
    writeFileSync(file, '');
    const ended = spawnSync(process.execPath, [path.join(dir, `${bench}.ts`)], {
      stdio: 'inherit',
      env: { ...process.env, BENCH_RESULTS_FILE: file },
    });
    ran[bench] = collect(readFileSync(file, 'utf8'), ended, {
      measuredAt: `${new Date().toISOString().slice(0, 16)}Z`,
      commit,
    });
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}

const latestJson = path.join(resultsDir, 'latest.json');
const previous: Results = existsSync(latestJson)
  ? (JSON.parse(readFileSync(latestJson, 'utf8')) as Results)
  : { benchmarks: {} };
const results = merge(previous, ran, available);
mkdirSync(resultsDir, { recursive: true });
writeFileSync(latestJson, renderJson(results));
writeFileSync(path.join(resultsDir, 'latest.md'), renderMarkdown(results, available));

console.log('\n== summary');
printGoals(summaryRows(results, selected));
console.log(`\n(all benchmarks' rows: ${path.relative(process.cwd(), path.join(resultsDir, 'latest.md'))})`);
const failed = selected.filter((bench) => ran[bench]?.outcome !== 'ok');
if (failed.length > 0) {
  console.error(`failed: ${failed.map((bench) => `${bench} (${ran[bench]?.outcome})`).join(', ')}`);
  process.exit(1);
}

/** The commit measured; '-dirty' when files other than the results differ from it. */
function currentCommit(): string {
  const git = (...args: string[]) => spawnSync('git', args, { cwd: path.dirname(dir), encoding: 'utf8' });
  const head = git('rev-parse', '--short', 'HEAD');
  if (head.status !== 0) return 'unknown';
  const changes = git('status', '--porcelain', '--', '.', ':!bench/results');
  return `${head.stdout.trim()}${changes.stdout.trim() === '' ? '' : '-dirty'}`;
}
