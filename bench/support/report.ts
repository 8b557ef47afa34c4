import { appendFileSync } from 'node:fs';
import path from 'node:path';
import { type Goal, goalRow, judge, type ResultRecord, type Settings, type SummaryRow, type Value } from './results.ts';

export { aheadOfAnchor, atLeast, atLeastShareOfAnchor, atMost, below, belowAnchor } from './results.ts';

/** Percentile by nearest rank over a copy of the samples. */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] as number;
}

export function summary(samples: readonly number[]): { n: number; p50: number; p99: number; max: number } {
  return {
    n: samples.length,
    p50: percentile(samples, 50),
    p99: percentile(samples, 99),
    max: percentile(samples, 100),
  };
}

/** Prints rows as an aligned text table (the form benchmark output takes in notes and CI logs). */
export function printTable(title: string, rows: Record<string, string | number>[]): void {
  console.log(`\n${title}`);
  for (const line of formatTable(rows)) console.log(line);
  record({ kind: 'table', title, rows });
}

export function formatTable(rows: readonly Record<string, string | number>[]): string[] {
  const headers = Object.keys(rows[0] ?? {});
  const cells = rows.map((row) => headers.map((header) => format(row[header])));
  const widths = headers.map((header, column) =>
    Math.max(header.length, ...cells.map((row) => (row[column] as string).length)),
  );
  const line = (values: string[]) => values.map((value, column) => value.padEnd(widths[column] as number)).join('  ');
  return [line(headers), line(widths.map((width) => '-'.repeat(width))), ...cells.map(line)];
}

function format(value: string | number | undefined): string {
  if (typeof value === 'number') return Number.isInteger(value) ? String(value) : value.toFixed(2);
  return value ?? '';
}

/**
 * A benchmark's verdicts: each goal (from the issue that set it) next to our figure and the
 * anchor's from the same run, handed to bench/run.ts for bench/results/ (and printed when the
 * benchmark runs on its own). `settings` are the benchmark's knobs, named after the environment
 * variables that set them, so a run with other values than the defaults shows as such. Call it
 * once, after the measurements.
 */
export function reportGoals(settings: Settings, goals: readonly Goal[]): void {
  const judged = goals.map(judge);
  const benchmark = path.basename(process.argv[1] ?? '', '.ts');
  // Under bench/run.ts the goals show once, in the summary at the end of the run.
  if (!process.env.BENCH_RESULTS_FILE) printGoals(judged.map((goal) => goalRow(benchmark, goal)));
  const fromEnvironment = Object.fromEntries(Object.entries(settings).filter(([name]) => name in process.env));
  record({ kind: 'goals', settings, fromEnvironment, goals: judged });
}

/**
 * A figure from a benchmark's printed rows: `column` of the row whose path starts with `path`.
 * 'never' stays 'never'; a missing row or cell is no figure (NaN).
 */
export function figure(rows: readonly Record<string, string | number>[], path: string, column: string): Value {
  const cell = rows.find((row) => String(row.path).startsWith(path))?.[column];
  return cell === 'never' ? cell : Number(cell ?? Number.NaN);
}

export function printGoals(rows: readonly SummaryRow[]): void {
  console.log('\nGoals (anchor measured in the same run)');
  for (const line of formatTable(rows)) console.log(line);
}

/** Run by bench/run.ts, a benchmark appends one JSON line per report to the file it was given. */
function record(line: ResultRecord): void {
  const file = process.env.BENCH_RESULTS_FILE;
  if (file) appendFileSync(file, `${JSON.stringify(line)}\n`);
}

/** Calls `fire` `total` times at `perSecond`, on schedule (not back to back), and waits for all. */
export async function atRate(total: number, perSecond: number, fire: (index: number) => Promise<void>): Promise<void> {
  const started = performance.now();
  const inFlight: Promise<void>[] = [];
  for (let index = 0; index < total; index++) {
    const due = started + (index * 1000) / perSecond;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
    inFlight.push(fire(index));
  }
  await Promise.all(inFlight);
}

/** The middle value (the mean of the two middle ones for an even count), for figures of several rounds. */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}
