import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import {
  createKysely,
  createPool,
  type Database,
  ensureTaskQueue,
  type InstanceHeartbeat,
  instanceUpkeep,
  PGBOSS_SCHEMA,
  type SweeperSettings,
  TaskAnnouncer,
  type TaskSweeper,
} from '@taskgate/db';
import type { ToolRegistry } from '@taskgate/tools';
import type { Kysely } from 'kysely';
import type pg from 'pg';
import { PgBoss } from 'pg-boss';
import { LedgerService } from './ledger/ledger-service.ts';
import { TaskEventsHub } from './tasks/task-events-hub.ts';
import { type ClockCaps, TaskService } from './tasks/task-service.ts';

type LogFn = (fields: Record<string, unknown>, message: string) => void;

export interface TaskServicesOptions {
  readonly connectionString: string;
  readonly applicationName: string;
  readonly logger: { readonly info: LogFn; readonly warn: LogFn; readonly error: LogFn };
  readonly tools: ToolRegistry;
  /** Whether NOTIFY reaches this process (false on the embedded Postgres: watchers poll faster). */
  readonly listenNotify: boolean;
  readonly defaultTtlMs?: number;
  readonly idempotencyRetentionMs?: number;
  readonly clockCaps?: ClockCaps;
  /** This instance's id in `instances` and in its request-mode tasks (default api-<random>). */
  readonly instanceId?: string;
  readonly heartbeatIntervalMs?: number;
  /**
   * Run the task sweeper here (default true). A process that also runs a worker sweeps there, and
   * an API process with no worker must sweep itself: with no worker anywhere, only it can end a
   * call's task at the queue bound.
   */
  readonly sweep?: boolean;
  readonly sweeper?: SweeperSettings;
}

export interface TaskServices {
  readonly pool: pg.Pool;
  readonly db: Kysely<Database>;
  readonly service: TaskService;
  readonly ledger: LedgerService;
  readonly hub: TaskEventsHub;
  readonly heartbeat: InstanceHeartbeat;
  readonly sweeper: TaskSweeper | null;
  stop(): Promise<void>;
}

const DEFAULT_TTL_MS = 24 * 3600 * 1000;

/**
 * What every front door (the HTTP API, MCP over stdio) needs to accept calls: a pool, a send-only
 * pg-boss, the events hub, and the services over them.
 */
export async function openTaskServices(options: TaskServicesOptions): Promise<TaskServices> {
  const pool = createPool(options.connectionString, { applicationName: options.applicationName, max: 10 });
  const db = createKysely(pool);
  const boss = new PgBoss({
    connectionString: options.connectionString,
    schema: PGBOSS_SCHEMA,
    application_name: options.applicationName,
    migrate: false,
    supervise: false,
    schedule: false,
    max: 2,
  });
  boss.on('error', (error) => options.logger.error({ error: error.message }, 'pg-boss error'));
  const hub = new TaskEventsHub({
    connectionString: options.connectionString,
    listen: options.listenNotify,
    logger: options.logger,
  });
  const announcer = new TaskAnnouncer(db, { logger: options.logger });
  const instanceId = options.instanceId ?? `api-${randomUUID().slice(0, 8)}`;
  // Request-mode tasks name this instance: if it is lost, a sweeper cancels them (nobody is left
  // to answer their callers).
  const upkeep = instanceUpkeep({
    db,
    announcer,
    identity: { id: instanceId, kind: 'api', host: hostname(), pid: process.pid },
    logger: options.logger,
    ...(options.heartbeatIntervalMs === undefined ? {} : { heartbeatIntervalMs: options.heartbeatIntervalMs }),
    ...(options.sweep === undefined ? {} : { sweep: options.sweep }),
    ...(options.sweeper ? { sweeper: options.sweeper } : {}),
  });
  const stop = async () => {
    await Promise.allSettled([hub.stop(), boss.stop({ graceful: false, close: true }), upkeep.stop()]);
    await announcer.settled();
    await db.destroy();
  };
  try {
    await boss.start();
    // Also warms pg-boss's queue cache: sending inside a task's transaction must not need a second
    // connection (on the embedded Postgres that would wait for the transaction itself).
    await ensureTaskQueue(boss);
    await hub.start();
    await upkeep.start();
  } catch (error) {
    await stop();
    throw error;
  }
  const service = new TaskService({
    db,
    boss,
    announcer,
    tools: options.tools,
    defaultTtlMs: options.defaultTtlMs ?? DEFAULT_TTL_MS,
    pollIntervalMs: options.listenNotify ? 1_000 : 500,
    instanceId,
    ...(options.idempotencyRetentionMs === undefined ? {} : { idempotencyRetentionMs: options.idempotencyRetentionMs }),
    ...(options.clockCaps ? { clockCaps: options.clockCaps } : {}),
  });
  const ledger = new LedgerService(db);
  return { pool, db, service, ledger, hub, heartbeat: upkeep.heartbeat, sweeper: upkeep.sweeper, stop };
}
