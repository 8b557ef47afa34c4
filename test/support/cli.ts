import { type ChildProcess, spawn } from 'node:child_process';
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
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { cwd: REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
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

/** A long-running process whose stdout is JSON log lines. */
export class RunningProcess {
  readonly child: ChildProcess;
  readonly logs: LogLine[] = [];
  stderr = '';
  readonly #waiters = new Set<() => void>();
  /** Resolves when every process writing to the pipes is gone (npm and its children included). */
  readonly closed: Promise<number | null>;

  constructor(command: string, args: readonly string[], env: Record<string, string>) {
    this.child = spawn(command, args, { cwd: REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
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
}

export function startCli(args: readonly string[], env: Record<string, string>): RunningProcess {
  return new RunningProcess(process.execPath, [CLI, ...args], env);
}
