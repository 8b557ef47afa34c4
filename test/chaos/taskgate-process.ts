import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { KillSignal } from './schedule.ts';
import type { Timeline } from './timeline.ts';

export const REPO_ROOT = path.resolve(import.meta.dirname, '../..');
const CLI = path.join(REPO_ROOT, 'apps/cli/bin/taskgate.js');
const TAIL_LINES = 30;
/** TASKGATE_SHUTDOWN_GRACE_MS (3 s) + the 2 s the product allows itself, with room to spare. */
const STUCK_AFTER_MS = 15_000;
/** sysexits the CLI uses when the database did not answer at start-up (docs/errors.md): a refusal, not a crash. */
const UNAVAILABLE_EXIT_CODES = [69, 75];

export interface ExitRecord {
  readonly process: string;
  readonly pid: number;
  readonly code: number | null;
  readonly signal: string | null;
  readonly atMs: number;
  /** running: it had logged "taskgate started"; starting: it died on its way up. */
  readonly phase: 'starting' | 'running';
  readonly lastLines: readonly string[];
}

type State = 'stopped' | 'starting' | 'running' | 'stopping';

/**
 * One `taskgate start --role <role> --no-migrate` process, supervised: its stdout and stderr go to
 * a log file of its own (and the last lines stay in memory), "taskgate started" marks it up, and an
 * exit the harness did not cause is recorded as a crash with those last lines.
 */
export class TaskgateProcess {
  readonly name: string;
  readonly logFile: string;
  readonly crashes: ExitRecord[] = [];
  /** Exits at start-up with "database unavailable" (69, 75): refused to start, retried. */
  startRefusals = 0;
  /** Exits after a harness SIGTERM with a non-zero status (the product's "stopped with problems"). */
  readonly uncleanStops: ExitRecord[] = [];
  #state: State = 'stopped';
  #child: ChildProcess | null = null;
  #expected = false;
  #tail: string[] = [];
  readonly #args: readonly string[];
  readonly #env: Record<string, string>;
  readonly #timeline: Timeline;
  #exited: Promise<ExitRecord> = Promise.resolve(null as unknown as ExitRecord);
  /** Called after an exit the harness did not cause once the process had started (the fleet restarts it). */
  onCrash: (exit: ExitRecord) => void = () => {};

  constructor(name: string, role: string, env: Record<string, string>, logDir: string, timeline: Timeline) {
    this.name = name;
    this.logFile = path.join(logDir, `${name}.log`);
    this.#args = [CLI, 'start', '--role', role, '--no-migrate'];
    this.#env = env;
    this.#timeline = timeline;
  }

  get state(): State {
    return this.#state;
  }

  get pid(): number | undefined {
    return this.#child?.pid;
  }

  /**
   * Starts it and resolves once it logged "taskgate started". A start refused because the
   * database is unavailable is retried (as a supervisor would) until `giveUp` says stop.
   */
  async start(giveUp: () => boolean = () => false): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const outcome = await this.#startOnce();
      if (outcome === 'started') return;
      // A process that cannot come up after this many tries is broken, not unlucky: stop retrying.
      if (giveUp() || attempt >= 40) throw new Error(`${this.name} did not start (${attempt} tries): ${outcome}`);
      await new Promise((resolve) => setTimeout(resolve, Math.min(2_000, 200 * attempt)));
    }
  }

  /** Sends the signal and resolves with the exit once the process is gone. */
  async signal(signal: KillSignal): Promise<ExitRecord | null> {
    const child = this.#child;
    if (!child || this.#state === 'stopped') return null;
    this.#expected = true;
    this.#state = 'stopping';
    const exited = this.#exited;
    child.kill(signal);
    // The product promises an exit within its grace period plus 2 s; past this, it is stuck.
    const stuck = setTimeout(() => {
      this.#timeline.record(
        `${this.name} pid ${child.pid} still running ${STUCK_AFTER_MS} ms after ${signal}: SIGKILL`,
      );
      child.kill('SIGKILL');
    }, STUCK_AFTER_MS);
    const exit = await exited;
    clearTimeout(stuck);
    if (signal === 'SIGTERM' && exit.code !== 0) this.uncleanStops.push(exit);
    return exit;
  }

  /** For the exit path: no waiting, nothing left behind. */
  killNowSync(): void {
    this.#expected = true;
    if (this.#child && this.#child.exitCode === null && this.#child.signalCode === null) this.#child.kill('SIGKILL');
  }

  #startOnce(): Promise<'started' | string> {
    this.#expected = false;
    this.#state = 'starting';
    const log = fs.createWriteStream(this.logFile, { flags: 'a' });
    const banner = `--- ${new Date().toISOString()} starting ${this.name}`;
    log.write(`${banner}\n`);
    this.#tail.push(banner);
    const child = spawn(process.execPath, this.#args, {
      cwd: REPO_ROOT,
      env: this.#env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.#child = child;
    const startedAt = this.#timeline.now();
    return new Promise((resolve) => {
      let partial = '';
      const onData = (chunk: Buffer) => {
        log.write(chunk);
        const lines = (partial + chunk.toString()).split('\n');
        partial = lines.pop() ?? '';
        for (const line of lines) {
          this.#tail.push(line);
          if (this.#state === 'starting' && line.includes('"msg":"taskgate started"')) {
            this.#state = 'running';
            resolve('started');
          }
        }
        if (this.#tail.length > TAIL_LINES) this.#tail.splice(0, this.#tail.length - TAIL_LINES);
      };
      child.stdout?.on('data', onData);
      child.stderr?.on('data', onData);
      this.#exited = new Promise((settle) => {
        child.once('close', (code, signal) => {
          const phase = this.#state === 'starting' ? 'starting' : 'running';
          const exit: ExitRecord = {
            process: this.name,
            pid: child.pid ?? -1,
            code,
            signal,
            atMs: this.#timeline.now(),
            phase,
            lastLines: [...this.#tail, ...(partial ? [partial] : [])],
          };
          log.end(`--- ${new Date().toISOString()} exited code=${code} signal=${signal}\n`);
          this.#state = 'stopped';
          this.#child = null;
          if (!this.#expected) this.#unexpected(exit, startedAt);
          settle(exit);
          resolve(`exited with code ${code} signal ${signal}`);
        });
      });
    });
  }

  #unexpected(exit: ExitRecord, startedAt: number): void {
    if (exit.phase === 'starting' && exit.code !== null && UNAVAILABLE_EXIT_CODES.includes(exit.code)) {
      this.startRefusals += 1;
      this.#timeline.record(`${this.name} refused to start (exit ${exit.code}: database unavailable); retrying`);
      return;
    }
    this.crashes.push(exit);
    this.#timeline.record(
      `CRASH ${this.name} pid ${exit.pid} exited on its own (code ${exit.code}, signal ${exit.signal}, ` +
        `${exit.phase}, up since ${startedAt} ms); last line: ${exit.lastLines.at(-1) ?? ''}`,
    );
    if (exit.phase === 'running') this.onCrash(exit);
  }
}
