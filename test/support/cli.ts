import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';

export const REPO_ROOT = path.resolve(import.meta.dirname, '../..');
export const CLI = path.join(REPO_ROOT, 'apps/cli/bin/taskgate.js');

/**
 * A clean environment: the test runner's own DATABASE_URL / TEST_DATABASE_URL must never leak
 * into a process that is meant to run embedded.
 */
export function cleanEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of ['PATH', 'HOME', 'TMPDIR', 'LANG']) {
    const value = process.env[name];
    if (value !== undefined) env[name] = value;
  }
  return { ...env, ...extra };
}

export interface CliResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `taskgate <args>` to completion with the project's Node (the one running the tests). */
export function runCli(args: readonly string[], env: Record<string, string>): Promise<CliResult> {
  return runCommand(process.execPath, [CLI, ...args], env);
}

/** Runs a command to completion, collecting its output. */
export function runCommand(
  command: string,
  args: readonly string[],
  env: Record<string, string>,
  options: { readonly cwd?: string } = {},
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd ?? REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

export interface LogLine {
  readonly level: string;
  readonly msg: string;
  readonly [field: string]: unknown;
}

export interface SpawnOptions {
  /** A process group of its own, so a signal can go to the whole group as a terminal sends it. */
  readonly detached?: boolean;
  readonly cwd?: string;
  /**
   * PORT is one freePort() gave, on purpose: a test that kills a server and starts it again where
   * a client (a browser page) expects it. Any other test listens on 0.
   */
  readonly portFromFreePort?: boolean;
}

/** A long-running process whose stdout is JSON log lines. */
export class RunningProcess {
  readonly child: ChildProcess;
  readonly logs: LogLine[] = [];
  stderr = '';
  readonly #detached: boolean;
  readonly #waiters = new Set<() => void>();
  /** Resolves when every process writing to the pipes is gone (npm and its children included). */
  readonly closed: Promise<number | null>;

  constructor(command: string, args: readonly string[], env: Record<string, string>, options: SpawnOptions = {}) {
    if (options.portFromFreePort !== true) assertFreePorts(args, env);
    this.#detached = options.detached === true;
    this.child = spawn(command, args, {
      cwd: options.cwd ?? REPO_ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: this.#detached,
    });
    let partial = '';
    this.child.stdout?.on('data', (chunk: Buffer) => {
      const lines = (partial + chunk.toString()).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) {
        if (!line.startsWith('{')) continue;
        this.logs.push(JSON.parse(line) as LogLine);
      }
      for (const waiter of this.#waiters) waiter();
    });
    this.child.stderr?.on('data', (chunk) => {
      this.stderr += chunk;
    });
    this.closed = new Promise((resolve) => this.child.on('close', (code) => resolve(code)));
  }

  /** The first log line matching, waiting for it; fails if the process ends first. */
  waitForLog(match: (line: LogLine) => boolean): Promise<LogLine> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const found = this.logs.find(match);
        if (found) {
          this.#waiters.delete(check);
          resolve(found);
        }
      };
      this.#waiters.add(check);
      check();
      void this.closed.then(() => {
        if (this.#waiters.delete(check)) {
          reject(new Error(`process ended before the log line appeared; stderr: ${this.stderr}`));
        }
      });
    });
  }

  /** Sends a signal and resolves with the exit code and how long the process took to end. */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<{ code: number | null; ms: number }> {
    const started = performance.now();
    this.child.kill(signal);
    const code = await this.closed;
    return { code, ms: performance.now() - started };
  }

  /** The pid of the Taskgate process itself, from its log lines (npm, npx or a launcher may sit above it). */
  get taskgatePid(): number {
    const pid = this.logs.find((line) => typeof line.pid === 'number')?.pid;
    if (typeof pid !== 'number') throw new Error('no log line with a pid yet');
    return pid;
  }

  /** Signals every process of the group, as a terminal's Ctrl-C does; needs `detached`. */
  signalGroup(signal: NodeJS.Signals): void {
    if (!this.#detached || this.child.pid === undefined) throw new Error('signalGroup needs a detached process');
    process.kill(-this.child.pid, signal);
  }

  /** Test clean-up: SIGKILL to the process, its group and the Taskgate process it logged, if still there. */
  kill(): void {
    const pids = new Set<number>();
    for (const line of this.logs) if (typeof line.pid === 'number') pids.add(line.pid);
    this.child.kill('SIGKILL');
    if (this.#detached && this.child.pid !== undefined)
      ignoreMissing(() => process.kill(-(this.child.pid as number), 'SIGKILL'));
    for (const pid of pids) if (isRunning(pid)) ignoreMissing(() => process.kill(pid, 'SIGKILL'));
  }

  /** Resolves when the process ends, or rejects after `ms` naming what was still running. */
  async closedWithin(ms: number): Promise<number | null> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`still running after ${ms} ms; last log: ${JSON.stringify(this.logs.at(-1))}`)),
        ms,
      );
    });
    try {
      return await Promise.race([this.closed, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}

/**
 * A Taskgate process started by a test listens on ports the system picks (0). The defaults (8080)
 * would collide with anything else on a shared machine, another checkout's test run included.
 */
function assertFreePorts(args: readonly string[], env: Record<string, string>): void {
  if (!args.includes('start')) return;
  const role = args[args.indexOf('--role') + 1];
  const api = !args.includes('--role') || (role ?? '').split(',').includes('api');
  if (api && env.PORT !== '0')
    throw new Error(`a test's taskgate start must listen on PORT=0, not ${env.PORT ?? '8080 (the default)'}`);
  for (const [name, value] of Object.entries(env)) {
    if (name.endsWith('_PORT') && value !== '0')
      throw new Error(`a test's taskgate start must set ${name}=0, not ${value}`);
  }
}

function ignoreMissing(kill: () => void): void {
  try {
    kill();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
  }
}

/** Whether a pid names a live process (Linux /proc): a zombie waiting for its reaper does not count. */
export function isRunning(pid: number): boolean {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return false;
  }
  // "pid (comm) state …": comm may contain spaces and parentheses, so read after the last ')'.
  const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  return state !== 'Z' && state !== 'X';
}

/**
 * Whether a pid is gone within `ms`. An orphaned Taskgate's pipes close as it exits, a moment
 * before the kernel has it a zombie (files are closed before the exit is signalled), and on a
 * loaded machine a test reads /proc in that moment: gone within a bound, not at the instant
 * its pipes close. There is no event for another process's end, so this polls.
 */
export async function goneWithin(pid: number, ms: number): Promise<boolean> {
  const deadline = performance.now() + ms;
  while (isRunning(pid)) {
    if (performance.now() >= deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return true;
}

/** Whether a loopback TCP port can be bound now. */
export async function portIsFree(port: number): Promise<boolean> {
  const server = net.createServer();
  const free = await new Promise<boolean>((resolve) => {
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => resolve(true));
  });
  if (free) await new Promise((resolve) => server.close(resolve));
  return free;
}

export function startCli(
  args: readonly string[],
  env: Record<string, string>,
  options: SpawnOptions = {},
): RunningProcess {
  return new RunningProcess(process.execPath, [CLI, ...args], env, options);
}
