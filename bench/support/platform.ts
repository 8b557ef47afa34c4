import { TaskService } from '@taskgate/api';
import { createKysely, createPool, ensureTaskQueue, PGBOSS_SCHEMA } from '@taskgate/db';
import { builtinTools, type ToolDefinition, ToolRegistry } from '@taskgate/tools';
import { startWorkerRole, type WorkerRole } from '@taskgate/worker';
import { PgBoss } from 'pg-boss';

const quiet = { info: () => {}, warn: () => {}, error: () => {}, debug: () => {} };

/** The API's TaskService and a worker in this process, wired as `taskgate start` wires them. */
export async function taskgateInProcess(url: string, tools: readonly ToolDefinition<never>[], concurrency = 8) {
  const registry = new ToolRegistry([...builtinTools, ...tools]);
  const db = createKysely(createPool(url, { applicationName: 'taskgate-bench', max: 16 }));
  const boss = new PgBoss({
    connectionString: url,
    schema: PGBOSS_SCHEMA,
    migrate: false,
    supervise: false,
    schedule: false,
    max: 8,
  });
  boss.on('error', () => {});
  await boss.start();
  await ensureTaskQueue(boss);
  const service = new TaskService({ db, boss, tools: registry, defaultTtlMs: 3_600_000, pollIntervalMs: 1_000 });
  const worker: WorkerRole = await startWorkerRole({
    connectionString: url,
    logger: quiet,
    tools: registry,
    graceMs: 1_000,
    listenNotify: true,
    concurrency,
  });
  return {
    service,
    db,
    registry,
    async stop() {
      await worker.stop();
      await boss.stop({ graceful: false, close: true });
      await db.destroy();
    },
  };
}
