import type { InvariantResult } from './invariant.ts';
import { formatOffset } from './timeline.ts';

export interface ChaosResult {
  readonly seed: number;
  readonly durationMs: number;
  readonly intensity: number;
  readonly clients: number;
  readonly maxCallMs: number;
  readonly startedAt: string;
  readonly tasks: number;
  readonly tasksByStatus: Readonly<Record<string, number>>;
  /** "<origin> <tool>" → status → count, from the labels the workload gives its calls. */
  readonly outcomesByOrigin: Readonly<Record<string, Readonly<Record<string, number>>>>;
  /** Why the failed tasks failed ("count × tool: message"). */
  readonly failureReasons: readonly string[];
  readonly kills: Readonly<Record<string, number>>;
  readonly rollingRestarts: number;
  readonly postgresRestarts: number;
  /** Of those, immediate stops for longer than slow_compute's idle clock. */
  readonly postgresOutages: number;
  readonly backendStorms: number;
  readonly backendsTerminated: number;
  readonly poolExhaustions: number;
  readonly rowLocks: number;
  readonly startRefusals: number;
  /** SIGTERMs the harness sent that ended with a non-zero exit (not an invariant: a note). */
  readonly uncleanStops: readonly string[];
  readonly lost: number;
  readonly duplicated: number;
  readonly nonTerminal: number;
  readonly outboxDead: number;
  readonly quiescenceMs: number | null;
  readonly drainMs: number | null;
  readonly recoveryMs: readonly number[];
  readonly recoveryTimeouts: number;
  readonly clientCounts: Readonly<Record<string, number>>;
  readonly httpStatuses: Readonly<Record<string, number>>;
  readonly invariants: readonly InvariantResult[];
  readonly timeline: readonly { atMs: number; wall: string; text: string }[];
  readonly passed: boolean;
}

/** Nearest-rank percentile; null for no samples. */
export function percentile(samples: readonly number[], p: number): number | null {
  if (samples.length === 0) return null;
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] as number;
}

const ms = (value: number | null) =>
  value === null ? '—' : value >= 10_000 ? `${(value / 1_000).toFixed(1)} s` : `${value} ms`;

/** The summary table and the invariants table, as Markdown (readable in a terminal too). */
export function renderTables(result: ChaosResult): string {
  const statuses = Object.entries(result.tasksByStatus)
    .map(([status, count]) => `${count} ${status}`)
    .join(', ');
  const rows: [string, string][] = [
    ['seed', String(result.seed)],
    [
      'fault phase',
      `${(result.durationMs / 1_000).toFixed(0)} s at intensity ${result.intensity}, ${result.clients} clients`,
    ],
    ['tasks', `${result.tasks} (${statuses})`],
    [
      'process kills',
      `${(result.kills.SIGKILL ?? 0) + (result.kills.SIGTERM ?? 0)} (SIGKILL ${result.kills.SIGKILL ?? 0}, SIGTERM ${result.kills.SIGTERM ?? 0}, incl. ${result.rollingRestarts} rolling restart(s) of 3 workers)`,
    ],
    [
      'Postgres restarts',
      `${result.postgresRestarts} (${result.postgresOutages} immediate stops past slow_compute's 5 s idle clock, the rest fast stops)`,
    ],
    [
      'backend-kill storms',
      `${result.backendStorms} (${result.backendsTerminated} backends terminated, storms and full-server phases)`,
    ],
    ['pool exhaustion phases', `${result.poolExhaustions} full server, ${result.rowLocks} hot-row lock`],
    ['starts refused (database unavailable)', String(result.startRefusals)],
    ['SIGTERM stops with a non-zero exit', String(result.uncleanStops.length)],
    ['lost (task ids + keyed successes)', String(result.lost)],
    ['duplicated (keys with several effects)', String(result.duplicated)],
    ['non-terminal after quiescence', String(result.nonTerminal)],
    ['time to quiescence', result.quiescenceMs === null ? 'not reached within the bound' : ms(result.quiescenceMs)],
    [
      'outbox drain',
      result.drainMs === null
        ? 'not drained within the bound'
        : `${ms(result.drainMs)} (${result.outboxDead} dead-lettered)`,
    ],
    [
      'recovery after Postgres restart',
      `p50 ${ms(percentile(result.recoveryMs, 50))}, p99 ${ms(percentile(result.recoveryMs, 99))}, max ${ms(result.recoveryMs.length ? Math.max(...result.recoveryMs) : null)} (${result.recoveryMs.length} measured${result.recoveryTimeouts ? `, ${result.recoveryTimeouts} never recovered within 60 s` : ''})`,
    ],
  ];
  const summary = ['| measure | value |', '| --- | --- |', ...rows.map(([k, v]) => `| ${k} | ${v} |`)];
  const invariants = [
    '| invariant | result | detail |',
    '| --- | --- | --- |',
    ...result.invariants.map((inv) => `| ${inv.name} | ${inv.pass ? 'pass' : '**FAIL**'} | ${inv.summary} |`),
  ];
  return `${summary.join('\n')}\n\n${invariants.join('\n')}\n`;
}

/** Task outcomes per workload operation (e.g. how many streams closed mid-call ended cancelled). */
export function renderOutcomes(result: ChaosResult): string {
  const lines = Object.entries(result.outcomesByOrigin).map(
    ([origin, statuses]) =>
      `| ${origin} | ${Object.entries(statuses)
        .map(([status, count]) => `${count} ${status}`)
        .join(', ')} |`,
  );
  const reasons = result.failureReasons.map((reason) => `| failed | ${reason} |`);
  return ['| tasks by origin | outcome |', '| --- | --- |', ...lines, ...reasons].join('\n');
}

/** The failing invariants' evidence, then the fault timeline: what the lead needs to reproduce a finding. */
export function renderEvidence(result: ChaosResult): string {
  const failing = result.invariants.filter((inv) => !inv.pass);
  if (failing.length === 0) return '';
  const parts = failing.map(
    (inv) => `✗ ${inv.name}: ${inv.summary}\n${inv.evidence.map((line) => `    ${line}`).join('\n')}`,
  );
  return `${parts.join('\n\n')}\n`;
}

export function renderTimeline(result: ChaosResult): string {
  return result.timeline.map((entry) => `${formatOffset(entry.atMs)} ${entry.wall} ${entry.text}`).join('\n');
}
