import { randomSeed } from './rng.ts';

export interface ChaosOptions {
  /** Length of the fault phase (the workload runs through it). */
  readonly durationMs: number;
  /** Multiplies every fault rate (1: the rates in schedule.ts). */
  readonly intensity: number;
  readonly seed: number;
  /** Concurrent workload clients. */
  readonly clients: number;
  /** TASKGATE_MAX_CALL_MS for the run: every call must end within it, so quiescence is bounded. */
  readonly maxCallMs: number;
  /** How long quiescence may take before the non-terminal tasks are reported. */
  readonly quiesceBoundMs: number;
  /** How long undelivered outbox rows get after quiescence. */
  readonly drainBoundMs: number;
  /** Markdown table of the run, for the README. */
  readonly reportFile: string | null;
  /** The whole result as JSON (the CI test reads it). */
  readonly jsonFile: string | null;
  /** Copy every process log and the Postgres log here before the temp dir is removed. */
  readonly keepLogsDir: string | null;
  readonly verbose: boolean;
  /** Print the fault schedule of the seed and exit, starting nothing. */
  readonly dryRun: boolean;
}

export const USAGE = `npm run chaos -- [options]

  --minutes N        length of the fault phase (default 2); or --seconds N
  --intensity X      fault rate multiplier (default 1: ~6 kills and ~1.8 Postgres restarts a minute)
  --seed N           replay a run's fault schedule (printed at the start of every run)
  --clients N        concurrent workload clients (default 10)
  --max-call-ms N    TASKGATE_MAX_CALL_MS for the processes (default 60000)
  --quiesce-ms N     bound on quiescence after the fault phase (default: max-call-ms + 60000)
  --drain-ms N       bound on the outbox drain after quiescence (default 30000)
  --report FILE      also write the summary table (markdown) to FILE
  --json FILE        also write the whole result as JSON to FILE
  --keep-logs DIR    copy the process and Postgres logs to DIR before cleaning up
  --verbose          print every fault and restart as it happens
  --dry-run          print the fault schedule of the seed and exit (starts nothing)`;

export class UsageError extends Error {}

export function parseOptions(argv: readonly string[]): ChaosOptions {
  const values = new Map<string, string>();
  const flags = new Set<string>();
  for (let index = 0; index < argv.length; index++) {
    const arg = argv[index] as string;
    if (arg === '--verbose' || arg === '--dry-run' || arg === '--help' || arg === '-h') {
      flags.add(arg);
      continue;
    }
    if (!arg.startsWith('--')) throw new UsageError(`unexpected argument ${JSON.stringify(arg)}`);
    const [name, inline] = arg.split('=', 2) as [string, string | undefined];
    const value = inline ?? argv[++index];
    if (value === undefined) throw new UsageError(`${name} needs a value`);
    values.set(name, value);
  }
  if (flags.has('--help') || flags.has('-h')) throw new UsageError(USAGE);
  const known = [
    '--minutes',
    '--seconds',
    '--intensity',
    '--seed',
    '--clients',
    '--max-call-ms',
    '--quiesce-ms',
    '--drain-ms',
    '--report',
    '--json',
    '--keep-logs',
  ];
  for (const name of values.keys()) if (!known.includes(name)) throw new UsageError(`unknown option ${name}`);

  const number = (name: string, min: number, max: number): number | undefined => {
    const raw = values.get(name);
    if (raw === undefined) return undefined;
    const parsed = Number(raw);
    if (!/^\d+(\.\d+)?$/.test(raw) || parsed < min || parsed > max) {
      throw new UsageError(`${name} must be a number from ${min} to ${max} (got ${JSON.stringify(raw)})`);
    }
    return parsed;
  };
  const seconds = number('--seconds', 5, 86_400);
  const minutes = number('--minutes', 0.1, 1_440);
  if (seconds !== undefined && minutes !== undefined) throw new UsageError('give --minutes or --seconds, not both');
  const maxCallMs = number('--max-call-ms', 5_000, 3_600_000) ?? 60_000;
  const seed = number('--seed', 1, 4_294_967_295);
  if (seed !== undefined && !Number.isInteger(seed)) throw new UsageError('--seed must be an integer');
  const clients = number('--clients', 1, 200) ?? 10;
  if (!Number.isInteger(clients)) throw new UsageError('--clients must be an integer');
  return {
    durationMs: Math.round(seconds !== undefined ? seconds * 1_000 : (minutes ?? 2) * 60_000),
    intensity: number('--intensity', 0.05, 20) ?? 1,
    seed: seed ?? randomSeed(),
    clients,
    maxCallMs,
    quiesceBoundMs: number('--quiesce-ms', 1_000, 3_600_000) ?? maxCallMs + 60_000,
    drainBoundMs: number('--drain-ms', 1_000, 3_600_000) ?? 30_000,
    reportFile: values.get('--report') ?? null,
    jsonFile: values.get('--json') ?? null,
    keepLogsDir: values.get('--keep-logs') ?? null,
    verbose: flags.has('--verbose'),
    dryRun: flags.has('--dry-run'),
  };
}
