import { listTaskEvents, type TaskRecord } from '@taskgate/db';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { cleanEnv, type RunningProcess, startCli } from '../support/cli.ts';
import { useTestDatabase } from '../support/databases.ts';
import { type Platform, startPlatform, waitForTask } from '../support/task-platform.ts';

// Real worker processes (`taskgate start --role worker`), killed for real.
const database = useTestDatabase();
const TENANT = 'acme';
let platform: Platform;
const workers: RunningProcess[] = [];

beforeAll(async () => {
  platform = await startPlatform(database.url);
});
afterEach(async () => {
  // Each test starts from no workers: a survivor of the previous test would take its tasks.
  await Promise.all(workers.splice(0).map((worker) => worker.stop('SIGKILL')));
});
afterAll(async () => {
  await platform.stop();
});

async function startWorker(): Promise<{ process: RunningProcess; id: string }> {
  const process = startCli(
    ['start', '--role', 'worker', '--no-migrate'],
    cleanEnv({ DATABASE_URL: database.url, TASKGATE_SHUTDOWN_GRACE_MS: '3000' }),
  );
  workers.push(process);
  const started = await process.waitForLog((line) => line.msg === 'worker started');
  return { process, id: started.workerId as string };
}

const terminal = (task: TaskRecord) => ['completed', 'failed', 'cancelled'].includes(task.status);

/** The worker that started the given attempt, from the task's history. */
async function holderOf(taskId: string, attempt: number): Promise<string> {
  const history = await waitForTask(
    () => listTaskEvents(platform.db, TENANT, taskId),
    (events) => events.some((e) => e.type === 'attempt_started' && e.attempt === attempt),
    30_000,
  );
  const started = history.find((e) => e.type === 'attempt_started' && e.attempt === attempt);
  return (started?.data as { worker?: string } | undefined)?.worker ?? '';
}

describe('worker processes', () => {
  it('a worker SIGKILLed mid-task loses it to another worker, which finishes it; the attempt is recorded', async () => {
    const [a, b] = await Promise.all([startWorker(), startWorker()]);
    const task = await platform.service.create(TENANT, { tool: 'slow_compute', arguments: { seconds: 3 } });
    const first = await holderOf(task.id, 1);
    const victim = first === a.id ? a : b;
    const survivor = victim === a ? b : a;
    victim.process.child.kill('SIGKILL');
    await victim.process.closed;

    // pg-boss notices the missing heartbeat (10 s) and hands the job to the survivor.
    const done = await waitForTask(() => platform.service.get(TENANT, task.id), terminal, 60_000);
    expect(done).toMatchObject({ status: 'completed', attempt: 2 });
    const history = await listTaskEvents(platform.db, TENANT, task.id);
    expect(history.map((e) => [e.type, e.attempt, (e.data as { worker?: string } | null)?.worker ?? null])).toEqual([
      ['created', null, null],
      ['attempt_started', 1, victim.id],
      ['attempt_lost', 1, victim.id],
      ['attempt_started', 2, survivor.id],
      ['status_changed', 2, null],
    ]);
  }, 90_000);

  it('SIGTERM stops fetching, releases the running task at its next checkpoint, and another worker finishes it', async () => {
    const [a, b] = await Promise.all([startWorker(), startWorker()]);
    const task = await platform.service.create(TENANT, { tool: 'slow_compute', arguments: { seconds: 2 } });
    const first = await holderOf(task.id, 1);
    const leaving = first === a.id ? a : b;
    const staying = leaving === a ? b : a;

    const { code, ms } = await leaving.process.stop('SIGTERM');
    expect(code).toBe(0);
    // slow_compute checkpoints every 50 ms, so it is released long before the 3 s grace ends.
    expect(ms).toBeLessThan(3_000);
    expect(
      leaving.process.logs.some((line) => line.msg === 'grace period over: releasing the tasks still running'),
    ).toBe(false);

    const done = await waitForTask(() => platform.service.get(TENANT, task.id), terminal, 30_000);
    expect(done).toMatchObject({ status: 'completed', attempt: 2 });
    const history = await listTaskEvents(platform.db, TENANT, task.id);
    expect(history.map((e) => [e.type, e.attempt])).toEqual([
      ['created', null],
      ['attempt_started', 1],
      ['attempt_released', 1],
      ['attempt_started', 2],
      ['status_changed', 2],
    ]);
    expect(history[2]?.reason).toBe('task released: worker is shutting down');
    expect((history[3]?.data as { worker?: string } | undefined)?.worker).toBe(staying.id);
  }, 60_000);
});
