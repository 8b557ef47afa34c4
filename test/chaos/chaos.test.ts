import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { INVARIANTS } from './invariant.ts';
import type { ChaosResult } from './report.ts';
import { REPO_ROOT } from './taskgate-process.ts';

// The short fault suite: the harness of `npm run chaos` for 60 s of faults at intensity 1.5, with
// every call bounded at 20 s so quiescence is quick, against its own Postgres and 7 processes.
// It runs as a child process (the same command a person runs) and must end within 170 s. CHAOS_SEED
// replays a failed run's schedule.
const RUN_BOUND_MS = 170_000;
const resultFile = path.join(os.tmpdir(), `taskgate-chaos-ci-${process.pid}.json`);
const seed = process.env.CHAOS_SEED ?? String(Math.floor(Math.random() * 2_147_483_647) + 1);
let result: ChaosResult;
let output = '';

beforeAll(async () => {
  const args = [
    path.join(REPO_ROOT, 'test/chaos/run.ts'),
    ...['--seconds', '60', '--intensity', '1.5', '--clients', '8', '--seed', seed],
    ...['--max-call-ms', '20000', '--quiesce-ms', '45000', '--drain-ms', '20000', '--json', resultFile],
  ];
  const child = spawn(process.execPath, args, { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout.on('data', (chunk) => {
    output += chunk;
  });
  child.stderr.on('data', (chunk) => {
    output += chunk;
  });
  // The harness cleans up after itself on SIGTERM (its processes, its Postgres, its temp dir).
  const overrun = setTimeout(() => child.kill('SIGTERM'), RUN_BOUND_MS);
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  clearTimeout(overrun);
  if (!fs.existsSync(resultFile))
    throw new Error(`the chaos run (seed ${seed}) ended with ${code} and no result:\n${output}`);
  result = JSON.parse(fs.readFileSync(resultFile, 'utf8')) as ChaosResult;
  fs.rmSync(resultFile, { force: true });
}, RUN_BOUND_MS + 10_000);

describe(`the short chaos run (seed ${seed})`, () => {
  it('injected every kind of fault', () => {
    expect(result.kills.SIGKILL, output).toBeGreaterThan(0);
    expect(result.kills.SIGTERM, output).toBeGreaterThan(0);
    expect(result.postgresRestarts, output).toBeGreaterThan(0);
    expect(result.postgresOutages, output).toBeGreaterThan(0);
    expect(result.backendStorms, output).toBeGreaterThan(0);
    expect(result.poolExhaustions + result.rowLocks, output).toBeGreaterThan(0);
    expect(result.rollingRestarts, output).toBeGreaterThan(0);
    expect(result.recoveryMs.length + result.recoveryTimeouts).toBe(result.postgresRestarts);
  });

  it('ran a workload that reached quiescence', () => {
    expect(result.tasks).toBeGreaterThan(100);
    expect(result.quiescenceMs, output).not.toBeNull();
    expect(result.drainMs, output).not.toBeNull();
  });

  it.each(Object.values(INVARIANTS))('%s', (name) => {
    const invariant = result.invariants.find((candidate) => candidate.name === name);
    expect(invariant, `no result for ${name}`).toBeDefined();
    expect(
      invariant?.pass,
      `${invariant?.summary}\n${invariant?.evidence.join('\n')}\n(replay: CHAOS_SEED=${seed}; the run's output:)\n${output}`,
    ).toBe(true);
  });
});
