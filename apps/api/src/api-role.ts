import { createKysely, createPool, ensureTaskQueue, PGBOSS_SCHEMA } from '@taskgate/db';
import { TaskgateError } from '@taskgate/errors';
import type { ToolRegistry } from '@taskgate/tools';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type pg from 'pg';
import { PgBoss } from 'pg-boss';
import type { ReadinessReport } from './health-routes.ts';
import { bearerTenants } from './http/auth.ts';
import { LedgerService } from './ledger/ledger-service.ts';
import { createApiServer } from './server.ts';
import { TaskEventsHub } from './tasks/task-events-hub.ts';
import { TaskService } from './tasks/task-service.ts';

export type CheckState = ReadinessReport['checks'][string];

export interface ApiRoleOptions {
  readonly connectionString: string;
  readonly logger: FastifyBaseLogger;
  readonly host: string;
  readonly port: number;
  readonly tokens: ReadonlyMap<string, string>;
  readonly unauthenticatedTenant: string;
  readonly tools: ToolRegistry;
  /** Whether NOTIFY reaches this process (false on the embedded Postgres: watchers poll faster). */
  readonly listenNotify: boolean;
  readonly defaultTtlMs?: number;
  /** Browser origins allowed to call /mcp besides loopback ones. */
  readonly allowedOrigins?: readonly string[];
  /** How long idempotency keys are remembered after their call committed. */
  readonly idempotencyRetentionMs?: number;
  /** Other roles' states and the process's shutdown flag, for /readyz. */
  readonly checks: () => Record<string, CheckState>;
  readonly stopping: () => boolean;
}

export interface ApiRole {
  readonly url: string;
  readonly app: FastifyInstance;
  stop(): Promise<void>;
}

const DEFAULT_TTL_MS = 24 * 3600 * 1000;
const READINESS_QUERY_TIMEOUT_MS = 1_000;

/** The API process role: the HTTP server and what it needs (a pool, a send-only pg-boss, the events hub). */
export async function startApiRole(options: ApiRoleOptions): Promise<ApiRole> {
  const pool = createPool(options.connectionString, { applicationName: 'taskgate-api', max: 10 });
  const db = createKysely(pool);
  const boss = new PgBoss({
    connectionString: options.connectionString,
    schema: PGBOSS_SCHEMA,
    application_name: 'taskgate-api',
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
  const cleanup = async () => {
    await Promise.allSettled([hub.stop(), boss.stop({ graceful: false, close: true })]);
    await db.destroy();
  };
  let app: FastifyInstance;
  let url: string;
  try {
    await boss.start();
    // Also warms pg-boss's queue cache: sending inside a task's transaction must not need a second
    // connection (on the embedded Postgres that would wait for the transaction itself).
    await ensureTaskQueue(boss);
    await hub.start();
    const service = new TaskService({
      db,
      boss,
      tools: options.tools,
      defaultTtlMs: options.defaultTtlMs ?? DEFAULT_TTL_MS,
      pollIntervalMs: options.listenNotify ? 1_000 : 500,
      ...(options.idempotencyRetentionMs === undefined
        ? {}
        : { idempotencyRetentionMs: options.idempotencyRetentionMs }),
    });
    app = await createApiServer({
      logger: options.logger,
      readiness: () => readiness(pool, options),
      tasks: {
        service,
        ledger: new LedgerService(
          db,
          options.idempotencyRetentionMs === undefined
            ? {}
            : { idempotencyRetentionMs: options.idempotencyRetentionMs },
        ),
        hub,
        tenant: bearerTenants(options.tokens, options.unauthenticatedTenant),
        events: { pollMs: options.listenNotify ? 1_000 : 250 },
        mcp: {
          tools: options.tools,
          allowedOrigins: options.allowedOrigins ?? [],
          loopbackOnly: isLoopback(options.host),
        },
      },
    });
    try {
      url = await app.listen({ host: options.host, port: options.port });
    } catch (error) {
      throw new TaskgateError(
        'TG_STARTUP_FAILED',
        `the API could not listen on ${options.host}:${options.port}: ${(error as Error).message}`,
        { cause: error },
      );
    }
  } catch (error) {
    await cleanup();
    throw error;
  }
  return {
    url,
    app,
    stop: async () => {
      await app.close();
      await cleanup();
    },
  };
}

async function readiness(pool: pg.Pool, options: ApiRoleOptions): Promise<ReadinessReport> {
  const stopping = options.stopping();
  const checks: Record<string, CheckState> = {};
  for (const [name, state] of Object.entries(options.checks())) checks[name] = stopping ? 'stopping' : state;
  checks.database = (await databaseAnswers(pool)) ? 'ok' : 'failing';
  if (stopping) return { ready: false, reason: 'shutting down', checks };
  const notReady = Object.entries(checks).filter(([, state]) => state !== 'ok');
  if (notReady.length > 0) {
    return { ready: false, reason: notReady.map(([name, state]) => `${name} ${state}`).join(', '), checks };
  }
  return { ready: true, checks };
}

async function databaseAnswers(pool: pg.Pool): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), READINESS_QUERY_TIMEOUT_MS);
  });
  try {
    return await Promise.race([
      pool.query('SELECT 1').then(
        () => true,
        () => false,
      ),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Bound to loopback only: 127.0.0.0/8, ::1 or localhost (then /mcp also checks the Host header). */
function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127(\.\d{1,3}){3}$/.test(host);
}
