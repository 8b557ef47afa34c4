import type { Rng } from './rng.ts';

export const PROCESS_NAMES = ['api-1', 'api-2', 'worker-1', 'worker-2', 'worker-3', 'relay-1', 'relay-2'] as const;
export type ProcessName = (typeof PROCESS_NAMES)[number];
export type KillSignal = 'SIGKILL' | 'SIGTERM';

export type Fault =
  | {
      readonly kind: 'kill';
      readonly target: ProcessName;
      readonly signal: KillSignal;
      readonly restartAfterMs: number;
    }
  | { readonly kind: 'postgres-restart'; readonly downMs: number }
  /**
   * Postgres stopped at once (-m immediate, as on a crash) for longer than slow_compute's idle
   * clock (5 s): the handlers that return meanwhile have their completions wait out the outage,
   * and their clocks run out before the writes can land.
   */
  | { readonly kind: 'postgres-outage'; readonly downMs: number }
  | { readonly kind: 'backend-storm'; readonly rounds: number; readonly gapMs: number }
  | { readonly kind: 'pool-exhaustion'; readonly mode: 'connections' | 'row-lock'; readonly holdMs: number }
  | { readonly kind: 'rolling-restart' };

export type FaultKind = Fault['kind'];
export interface ScheduledFault {
  /** Offset from the start of the fault phase; a fault never starts before the previous one ended. */
  readonly atMs: number;
  readonly fault: Fault;
}

/** Faults per minute at intensity 1. At 15 minutes: ~27 Postgres restarts and ~90 process kills. */
export const RATES_PER_MINUTE: Readonly<Record<FaultKind, number>> = {
  kill: 6,
  'postgres-restart': 1.8,
  'postgres-outage': 0.4,
  'backend-storm': 1,
  'pool-exhaustion': 0.5,
  'rolling-restart': 0.25,
};

/** The fault phase's first and last seconds are quiet: the workload warms up, then in-flight faults end. */
const WARM_UP_MS = 4_000;
const COOL_DOWN_MS = 3_000;

/**
 * The whole fault schedule of a run, from the seed alone: each kind arrives at jittered regular
 * intervals (a steady rate with little variance, so a long run is sure to reach its counts), and
 * every kind appears at least once however short the run. Pure, so a seed replays it exactly.
 */
export function buildSchedule(rng: Rng, durationMs: number, intensity: number): ScheduledFault[] {
  const start = Math.min(WARM_UP_MS, durationMs / 4);
  const end = Math.max(start + 1, durationMs - COOL_DOWN_MS);
  const schedule: ScheduledFault[] = [];
  for (const kind of Object.keys(RATES_PER_MINUTE) as FaultKind[]) {
    const intervalMs = 60_000 / (RATES_PER_MINUTE[kind] * intensity);
    const times: number[] = [];
    for (let at = start + intervalMs * rng.between(0.2, 1); at < end; at += intervalMs * rng.between(0.5, 1.5)) {
      times.push(at);
    }
    if (times.length === 0) times.push(rng.between(start, end));
    for (const at of times) schedule.push({ atMs: Math.round(at), fault: faultOf(kind, rng) });
  }
  return schedule.sort((a, b) => a.atMs - b.atMs);
}

function faultOf(kind: FaultKind, rng: Rng): Fault {
  switch (kind) {
    case 'kill':
      return {
        kind,
        target: rng.pick(PROCESS_NAMES),
        signal: rng.chance(0.65) ? 'SIGKILL' : 'SIGTERM',
        restartAfterMs: rng.int(0, 3_000),
      };
    case 'postgres-restart':
      return { kind, downMs: rng.int(300, 4_000) };
    case 'postgres-outage':
      return { kind, downMs: rng.int(6_000, 9_000) };
    case 'backend-storm':
      return { kind, rounds: rng.int(1, 4), gapMs: rng.int(100, 1_500) };
    case 'pool-exhaustion':
      return { kind, mode: rng.chance(0.6) ? 'connections' : 'row-lock', holdMs: rng.int(3_000, 10_000) };
    case 'rolling-restart':
      return { kind };
  }
}

/** One line per fault, for the log and the report. */
export function describeFault(fault: Fault): string {
  switch (fault.kind) {
    case 'kill':
      return `${fault.signal} ${fault.target} (restart after ${fault.restartAfterMs} ms)`;
    case 'postgres-restart':
      return `Postgres fast stop, down ${fault.downMs} ms, restart`;
    case 'postgres-outage':
      return `Postgres immediate stop, down ${fault.downMs} ms (past slow_compute's idle clock), restart`;
    case 'backend-storm':
      return `pg_terminate_backend storm, ${fault.rounds} round(s) ${fault.gapMs} ms apart`;
    case 'pool-exhaustion':
      return fault.mode === 'connections'
        ? `connections held up to max_connections for ${fault.holdMs} ms`
        : `hot inventory row locked FOR UPDATE for ${fault.holdMs} ms`;
    case 'rolling-restart':
      return 'rolling restart of every worker (SIGTERM, wait, start, one at a time)';
  }
}
