import { mkdir, mkdtemp, readFile, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { findReconciliationItem, listTaskEvents, type TaskRecord } from '@taskgate/db';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanEnv, REPO_ROOT, type RunningProcess, startCli } from '../support/cli.ts';
import { useTestDatabase } from '../support/databases.ts';
import { type Platform, startPlatform, waitForTask } from '../support/task-platform.ts';

// The worst moment for an unsafe gateway call: its worker is SIGKILLed while the downstream runs
// it. The task must end once, failed, with a reconciliation item saying the outcome is unknown,
// and no other worker may send the call again. (The downstream, in a process group of its own,
// may finish the call after its gateway died, as any remote server would: that is why the
// outcome is unknown, and why it is an operator's to reconcile.)
const database = useTestDatabase();
const FIXTURE = path.join(REPO_ROOT, 'test/fixtures/downstream-stdio-server.ts');
// The API's unauthenticated loopback mode serves tenant `default`.
const TENANT = 'default';
let platform: Platform;
const workers: RunningProcess[] = [];
let module: { file: string; log: string };

beforeAll(async () => {
  platform = await startPlatform(database.url);
  const root = await mkdtemp(path.join(tmpdir(), 'taskgate-gateway-kill-'));
  await mkdir(path.join(root, 'node_modules', '@taskgate'), { recursive: true });
  await symlink(path.join(REPO_ROOT, 'packages/sdk'), path.join(root, 'node_modules/@taskgate/sdk'), 'dir');
  await writeFile(path.join(root, 'package.json'), JSON.stringify({ type: 'module' }));
  const log = path.join(root, 'downstream.log');
  await writeFile(log, '');
  const file = path.join(root, 'gateway.ts');
  await writeFile(
    file,
    [
      "import { defineGateway } from '@taskgate/sdk';",
      "export const name = 'kill-gateway';",
      'export const gateways = [',
      '  defineGateway({',
      "    name: 'fixture',",
      "    prefix: 'fx_',",
      `    stdio: { command: ${JSON.stringify(process.execPath)}, args: [${JSON.stringify(FIXTURE)}], env: { DOWNSTREAM_LOG: ${JSON.stringify(log)} } },`,
      '  }),',
      '];',
      '',
    ].join('\n'),
  );
  module = { file, log };
});
afterAll(async () => {
  await Promise.all(workers.map((worker) => worker.stop('SIGKILL')));
  await platform.stop();
});

async function startWorker(): Promise<{ process: RunningProcess; id: string }> {
  const process = startCli(
    ['start', '--role', 'worker', '--no-migrate', '--tools', module.file],
    cleanEnv({ DATABASE_URL: database.url, TASKGATE_SHUTDOWN_GRACE_MS: '3000' }),
  );
  workers.push(process);
  const started = await process.waitForLog((line) => line.msg === 'worker started');
  return { process, id: started.workerId as string };
}

const terminal = (task: TaskRecord) => ['completed', 'failed', 'cancelled'].includes(task.status);

describe('an unsafe gateway call whose worker is SIGKILLed mid-call', () => {
  it('ends failed once, with an unknown-outcome item, and is never sent again', async () => {
    const victim = await startWorker();
    // An API process that lists what the workers publish, as in a split deployment.
    const api = startCli(
      ['start', '--role', 'api', '--no-migrate'],
      cleanEnv({ DATABASE_URL: database.url, PORT: '0', TASKGATE_TOOLS: 'none' }),
    );
    workers.push(api);
    const url = (await api.waitForLog((line) => line.msg === 'taskgate started')).url as string;
    const created = await fetch(`${url}/v1/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ tool: 'fx_slow_echo', arguments: { text: 'charge', steps: 200 } }),
    });
    expect(created.status).toBe(201);
    const task = (await created.json()) as { id: string };
    const log = async () => (await readFile(module.log, 'utf8')).split('\n').filter(Boolean);
    await waitForTask(log, (lines) => lines.includes(`started ${task.id}`), 30_000);
    victim.process.child.kill('SIGKILL');
    await victim.process.closed;
    const survivor = await startWorker();
    // pg-boss notices the missing heartbeat and hands the job on; the survivor does not run an
    // unsafe tool's lost attempt again (the runner's rule for any unsafe tool; a retried attempt
    // would also find the call's irreversible step started and unrecorded, and stop there).
    const ended = await waitForTask(() => platform.service.get(TENANT, task.id), terminal, 60_000);
    expect(ended).toMatchObject({ status: 'failed', attempt: 2, error: { code: -32603 } });
    expect(ended.statusMessage).toContain('the outcome of the previous attempt is unknown');
    // The survivor spawned a downstream of its own; the call reached a downstream once only.
    expect((await log()).filter((line) => line === `started ${task.id}`)).toHaveLength(1);
    const { rows } = await sql<{ id: string }>`
      SELECT id::text AS id FROM reconciliation_items WHERE task_id = ${task.id}`.execute(platform.db);
    expect(rows).toHaveLength(1);
    expect(await findReconciliationItem(platform.db, TENANT, rows[0]?.id as string)).toMatchObject({
      kind: 'unknown_outcome',
      tool: 'fx_slow_echo',
    });
    const history = await listTaskEvents(platform.db, TENANT, task.id);
    const endings = history.filter(
      (event) => event.type === 'status_changed' && ['completed', 'failed', 'cancelled'].includes(event.toStatus ?? ''),
    );
    expect(endings).toHaveLength(1);
    expect(history.some((event) => event.type === 'attempt_lost')).toBe(true);
    expect(survivor.id).not.toBe(victim.id);
  }, 120_000);
});
