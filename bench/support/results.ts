// What a benchmark reports and what the runner makes of it: goals with their verdicts, the record
// lines a benchmark writes for the runner, and bench/results/latest.{json,md}. No I/O here, so the
// judging and the files' shape are unit-tested (test/bench/bench-results.test.ts).

/**
 * How a goal is judged. Absolute rules compare our figure with a number from the issue that set
 * the goal; the others compare it with the anchor measured in the same run.
 */
export type Rule =
  | { readonly kind: 'below'; readonly limit: number }
  | { readonly kind: 'atMost'; readonly limit: number }
  | { readonly kind: 'atLeast'; readonly limit: number }
  | { readonly kind: 'atLeastShareOfAnchor'; readonly share: number }
  | { readonly kind: 'aheadOfAnchor' }
  | { readonly kind: 'belowAnchor' };

export const below = (limit: number): Rule => ({ kind: 'below', limit });
export const atMost = (limit: number): Rule => ({ kind: 'atMost', limit });
export const atLeast = (limit: number): Rule => ({ kind: 'atLeast', limit });
export const atLeastShareOfAnchor = (share: number): Rule => ({ kind: 'atLeastShareOfAnchor', share });
export const aheadOfAnchor = (): Rule => ({ kind: 'aheadOfAnchor' });
export const belowAnchor = (): Rule => ({ kind: 'belowAnchor' });

/**
 * A figure: 'never' when the thing measured never happened (an anchor whose handler is not told of
 * a cancel); null (or NaN, which JSON cannot hold) when there is no figure, e.g. nothing was measured.
 */
export type Value = number | 'never' | null;

export interface Goal {
  /** What is measured, as the goal's issue says it: 'pickup p99 (create → handler start)'. */
  readonly metric: string;
  readonly unit: string;
  readonly rule: Rule;
  readonly ours: Value;
  readonly anchor?: { readonly label: string; readonly value: Value };
}

export type Verdict = 'met' | 'not met' | 'no anchor figure';

export interface JudgedGoal extends Goal {
  readonly goal: string;
  readonly verdict: Verdict;
}

/** A benchmark's knobs as it ran, named after the environment variables that set them. */
export type Settings = Record<string, string | number>;

/** One line of the file a benchmark writes for the runner (BENCH_RESULTS_FILE). */
export type ResultRecord =
  | { readonly kind: 'table'; readonly title: string; readonly rows: readonly Record<string, string | number>[] }
  | {
      readonly kind: 'goals';
      readonly settings: Settings;
      /** The settings taken from the environment rather than the benchmark's defaults. */
      readonly fromEnvironment: Settings;
      readonly goals: readonly JudgedGoal[];
    };

export interface BenchmarkResult {
  readonly measuredAt: string;
  readonly commit: string;
  /** 'ok', or why the run does not stand: 'exit 1', 'signal SIGKILL', 'reported no goals', … */
  readonly outcome: string;
  readonly settings: Settings;
  readonly fromEnvironment: Settings;
  readonly goals: readonly JudgedGoal[];
  readonly tables: readonly { readonly title: string; readonly rows: readonly Record<string, string | number>[] }[];
}

export interface Results {
  readonly benchmarks: Record<string, BenchmarkResult>;
}

const present = (value: Value | undefined): value is number => typeof value === 'number' && Number.isFinite(value);

export function judge(goal: Goal): JudgedGoal {
  const figure = (value: Value): Value => (value === 'never' || present(value) ? value : null);
  const normalized = {
    ...goal,
    ours: figure(goal.ours),
    ...(goal.anchor ? { anchor: { ...goal.anchor, value: figure(goal.anchor.value) } } : {}),
  };
  return { ...normalized, goal: describeGoal(goal), verdict: verdictOf(normalized) };
}

function verdictOf({ rule, ours, anchor }: Goal): Verdict {
  const meets = (holds: boolean): Verdict => (holds ? 'met' : 'not met');
  if (rule.kind === 'below') return meets(present(ours) && ours < rule.limit);
  if (rule.kind === 'atMost') return meets(present(ours) && ours <= rule.limit);
  if (rule.kind === 'atLeast') return meets(present(ours) && ours >= rule.limit);
  // A lower-is-better anchor that never did the thing is beaten by any figure of ours; otherwise
  // there must be an anchor figure to compare with.
  if (rule.kind === 'belowAnchor' && anchor?.value === 'never') return meets(present(ours));
  if (!present(anchor?.value)) return 'no anchor figure';
  if (!present(ours)) return 'not met';
  if (rule.kind === 'atLeastShareOfAnchor') return meets(ours >= rule.share * anchor.value);
  if (rule.kind === 'aheadOfAnchor') return meets(ours > anchor.value);
  return meets(ours < anchor.value);
}

export function describeGoal({ metric, unit, rule }: Goal): string {
  switch (rule.kind) {
    case 'below':
      return `${metric} < ${rule.limit.toLocaleString('en')} ${unit}`;
    case 'atMost':
      return `${metric} ≤ ${rule.limit.toLocaleString('en')} ${unit}`;
    case 'atLeast':
      return `${metric} ≥ ${rule.limit.toLocaleString('en')} ${unit}`;
    case 'atLeastShareOfAnchor':
      return `${metric} ≥ ${rule.share} × anchor`;
    case 'aheadOfAnchor':
      return `${metric} > anchor`;
    case 'belowAnchor':
      return `${metric} < anchor`;
  }
}

/** Whole numbers from 100 up, one decimal from 10, two below; thousands grouped. */
export function formatValue(value: Value | undefined, unit: string): string {
  if (value === 'never') return value;
  if (!present(value)) return 'n/a';
  const magnitude = Math.abs(value);
  const digits = magnitude >= 100 ? 0 : magnitude >= 10 ? 1 : 2;
  return `${value.toLocaleString('en', { minimumFractionDigits: digits, maximumFractionDigits: digits })} ${unit}`;
}

