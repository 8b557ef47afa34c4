import { createKysely, createPool, type Database, ensureTaskQueue, PGBOSS_SCHEMA, TaskAnnouncer } from '@taskgate/db';
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
  readonly logger: { readonly warn: LogFn; readonly error: LogFn };
  readonly tools: ToolRegistry;
  /** Whether NOTIFY reaches this process (false on the embedded Postgres: watchers poll faster). */
  readonly listenNotify: boolean;
  readonly defaultTtlMs?: number;
  readonly idempotencyRetentionMs?: number;
  readonly clockCaps?: ClockCaps;
}

export interface TaskServices {
  readonly pool: pg.Pool;
  readonly db: Kysely<Database>;
  readonly service: TaskService;
  readonly ledger: LedgerService;
  readonly hub: TaskEventsHub;
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
  const stop = async () => {
    await Promise.allSettled([hub.stop(), boss.stop({ graceful: false, close: true })]);
    await announcer.settled();
    await db.destroy();
  };
  try {
    await boss.start();
    // Also warms pg-boss's queue cache: sending inside a task's transaction must not need a second
    // connection (on the embedded Postgres that would wait for the transaction itself).
    await ensureTaskQueue(boss);
    await hub.start();
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
    ...(options.idempotencyRetentionMs === undefined ? {} : { idempotencyRetentionMs: options.idempotencyRetentionMs }),
    ...(options.clockCaps ? { clockCaps: options.clockCaps } : {}),
  });
  const ledger = new LedgerService(
    db,
    options.idempotencyRetentionMs === undefined ? {} : { idempotencyRetentionMs: options.idempotencyRetentionMs },
  );
  return { pool, db, service, ledger, hub, stop };
}
