import { type KillSignal, PROCESS_NAMES, type ProcessName } from './schedule.ts';
import { type ExitRecord, TaskgateProcess } from './taskgate-process.ts';
import type { Timeline } from './timeline.ts';

export interface FleetConfig {
  readonly databaseUrl: string;
  /** TASKGATE_TOKENS: two tenants. */
  readonly tokens: string;
  /** One port per API process, kept across its restarts. */
  readonly apiPorts: readonly [number, number];
  readonly sinkUrl: string;
  readonly relaySecret: string;
  readonly maxCallMs: number;
  readonly logDir: string;
}

const ROLE_OF: Record<ProcessName, 'api' | 'worker' | 'relay'> = {
  'api-1': 'api',
  'api-2': 'api',
  'worker-1': 'worker',
  'worker-2': 'worker',
  'worker-3': 'worker',
  'relay-1': 'relay',
  'relay-2': 'relay',
};

/**
 * The Taskgate processes of a run — 2 APIs, 3 workers, 2 relays, each `--no-migrate` — and the
 * faults that act on them: a signal then a restart, a rolling restart of the workers, and the
 * restart of a process that died on its own (after recording the crash).
 */
export class Fleet {
  readonly processes: ReadonlyMap<ProcessName, TaskgateProcess>;
  readonly apiUrls: readonly string[];
  readonly kills: Record<KillSignal, number> = { SIGKILL: 0, SIGTERM: 0 };
  rollingRestarts = 0;
  readonly #timeline: Timeline;
  readonly #restarts = new Set<Promise<void>>();
  #stopping = false;

  constructor(config: FleetConfig, timeline: Timeline) {
    this.#timeline = timeline;
    const common: Record<string, string> = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: process.env.HOME ?? '/tmp',
      DATABASE_URL: config.databaseUrl,
      HOST: '127.0.0.1',
      TASKGATE_TOKENS: config.tokens,
      TASKGATE_MAX_CALL_MS: String(config.maxCallMs),
      TASKGATE_SHUTDOWN_GRACE_MS: '3000',
      TASKGATE_WORKER_CONCURRENCY: '16',
      TASKGATE_RELAY_SINKS: config.sinkUrl,
      TASKGATE_RELAY_SECRET: config.relaySecret,
      // Bounded drain: a flaky delivery dead-letters after ~15 s of backoff at most, and a killed
      // relay's rows are redelivered 5 s after its claim instead of 30.
      TASKGATE_RELAY_MAX_ATTEMPTS: '5',
      TASKGATE_RELAY_LEASE_MS: '5000',
      LOG_LEVEL: 'info',
    };
    const processes = new Map<ProcessName, TaskgateProcess>();
    let api = 0;
    for (const name of PROCESS_NAMES) {
      const role = ROLE_OF[name];
      const env = role === 'api' ? { ...common, PORT: String(config.apiPorts[api++]) } : common;
      const child = new TaskgateProcess(name, role, env, config.logDir, timeline);
      child.onCrash = () => this.#restartLater(child, 500);
      processes.set(name, child);
    }
    this.processes = processes;
    this.apiUrls = config.apiPorts.map((port) => `http://127.0.0.1:${port}`);
  }

  async startAll(): Promise<void> {
    await Promise.all([...this.processes.values()].map((child) => child.start(() => this.#stopping)));
  }

  allRunning(): boolean {
    return [...this.processes.values()].every((child) => child.state === 'running');
  }

  async waitAllRunning(timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (!this.allRunning()) {
      if (Date.now() > deadline) return false;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return true;
  }

  /**
   * Signals the target (or, if it is down already, the next process that is up) and restarts it
   * after the delay. A SIGTERM waits for the graceful exit first; the restart runs in the background.
   */
  async kill(target: ProcessName, signal: KillSignal, restartAfterMs: number): Promise<string | null> {
    const order = [...PROCESS_NAMES.slice(PROCESS_NAMES.indexOf(target)), ...PROCESS_NAMES];
    const victim = order.map((name) => this.processes.get(name) as TaskgateProcess).find((c) => c.state === 'running');
    if (!victim) return null;
    const pid = victim.pid;
    this.kills[signal] += 1;
    this.#timeline.record(`${signal} ${victim.name} pid ${pid}`);
    const exit = await victim.signal(signal);
    this.#timeline.record(
      `${victim.name} pid ${pid} exited (code ${exit?.code ?? '-'}, signal ${exit?.signal ?? '-'})`,
    );
    this.#restartLater(victim, restartAfterMs);
    return victim.name;
  }

  /** Every worker in turn: SIGTERM, wait for it to exit, start it again, wait until it is up. */
  async rollingRestart(): Promise<void> {
    this.rollingRestarts += 1;
    for (const name of ['worker-1', 'worker-2', 'worker-3'] as const) {
      const worker = this.processes.get(name) as TaskgateProcess;
      if (this.#stopping) return;
      if (worker.state === 'running') {
        this.kills.SIGTERM += 1;
        this.#timeline.record(`rolling restart: SIGTERM ${name} pid ${worker.pid}`);
        const exit = await worker.signal('SIGTERM');
        this.#timeline.record(`rolling restart: ${name} exited (code ${exit?.code ?? '-'})`);
      }
      // A worker already down (killed a moment ago) is brought up here rather than by its own restart.
      while (worker.state === 'starting' || worker.state === 'stopping') await sleep(50);
      if (worker.state === 'stopped') await worker.start(() => this.#stopping);
      this.#timeline.record(`rolling restart: ${name} up again, pid ${worker.pid}`);
    }
  }

  /** Every exit the harness did not cause. */
  crashes(): ExitRecord[] {
    return [...this.processes.values()].flatMap((child) => child.crashes);
  }

  startRefusals(): number {
    return [...this.processes.values()].reduce((sum, child) => sum + child.startRefusals, 0);
  }

  uncleanStops(): ExitRecord[] {
    return [...this.processes.values()].flatMap((child) => child.uncleanStops);
  }

  /** Waits for pending restarts, then SIGTERMs everything (the graceful end of a run). */
  async stopAll(): Promise<void> {
    await Promise.allSettled([...this.#restarts]);
    this.#stopping = true;
    await Promise.all([...this.processes.values()].map((child) => child.signal('SIGTERM')));
  }

  killAllSync(): void {
    this.#stopping = true;
    for (const child of this.processes.values()) child.killNowSync();
  }

  #restartLater(child: TaskgateProcess, delayMs: number): void {
    const restart = (async () => {
      await sleep(delayMs);
      if (this.#stopping || child.state !== 'stopped') return;
      await child.start(() => this.#stopping);
      this.#timeline.record(`${child.name} restarted, pid ${child.pid}`);
    })().catch((error: Error) => this.#timeline.record(`${child.name} restart abandoned: ${error.message}`));
    this.#restarts.add(restart);
    void restart.finally(() => this.#restarts.delete(restart));
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
