import type pg from 'pg';
import { HARNESS_APPLICATION, type PostgresCluster } from '../support/postgres-cluster.ts';
import type { Canary } from './canary.ts';
import type { Fleet } from './fleet.ts';
import { describeFault, type Fault, type ScheduledFault } from './schedule.ts';
import type { Timeline } from './timeline.ts';
import { sleep } from './workload-context.ts';

export interface FaultStats {
  faultsRun: number;
  faultsNotReached: number;
  postgresRestarts: number;
  /** Immediate stops for longer than slow_compute's idle clock (counted in postgresRestarts too). */
  postgresOutages: number;
  /** When each of those was down, on the wall clock (the database's `now()` is compared with it). */
  readonly outageWindows: { readonly from: Date; readonly to: Date }[];
  backendStorms: number;
  backendsTerminated: number;
  poolExhaustions: number;
  rowLocks: number;
  /** Milliseconds from "Postgres accepts connections again" to a successful canary, per restart. */
  readonly recoveryMs: number[];
  /** Restarts after which the canary never succeeded within its bound. */
  recoveryTimeouts: number;
}

/** Client backends of the Taskgate processes: everything on the database but the harness's own. */
const TASKGATE_BACKENDS = `
  datname = 'taskgate' AND backend_type = 'client backend' AND pid <> pg_backend_pid()
  AND application_name NOT LIKE '${HARNESS_APPLICATION}%'`;

/**
 * Runs a schedule in order, each fault at its time or as soon as the one before it has ended, and
 * measures recovery after each Postgres restart (no other fault runs until the canary succeeds).
 */
export class FaultInjector {
  readonly stats: FaultStats = {
    faultsRun: 0,
    faultsNotReached: 0,
    postgresRestarts: 0,
    postgresOutages: 0,
    outageWindows: [],
    backendStorms: 0,
    backendsTerminated: 0,
    poolExhaustions: 0,
    rowLocks: 0,
    recoveryMs: [],
    recoveryTimeouts: 0,
  };
  readonly #cluster: PostgresCluster;
  readonly #fleet: Fleet;
  readonly #canary: Canary;
  readonly #timeline: Timeline;
  /** Connections the pool-exhaustion phase holds; closed by cleanup too. */
  readonly hogs = new Set<pg.Client>();

  constructor(cluster: PostgresCluster, fleet: Fleet, canary: Canary, timeline: Timeline) {
    this.#cluster = cluster;
    this.#fleet = fleet;
    this.#canary = canary;
    this.#timeline = timeline;
  }

