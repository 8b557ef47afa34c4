import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { printTable, reportGoals } from '../../bench/support/report.ts';
import {
  aheadOfAnchor,
  atLeast,
  atLeastShareOfAnchor,
  type BenchmarkResult,
  below,
  belowAnchor,
  collect,
  type Goal,
  judge,
  merge,
  type Results,
  renderJson,
  renderMarkdown,
} from '../../bench/support/results.ts';
import { REPO_ROOT } from '../support/cli.ts';

const pickup = (ours: number, anchor: number | 'never' = 9.7): Goal => ({
  metric: 'pickup p99',
  unit: 'ms',
  rule: below(20),
  ours,
  anchor: { label: 'pg-boss 12', value: anchor },
});

const run = (goals: Goal[], outcome = 'ok'): BenchmarkResult => ({
  measuredAt: '2026-12-01T08:00Z',
  commit: 'abc1234',
  outcome,
  settings: { RATE: 200, TOTAL: 2000 },
  fromEnvironment: {},
  goals: goals.map(judge),
  tables: [],
});

describe('goal verdicts', () => {
  it('holds a "below" limit strictly and an "at least" limit inclusively', () => {
    expect(judge(pickup(19.9)).verdict).toBe('met');
    expect(judge(pickup(20)).verdict).toBe('not met');
    const relay = (ours: number) => judge({ metric: 'backlog', unit: 'events/s', rule: atLeast(5_000), ours });
    expect(relay(5_000).verdict).toBe('met');
    expect(relay(4_999).verdict).toBe('not met');
  });

  it('judges a share of the anchor against the anchor measured in the same run', () => {
    const rest = (ours: number, anchor: number) =>
      judge({
        metric: 'completed/s',
        unit: 'tasks/s',
        rule: atLeastShareOfAnchor(0.7),
        ours,
        anchor: { label: 'pg-boss', value: anchor },
      });
    expect(rest(700, 1_000).verdict).toBe('met');
    expect(rest(699, 1_000).verdict).toBe('not met');
    const inline = (ours: number) =>
      judge({
        metric: 'inline',
        unit: 'calls/s',
        rule: aheadOfAnchor(),
        ours,
        anchor: { label: 'SDK v1', value: 2_000 },
      });
    expect(inline(2_001).verdict).toBe('met');
    expect(inline(2_000).verdict).toBe('not met');
  });

  it('counts a figure that was not measured as unmet, and an anchor that was not as no anchor', () => {
    expect(judge(pickup(Number.NaN)).verdict).toBe('not met');
    const share = judge({
      metric: 'completed/s',
      unit: 'tasks/s',
      rule: atLeastShareOfAnchor(0.7),
      ours: 500,
      anchor: { label: 'pg-boss', value: Number.NaN },
    });
    expect(share.verdict).toBe('no anchor figure');
    // NaN does not survive JSON; the judged goal holds null, which reads back as "no figure".
    expect(share.anchor?.value).toBeNull();
  });

  it('lets any figure of ours beat an anchor that never did the thing, when lower is better', () => {
    const cancel = (ours: number) =>
      judge({
        metric: 'cancel p99',
        unit: 'ms',
        rule: belowAnchor(),
        ours,
        anchor: { label: 'pg-boss', value: 'never' },
      });
    expect(cancel(4_000).verdict).toBe('met');
    expect(judge(pickup(12, 'never')).verdict).toBe('met');
  });

  it('states the goal from its rule, so the text cannot disagree with the verdict', () => {
    expect(judge(pickup(1)).goal).toBe('pickup p99 < 20 ms');
    expect(judge({ metric: 'backlog', unit: 'events/s', rule: atLeast(5_000), ours: 1 }).goal).toBe(
      'backlog ≥ 5,000 events/s',
    );
    expect(
      judge({
        metric: 'charges',
        unit: '/s',
        rule: atLeastShareOfAnchor(0.5),
        ours: 1,
        anchor: { label: 'x', value: 1 },
      }).goal,
    ).toBe('charges ≥ 0.5 × anchor');
  });
});

describe('a benchmark run as the runner collects it', () => {
  const goalsLine = JSON.stringify({
    kind: 'goals',
    settings: { TOTAL: 100 },
    fromEnvironment: { TOTAL: 100 },
    goals: [judge(pickup(8))],
  });
  const tableLine = JSON.stringify({ kind: 'table', title: 'Pickup', rows: [{ path: 'taskgate', 'p99 ms': 8 }] });
  const ok = { status: 0, signal: null };
  const at = { measuredAt: '2026-12-01T08:00Z', commit: 'abc1234' };

  it('keeps the tables and goals a benchmark wrote', () => {
    const result = collect(`${tableLine}\n${goalsLine}\n`, ok, at);
    expect(result.outcome).toBe('ok');
    expect(result.tables).toEqual([{ title: 'Pickup', rows: [{ path: 'taskgate', 'p99 ms': 8 }] }]);
    expect(result.goals.map((goal) => goal.verdict)).toEqual(['met']);
    expect(result.fromEnvironment).toEqual({ TOTAL: 100 });
  });

  it('does not let a crashed benchmark stand, whatever it reported before', () => {
    expect(collect(`${goalsLine}\n`, { status: 1, signal: null }, at).outcome).toBe('exit 1');
    expect(collect('', { status: null, signal: 'SIGKILL' }, at).outcome).toBe('signal SIGKILL');
  });

  it('fails a benchmark that exits cleanly but declares no goals', () => {
    expect(collect(`${tableLine}\n`, ok, at).outcome).toBe('reported no goals');
  });

  it('fails a benchmark whose report cannot be read, rather than the runner', () => {
    expect(collect(`${goalsLine}\n${tableLine.slice(0, 20)}\n`, ok, at).outcome).toBe(
      'wrote an unreadable report line',
    );
  });
});

