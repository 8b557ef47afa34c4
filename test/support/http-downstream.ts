import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { REPO_ROOT } from './cli.ts';

const FIXTURES = {
  /** SDK v2, 2026-07-28 (and the 2025 revisions statelessly). */
  'per-request': path.join(REPO_ROOT, 'test/fixtures/downstream-http-server.ts'),
  /** SDK v1, the 2025 revisions with sessions. */
  handshake: path.join(REPO_ROOT, 'test/fixtures/downstream-http-handshake-server.ts'),
};

/**
 * An HTTP downstream fixture (the SDK v2 one of test/fixtures/downstream-http-server.ts, or the
 * 2025-era SDK v1 one of downstream-http-handshake-server.ts), as a process of its own (so a crash
 * is a real one), with its log file. `start()` again after `kill()` brings it back on the
 * same port: a downstream restarted under a gateway that holds its URL.
 */
export interface HttpDownstreamFixture {
  readonly url: string;
  readonly port: number;
  lines(): string[];
  kill(): Promise<void>;
  start(): Promise<void>;
  /** Resolves when the process has exited (a `crash` call ends it). */
  exited(): Promise<void>;
}

export async function startHttpDownstream(
  env: Record<string, string> = {},
  kind: keyof typeof FIXTURES = 'per-request',
): Promise<HttpDownstreamFixture> {
  const logFile = path.join(mkdtempSync(path.join(tmpdir(), 'tg-http-downstream-')), 'log');
  writeFileSync(logFile, '');
  let child: ChildProcess | null = null;
  let port = 0;
  let exit: Promise<void> = Promise.resolve();
  const launch = async () => {
    const process_ = spawn(process.execPath, [FIXTURES[kind]], {
      env: { ...process.env, ...env, DOWNSTREAM_LOG: logFile, PORT: String(port) },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    child = process_;
    exit = new Promise((resolve) => process_.once('exit', () => resolve()));
    port = await new Promise<number>((resolve, reject) => {
      let out = '';
      process_.stdout?.on('data', (chunk: Buffer) => {
        out += chunk.toString('utf8');
        const found = /listening (\d+)/.exec(out);
        if (found) resolve(Number(found[1]));
      });
      process_.once('exit', (code) =>
        reject(new Error(`the HTTP downstream fixture exited (${code}) before listening`)),
      );
    });
  };
  await launch();
  return {
    get url() {
      return `http://127.0.0.1:${port}/mcp`;
    },
    get port() {
      return port;
    },
    lines: () => readFileSync(logFile, 'utf8').split('\n').filter(Boolean),
    async kill() {
      if (child !== null && child.exitCode === null && child.signalCode === null) {
        child.kill('SIGKILL');
        await exit;
      }
    },
    start: launch,
    exited: () => exit,
  };
}
