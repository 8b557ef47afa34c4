import {
  ensureTaskQueue,
  insertTasks,
  LEGACY_TASK_QUEUE,
  listTaskEvents,
  type TaskJobData,
  type TaskRecord,
  toolQueue,
} from '@taskgate/db';
import { defineTool } from '@taskgate/sdk';
import { ToolRegistry } from '@taskgate/tools';
import { startWorkerRole, type WorkerRole } from '@taskgate/worker';
import { sql } from 'kysely';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { barrier, type Platform, silentLogger, startPlatform, waitForTask } from '../support/task-platform.ts';

// Routing by queue: every tool has its pg-boss queue, and a worker fetches only the queues of the
// tools it serves. Two workers of one process on one database, serving different tools, stand in
// for two deployments (test/cli/split-deployment.test.ts runs them as real processes).
const database = useTestDatabase();
const TENANT = 'acme';

const quick = (name: string) =>
  defineTool<{ n?: number }>({
    name,
    description: `answers at once (${name})`,
    inputSchema: { type: 'object', properties: { n: { type: 'number' } } },
    retry: 'safe',
    async handler({ n }) {
      return { content: [{ type: 'text', text: `${name} ${n ?? 0}` }] };
    },
  });

/** Held at a barrier until the test lets it go; counts how many run at once. */
const gate = { release: barrier(), running: 0, most: 0, started: 0 };
const held = defineTool<{ n?: number }>({
  name: 'held_job',
  description: 'waits for the test',
  inputSchema: { type: 'object', properties: { n: { type: 'number' } } },
  retry: 'safe',
  async handler() {
    gate.started += 1;
    gate.running += 1;
    gate.most = Math.max(gate.most, gate.running);
    await gate.release.promise;
    gate.running -= 1;
    return { content: [] };
  },
});

const alpha = quick('route_alpha');
const beta = quick('route_beta');
let platform: Platform;
const workers: WorkerRole[] = [];

beforeAll(async () => {
  platform = await startPlatform(database.url, { tools: [alpha, beta, held] as never });
});
afterEach(async () => {
  for (const worker of workers.splice(0)) await worker.stop();
});
afterAll(async () => {
  await platform.stop();
});

function startWorker(tools: readonly unknown[], options: Partial<Parameters<typeof startWorkerRole>[0]> = {}) {
  return startWorkerRole({
    connectionString: database.url,
    logger: silentLogger,
    tools: new ToolRegistry(tools as never),
    graceMs: 1_000,
    listenNotify: true,
    concurrency: 4,
    ...options,
  }).then((worker) => {
    workers.push(worker);
    return worker;
  });
}

const create = (tool: string, n = 0) => platform.service.create(TENANT, { tool, arguments: { n } });
const ended = (task: TaskRecord) =>
  waitForTask(
    () => platform.service.get(TENANT, task.id),
    (current) => current.status !== 'working',
  );

/** The workers that started an attempt of the task, from its history. */
async function ranOn(task: TaskRecord): Promise<string[]> {
  return (await listTaskEvents(platform.db, TENANT, task.id))
    .filter((event) => event.type === 'attempt_started')
    .map((event) => (event.data as { worker: string }).worker);
}

describe('routing by tool', () => {
  it("sends each task to its tool's queue, and a worker never claims another tool's job", async () => {
    const a = await startWorker([alpha], { workerId: 'worker-alpha' });
    const betas = [await create('route_beta', 1), await create('route_beta', 2)];
    // Created after the beta tasks and run by the alpha worker: proof that it has fetched since
    // the beta jobs were queued, and left them alone.
    const first = await ended(await create('route_alpha', 1));
    expect(first.status).toBe('completed');
    expect(await ranOn(first)).toEqual(['worker-alpha']);
    for (const task of betas) {
      expect(await platform.service.get(TENANT, task.id)).toMatchObject({ status: 'working', startedAt: null });
      const [job] = await platform.boss.findJobs<TaskJobData>(toolQueue('route_beta'), { id: task.id });
      expect(job?.state).toBe('created');
    }
    // Even told of work in every queue, it fetches only its own.
    a.pump.wake();
    expect((await ended(await create('route_alpha', 2))).status).toBe('completed');
    expect((await platform.service.get(TENANT, betas[0]?.id as string)).startedAt).toBeNull();

    await startWorker([beta], { workerId: 'worker-beta' });
    for (const task of betas) {
      expect((await ended(task)).status).toBe('completed');
      expect(await ranOn(task)).toEqual(['worker-beta']);
    }
  });

  it('keeps a tool under its own concurrency while the worker runs other tools beside it', async () => {
    gate.release = barrier();
    Object.assign(gate, { running: 0, most: 0, started: 0 });
    const slow = await Promise.all([1, 2, 3, 4, 5].map((n) => create('held_job', n)));
    const quickOnes = await Promise.all([1, 2, 3].map((n) => create('route_alpha', n)));
    const worker = await startWorker([held, alpha], {
      concurrency: 4,
      toolConcurrency: new Map([['held_job', 2]]),
    });
    // Two held jobs take their two slots; the other two slots run every quick task meanwhile.
    for (const task of quickOnes) expect((await ended(task)).status).toBe('completed');
    await waitForTask(
      async () => gate.running,
      (running) => running === 2,
    );
    expect(worker.pump.runningIn(toolQueue('held_job'))).toBe(2);
    const unstarted = await sql<{ count: number }>`
      SELECT count(*)::int AS count FROM tasks WHERE tool = 'held_job' AND started_at IS NULL`.execute(platform.db);
    expect(unstarted.rows[0]?.count).toBe(3);
    gate.release.resolve();
    for (const task of slow) expect((await ended(task)).status).toBe('completed');
    expect([gate.most, gate.started]).toEqual([2, 5]);
  });
});

describe('the legacy single queue', () => {
  it("runs the tasks an upgrade left in it, each moved to its tool's queue (a worker of any tool moves them)", async () => {
    // As the release before per-tool queues left them: the queue, task rows, and their jobs in it.
    await ensureTaskQueue(platform.boss, LEGACY_TASK_QUEUE);
    const tasks = await platform.announcer.transaction(platform.db, (writer) =>
      insertTasks(
        writer,
        ['route_alpha', 'route_beta'].map((tool) => ({
          tenantId: TENANT,
          tool,
          arguments: { n: 7 },
          mode: 'task' as const,
          ttlMs: 3_600_000,
          pollIntervalMs: 500,
          idleTimeoutMs: null,
          maxTimeoutMs: null,
        })),
      ),
    );
    await platform.boss.insert(
      LEGACY_TASK_QUEUE,
      tasks.map((task) => ({ id: task.id, data: { taskId: task.id, tenantId: TENANT } })),
    );
    const [alphaTask, betaTask] = tasks as [TaskRecord, TaskRecord];

    // An alpha worker runs the alpha task, and moves the beta task's job to the beta queue.
    await startWorker([alpha], { workerId: 'worker-upgraded' });
    expect((await ended(alphaTask)).status).toBe('completed');
    await waitForTask(
      () => platform.boss.findJobs(toolQueue('route_beta'), { id: betaTask.id }),
      (jobs) => jobs.length === 1,
    );
    expect(await platform.boss.findJobs(LEGACY_TASK_QUEUE, { id: betaTask.id })).toEqual([]);
    expect((await platform.service.get(TENANT, betaTask.id)).startedAt).toBeNull();

    await startWorker([beta]);
    expect((await ended(betaTask)).status).toBe('completed');
    expect(await platform.boss.findJobs(LEGACY_TASK_QUEUE, {})).toEqual([]);
  });
});