/** ours / anchor, when both are positive figures (a ratio of memory growths near zero says nothing). */
export function ratioToAnchor({ ours, anchor }: Goal): string {
  if (!present(ours) || !present(anchor?.value) || ours <= 0 || anchor.value <= 0) return '';
  return `${Number((ours / anchor.value).toPrecision(2))}×`;
}

/**
 * A benchmark's run from the lines it wrote and how its process ended. A run that crashed keeps
 * whatever it reported before, but does not stand; so does one that declared no goals.
 */
export function collect(
  lines: string,
  ended: { status: number | null; signal: string | null },
  run: { measuredAt: string; commit: string },
): BenchmarkResult {
  const parsed = lines
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line): ResultRecord | null => {
      try {
        return JSON.parse(line) as ResultRecord;
      } catch {
        return null; // a line cut short by a benchmark killed while writing it
      }
    });
  const records = parsed.filter((record) => record !== null);
  const goals = records.flatMap((record) => (record.kind === 'goals' ? record.goals : []));
  const settings = Object.assign({}, ...records.map((record) => (record.kind === 'goals' ? record.settings : {})));
  const fromEnvironment = Object.assign(
    {},
    ...records.map((record) => (record.kind === 'goals' ? record.fromEnvironment : {})),
  );
  const outcome =
    ended.signal !== null
      ? `signal ${ended.signal}`
      : ended.status !== 0
        ? `exit ${ended.status}`
        : records.length < parsed.length
          ? 'wrote an unreadable report line'
          : goals.length === 0
            ? 'reported no goals'
            : 'ok';
  return {
    ...run,
    outcome,
    settings,
    fromEnvironment,
    goals,
    tables: records.flatMap((record) => (record.kind === 'table' ? [{ title: record.title, rows: record.rows }] : [])),
  };
}

/**
 * The previous results with this run's benchmarks replaced, in `available` order; benchmarks that
 * no longer exist are dropped.
 */
export function merge(previous: Results, ran: Record<string, BenchmarkResult>, available: readonly string[]): Results {
  const benchmarks: Record<string, BenchmarkResult> = {};
  for (const name of available) {
    const result = ran[name] ?? previous.benchmarks[name];
    if (result) benchmarks[name] = result;
  }
  return { benchmarks };
}

export type SummaryRow = Readonly<
  Record<'benchmark' | 'goal' | 'ours' | 'anchor' | 'ours / anchor' | 'verdict', string>
>;

/** A goal as the summary shows it; `outcome` is its run's (anything but 'ok' is noted on the verdict). */
export function goalRow(benchmark: string, goal: JudgedGoal, outcome = 'ok'): SummaryRow {
  return {
    benchmark,
    goal: goal.goal,
    ours: formatValue(goal.ours, goal.unit),
    anchor: goal.anchor ? `${formatValue(goal.anchor.value, goal.unit)} (${goal.anchor.label})` : '',
    'ours / anchor': ratioToAnchor(goal),
    verdict: outcome === 'ok' ? goal.verdict : `${goal.verdict} (run failed: ${outcome})`,
  };
}

/** One row per goal; a benchmark that has not run, or that failed before reporting, gets one row saying so. */
export function summaryRows(results: Results, names: readonly string[]): SummaryRow[] {
  return names.flatMap((benchmark): SummaryRow[] => {
    const result = results.benchmarks[benchmark];
    const blank = { benchmark, goal: '', ours: '', anchor: '', 'ours / anchor': '' };
    if (!result) return [{ ...blank, verdict: 'not run yet' }];
    if (result.goals.length === 0) return [{ ...blank, verdict: `run failed: ${result.outcome}` }];
    return result.goals.map((goal) => goalRow(benchmark, goal, result.outcome));
  });
}

export function renderJson(results: Results): string {
  return `${JSON.stringify(results, null, 2)}\n`;
}

/** One line per row and no padding, so a changed figure changes one line of the diff. */
export function renderMarkdown(results: Results, names: readonly string[]): string {
  const cell = (text: string | number) => String(text).replaceAll('|', '\\|');
  const table = (rows: readonly Record<string, string | number>[]) => {
    const headers = Object.keys(rows[0] ?? {});
    return [
      `| ${headers.join(' | ')} |`,
      `|${headers.map(() => '---').join('|')}|`,
      ...rows.map((row) => `| ${headers.map((header) => cell(row[header] ?? '')).join(' | ')} |`),
    ];
  };
  const runs = names.flatMap((benchmark) => {
    const result = results.benchmarks[benchmark];
    if (!result) return [];
    const settings = Object.entries(result.settings)
      .map(([name, value]) => `${name}=${value}${name in result.fromEnvironment ? '*' : ''}`)
      .join(' ');
    return [{ benchmark, measured: result.measuredAt, commit: result.commit, settings, outcome: result.outcome }];
  });
  return [
    '# Benchmark results',
    '',
    'Written by `npm run bench` (bench/run.ts) from the goals each benchmark declares with',
    '`reportGoals` (bench/support/report.ts); a run of some benchmarks replaces only their rows. The',
    'anchor is measured in the same run as our figure. Every table a benchmark printed is in latest.json.',
    '',
    ...table(summaryRows(results, names)),
    '',
    '## Runs',
    '',
    'A setting marked * was set in the environment for that run instead of being the benchmark’s default.',
    '',
    ...(runs.length > 0 ? table(runs) : ['No benchmark has run yet.']),
    '',
  ].join('\n');
}