describe('reportGoals → BENCH_RESULTS_FILE → collect', () => {
  const scratch = mkdtempSync(path.join(tmpdir(), 'tg-bench-test-'));
  afterEach(() => {
    delete process.env.BENCH_RESULTS_FILE;
    delete process.env.RATE;
  });

  it('hands the runner what the benchmark printed and judged, and which settings came from the environment', () => {
    const file = path.join(scratch, 'lines.jsonl');
    process.env.BENCH_RESULTS_FILE = file;
    process.env.RATE = '50';
    printTable('Pickup', [{ path: 'taskgate', 'p99 ms': 21 }]);
    reportGoals({ RATE: 50, TOTAL: 2_000 }, [pickup(21)]);
    const result = collect(readFileSync(file, 'utf8'), { status: 0, signal: null }, { measuredAt: 'now', commit: 'x' });
    rmSync(scratch, { recursive: true, force: true });
    expect(result.outcome).toBe('ok');
    expect(result.goals.map((goal) => [goal.goal, goal.verdict])).toEqual([['pickup p99 < 20 ms', 'not met']]);
    expect(result.settings).toEqual({ RATE: 50, TOTAL: 2_000 });
    expect(result.fromEnvironment).toEqual({ RATE: 50 });
    expect(result.tables).toHaveLength(1);
  });
});

describe('bench/results files', () => {
  const names = ['cancel-latency', 'pickup-latency', 'relay-delivery'];
  const previous: Results = {
    benchmarks: { 'cancel-latency': run([pickup(3)]), 'pickup-latency': run([pickup(8)]), removed: run([pickup(1)]) },
  };

  it('replaces only the rows of the benchmarks that ran, and drops benchmarks that no longer exist', () => {
    const merged = merge(previous, { 'pickup-latency': run([pickup(30)]) }, names);
    expect(Object.keys(merged.benchmarks)).toEqual(['cancel-latency', 'pickup-latency']);
    expect(merged.benchmarks['cancel-latency']).toBe(previous.benchmarks['cancel-latency']);
    expect(merged.benchmarks['pickup-latency']?.goals[0]?.verdict).toBe('not met');
  });

  it('shows a worse figure as a change of its own row only', () => {
    const before = renderMarkdown(previous, names).split('\n');
    const after = renderMarkdown(merge(previous, { 'pickup-latency': run([pickup(30)]) }, names), names).split('\n');
    const changed = after.filter((line, index) => line !== before[index]);
    expect(after).toHaveLength(before.length);
    expect(changed).toEqual([
      '| pickup-latency | pickup p99 < 20 ms | 30.0 ms | 9.70 ms (pg-boss 12) | 3.1× | not met |',
    ]);
  });

  it('says which benchmarks have not run, which run failed, and which settings were not the defaults', () => {
    const results: Results = {
      benchmarks: {
        'cancel-latency': { ...run([pickup(3)], 'exit 1'), fromEnvironment: { TOTAL: 2000 } },
      },
    };
    const markdown = renderMarkdown(results, names);
    expect(markdown).toContain(
      '| cancel-latency | pickup p99 < 20 ms | 3.00 ms | 9.70 ms (pg-boss 12) | 0.31× | met (run failed: exit 1) |',
    );
    expect(markdown).toContain('| pickup-latency |  |  |  |  | not run yet |');
    expect(markdown).toContain('| cancel-latency | 2026-12-01T08:00Z | abc1234 | RATE=200 TOTAL=2000* | exit 1 |');
  });

  it('writes JSON that reads back as written and is already in the format lint checks', () => {
    const json = renderJson(merge(previous, {}, names));
    expect(JSON.parse(json)).toEqual(merge(previous, {}, names));
    const formatted = spawnSync(
      path.join(REPO_ROOT, 'node_modules/.bin/biome'),
      ['format', '--stdin-file-path=bench/results/latest.json'],
      { cwd: REPO_ROOT, input: json, encoding: 'utf8' },
    );
    expect(formatted.status).toBe(0);
    expect(formatted.stdout).toBe(json);
  });
});
