import { TaskgateError } from '@taskgate/errors';
import type { ToolRegistry } from '@taskgate/tools';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type pg from 'pg';
import type { ReadinessReport } from './health-routes.ts';
import { bearerTenants } from './http/auth.ts';
import { createApiServer } from './server.ts';
import { openTaskServices, type TaskServices } from './task-services.ts';
import type { ClockCaps } from './tasks/task-service.ts';

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
  /** The server's ceiling on tools' idle and max clocks. */
  readonly clockCaps?: ClockCaps;
  /** An MCP tools/call still running after this long is answered as SSE. */
  readonly mcpSseAfterMs?: number;
  /** For a client with the Tasks extension, a call still running after this long becomes a task. */
  readonly mcpTaskAfterMs?: number;
  /** Other roles' states and the process's shutdown flag, for /readyz. */
  readonly checks: () => Record<string, CheckState>;
  readonly stopping: () => boolean;
  /** Run the task sweeper in this role (default true; off when a worker in this process sweeps). */
  readonly sweep?: boolean;
  /** TASKGATE_MAX_QUEUE_MS. */
  readonly maxQueueMs?: number;
}

export interface ApiRole {
  readonly url: string;
  readonly app: FastifyInstance;
  stop(): Promise<void>;
}

const READINESS_QUERY_TIMEOUT_MS = 1_000;

/** The API process role: the HTTP server and what it needs (a pool, a send-only pg-boss, the events hub). */
export async function startApiRole(options: ApiRoleOptions): Promise<ApiRole> {
  const services = await openTaskServices({
    connectionString: options.connectionString,
    applicationName: 'taskgate-api',
    logger: options.logger,
    tools: options.tools,
    listenNotify: options.listenNotify,
    ...(options.defaultTtlMs === undefined ? {} : { defaultTtlMs: options.defaultTtlMs }),
    ...(options.idempotencyRetentionMs === undefined ? {} : { idempotencyRetentionMs: options.idempotencyRetentionMs }),
    ...(options.clockCaps ? { clockCaps: options.clockCaps } : {}),
    ...(options.sweep === undefined ? {} : { sweep: options.sweep }),
    ...(options.maxQueueMs === undefined ? {} : { sweeper: { maxQueueMs: options.maxQueueMs } }),
  });
  const cleanup = () => services.stop();
  let app: FastifyInstance;
  let url: string;
  try {
    app = await createApiServer({
      logger: options.logger,
      readiness: () => readiness(services, options),
      tasks: {
        service: services.service,
        ledger: services.ledger,
        hub: services.hub,
        tenant: bearerTenants(options.tokens, options.unauthenticatedTenant),
        events: { pollMs: options.listenNotify ? 1_000 : 250 },
        mcp: {
          tools: options.tools,
          allowedOrigins: options.allowedOrigins ?? [],
          loopbackOnly: isLoopback(options.host),
          ...(options.clockCaps ? { clockCaps: options.clockCaps } : {}),
          ...(options.mcpSseAfterMs === undefined ? {} : { sseAfterMs: options.mcpSseAfterMs }),
          ...(options.mcpTaskAfterMs === undefined ? {} : { taskAfterMs: options.mcpTaskAfterMs }),
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

async function readiness(services: TaskServices, options: ApiRoleOptions): Promise<ReadinessReport> {
  const stopping = options.stopping();
  const checks: Record<string, CheckState> = {};
  for (const [name, state] of Object.entries(options.checks())) checks[name] = stopping ? 'stopping' : state;
  checks.database = (await databaseAnswers(services.pool)) ? 'ok' : 'failing';
  // Without its LISTEN connection the API still answers (every wait polls), but slower: a load
  // balancer should prefer an instance that hears notifications, until this one has reconnected.
  const listening = services.hub.connected;
  if (listening !== null) checks.notifications = listening ? 'ok' : 'failing';
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