  async run(schedule: readonly ScheduledFault[], durationMs: number): Promise<void> {
    const start = this.#timeline.now();
    const kindsRun = new Set<string>();
    for (const [index, { atMs, fault }] of schedule.entries()) {
      const wait = start + atMs - this.#timeline.now();
      if (wait > 0) await sleep(wait);
      if (this.#timeline.now() - start >= durationMs) {
        // Faults run one after another, so slow ones (a restart and its recovery, a long hold)
        // can push the rest past the phase. A kind scheduled once may be among them; every kind
        // still runs once, late, or a run would not test what it says it tests.
        const late = schedule.slice(index).filter(({ fault: next }, at, rest) => {
          return !kindsRun.has(next.kind) && rest.findIndex(({ fault: other }) => other.kind === next.kind) === at;
        });
        this.stats.faultsNotReached = schedule.length - index - late.length;
        this.#timeline.record(
          `fault phase over: ${schedule.length - index} scheduled fault(s) not reached; running ${late.length} of a kind not run yet`,
        );
        for (const { fault: missing } of late) {
          this.#timeline.record(`late fault: ${describeFault(missing)}`);
          await this.#inject(missing);
          this.stats.faultsRun += 1;
        }
        return;
      }
      this.#timeline.record(`fault #${index + 1}: ${describeFault(fault)}`);
      await this.#inject(fault);
      kindsRun.add(fault.kind);
      this.stats.faultsRun += 1;
    }
    const left = start + durationMs - this.#timeline.now();
    if (left > 0) await sleep(left);
  }

  async #inject(fault: Fault): Promise<void> {
    switch (fault.kind) {
      case 'kill':
        if (!(await this.#fleet.kill(fault.target, fault.signal, fault.restartAfterMs))) {
          this.#timeline.record('kill skipped: no process was up');
        }
        return;
      case 'postgres-restart':
        return this.#restartPostgres(fault.downMs, 'fast');
      case 'postgres-outage':
        return this.#restartPostgres(fault.downMs, 'immediate');
      case 'backend-storm':
        return this.#storm(fault.rounds, fault.gapMs);
      case 'pool-exhaustion':
        return fault.mode === 'connections' ? this.#exhaustConnections(fault.holdMs) : this.#lockHotRow(fault.holdMs);
      case 'rolling-restart':
        return this.#fleet.rollingRestart();
    }
  }

  async #restartPostgres(downMs: number, mode: 'fast' | 'immediate'): Promise<void> {
    // A process still coming back from a kill would count in the recovery time: let it come up first.
    await this.#fleet.waitAllRunning(30_000);
    const from = new Date();
    if (mode === 'fast') await this.#cluster.fastStop();
    else await this.#cluster.immediateStop();
    this.stats.postgresRestarts += 1;
    if (mode === 'immediate') this.stats.postgresOutages += 1;
    this.#timeline.record(`Postgres stopped (${mode}); down for ${downMs} ms`);
    await sleep(downMs);
    await this.#cluster.start();
    if (mode === 'immediate') this.stats.outageWindows.push({ from, to: new Date() });
    const acceptingAt = await this.#cluster.waitAccepting();
    this.#timeline.record('Postgres accepting connections again');
    const recovered = await this.#canary.recoveryFrom(acceptingAt, 60_000);
    if (recovered === null) {
      this.stats.recoveryTimeouts += 1;
      this.#timeline.record('RECOVERY: the canary did not succeed within 60 s of Postgres accepting connections');
    } else {
      this.stats.recoveryMs.push(recovered);
      this.#timeline.record(`recovered: canary succeeded ${recovered} ms after Postgres accepted connections`);
    }
  }

  async #storm(rounds: number, gapMs: number): Promise<void> {
    this.stats.backendStorms += 1;
    const admin = this.#cluster.client();
    try {
      await admin.connect();
      for (let round = 1; round <= rounds; round++) {
        const { rows } = await admin.query<{ killed: string }>(
          `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) AS killed FROM pg_stat_activity WHERE ${TASKGATE_BACKENDS}`,
        );
        const killed = Number(rows[0]?.killed ?? 0);
        this.stats.backendsTerminated += killed;
        this.#timeline.record(`storm round ${round}: terminated ${killed} backend(s)`);
        if (round < rounds) await sleep(gapMs);
      }
    } finally {
      await admin.end().catch(() => {});
    }
  }

  /**
   * Another application takes every free connection slot, then the Taskgate backends are
   * terminated once, so every pool has to reconnect into a full server (53300) until the hogs go.
   */
  async #exhaustConnections(holdMs: number): Promise<void> {
    this.stats.poolExhaustions += 1;
    for (;;) {
      const hog = this.#cluster.client('taskgate', `${HARNESS_APPLICATION}-hog`);
      try {
        await hog.connect();
        this.hogs.add(hog);
      } catch {
        await hog.end().catch(() => {});
        break;
      }
      if (this.hogs.size >= this.#cluster.maxConnections) break;
    }
    this.#timeline.record(`holding ${this.hogs.size} connection(s): the server is full`);
    const [first] = this.hogs;
    let killed = 0;
    if (first) {
      const { rows } = await first.query<{ killed: string }>(
        `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) AS killed FROM pg_stat_activity WHERE ${TASKGATE_BACKENDS}`,
      );
      killed = Number(rows[0]?.killed ?? 0);
      this.stats.backendsTerminated += killed;
    }
    this.#timeline.record(`terminated ${killed} Taskgate backend(s) into the full server`);
    await sleep(holdMs);
    await this.releaseHogs();
    this.#timeline.record('connections released');
  }

  async releaseHogs(): Promise<void> {
    await Promise.all([...this.hogs].map((hog) => hog.end().catch(() => {})));
    this.hogs.clear();
  }

  /** A transaction of another application holds the hot SKU's row lock; reservations of it queue behind. */
  async #lockHotRow(holdMs: number): Promise<void> {
    this.stats.rowLocks += 1;
    const locker = this.#cluster.client('taskgate', `${HARNESS_APPLICATION}-locker`);
    try {
      await locker.connect();
      await locker.query('BEGIN');
      const { rowCount } = await locker.query(
        "SELECT 1 FROM inventory WHERE tenant_id = 'alpha' AND sku = 'hot' FOR UPDATE",
      );
      this.#timeline.record(`locked ${rowCount} hot inventory row(s)`);
      await sleep(holdMs);
      await locker.query('ROLLBACK');
      this.#timeline.record('hot row released');
    } finally {
      await locker.end().catch(() => {});
    }
  }
}
