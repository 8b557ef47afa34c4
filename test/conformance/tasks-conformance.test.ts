import { spawn } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanEnv, REPO_ROOT, type RunningProcess, startCli } from '../support/cli.ts';
import { createTestDatabase, type TestDatabase } from '../support/databases.ts';

// The MCP conformance suite's Tasks-extension scenarios (@modelcontextprotocol/conformance, pinned in
// package.json) against `taskgate start` with TASKGATE_CONFORMANCE=1, one scenario per run of the
// suite's CLI, as docs/design/mcp-tasks-conformance.md describes: all ten. A scenario passes when the
// CLI exits 0 and reports no failed check.
const SUITE = path.join(REPO_ROOT, 'node_modules/@modelcontextprotocol/conformance/dist/index.js');
const SCENARIOS = [
  'tasks-lifecycle',
  'tasks-capability-negotiation',
  'tasks-wire-fields',
  'tasks-request-state-removal',
  'tasks-request-headers',
  'tasks-required-task-error',
  'tasks-status-notifications',
  'tasks-dispatch-and-envelope',
  'tasks-mrtr-input',
  'tasks-mrtr-composition',
];

let database: TestDatabase;
let taskgate: RunningProcess;
let url: string;
beforeAll(async () => {
  database = await createTestDatabase({ empty: true });
  taskgate = startCli(['start'], cleanEnv({ DATABASE_URL: database.url, PORT: '0', TASKGATE_CONFORMANCE: '1' }));
  url = (await taskgate.waitForLog((entry) => entry.msg === 'taskgate started')).url as string;
}, 60_000);
afterAll(async () => {
  await taskgate?.stop('SIGTERM');
  await database?.drop();
});

function runScenario(scenario: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    // Without --spec-version: with one, the suite skips extension scenarios and still exits 0.
    const child = spawn(process.execPath, [SUITE, 'server', '--url', `${url}/mcp`, '--scenario', scenario], {
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

describe('MCP conformance: Tasks extension scenarios', () => {
  it.each(SCENARIOS)('%s passes', { timeout: 60_000 }, async (scenario) => {
    const { code, output } = await runScenario(scenario);
    const summary = /Passed: (\d+)\/(\d+), (\d+) failed/.exec(output);
    expect(summary, output).not.toBeNull();
    expect({ code, failed: Number(summary?.[3]) }, output).toEqual({ code: 0, failed: 0 });
    // A scenario that ran no check at all (skipped) proves nothing, except the suite's own stub.
    if (scenario !== 'tasks-status-notifications') expect(Number(summary?.[2]), output).toBeGreaterThan(0);
  });
});
