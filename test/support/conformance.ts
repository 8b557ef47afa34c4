import { spawn } from 'node:child_process';
import path from 'node:path';
import { cleanEnv, REPO_ROOT, type RunningProcess, startCli } from './cli.ts';
import { createTestDatabase, type TestDatabase } from './databases.ts';

/** The MCP conformance suite pinned in package.json, and its last stable release (an alias). */
export const CONFORMANCE_SUITE = path.join(REPO_ROOT, 'node_modules/@modelcontextprotocol/conformance/dist/index.js');
export const CONFORMANCE_SUITE_0_1_16 = path.join(REPO_ROOT, 'node_modules/conformance-v0-1-16/dist/index.js');

export interface ConformanceServer {
  /** The server's /mcp URL. */
  readonly url: string;
  stop(): Promise<void>;
}

/** `taskgate start` with TASKGATE_CONFORMANCE=1 on a database of its own. */
export async function startConformanceServer(): Promise<ConformanceServer> {
  const database: TestDatabase = await createTestDatabase({ empty: true });
  const taskgate: RunningProcess = startCli(
    ['start'],
    cleanEnv({ DATABASE_URL: database.url, PORT: '0', TASKGATE_CONFORMANCE: '1' }),
  );
  const base = (await taskgate.waitForLog((entry) => entry.msg === 'taskgate started')).url as string;
  return {
    url: `${base}/mcp`,
    stop: async () => {
      await taskgate.stop('SIGTERM');
      await database.drop();
    },
  };
}

/** One run of a suite's `server` command against `url`: its exit code and everything it printed. */
export function runConformance(
  suite: string,
  url: string,
  args: readonly string[],
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [suite, 'server', '--url', url, ...args], {
      cwd: REPO_ROOT,
      env: cleanEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk) => {
      output += chunk;
    });
    child.stderr.on('data', (chunk) => {
      output += chunk;
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, output }));
  });
}
