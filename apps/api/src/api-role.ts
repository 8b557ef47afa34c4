import { readMetricsSnapshot, workSucceededWithin } from '@taskgate/db';
import { TaskgateError } from '@taskgate/errors';
import { processMetrics } from '@taskgate/metrics';
import type { ToolModule, ToolRegistry } from '@taskgate/tools';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { ConsoleSessions } from './console/console-sessions.ts';
import { type CheckState, RECENT_WORK_MS, type ReadinessReport, readinessReport } from './health-routes.ts';
import { createAuthenticator } from './http/auth.ts';
import { createTokenVerifier, type OAuthSettings } from './http/oauth/token-verifier.ts';
import { databaseSessionStore } from './mcp/transports/http/handshake-sessions.ts';
import { createApiServer } from './server.ts';
import { openTaskServices, type TaskServices } from './task-services.ts';
import type { ClockCaps } from './tasks/task-service.ts';

export type { CheckState };

export interface ApiRoleOptions {
  readonly connectionString: string;
  readonly logger: FastifyBaseLogger;
  readonly host: string;
  readonly port: number;
  readonly tokens: ReadonlyMap<string, string>;
  /** TASKGATE_OPERATOR_TOKENS: act for the tenant each request names (REST and the console only). */
  readonly operatorTokens?: ReadonlySet<string>;
  readonly unauthenticatedTenant: string;
  /** TASKGATE_OAUTH_*: accept access tokens from this issuer too (null: static tokens only). */
  readonly oauth?: OAuthSettings | null;
  /** TASKGATE_METRICS_TOKEN: what a scraper sends to /metrics. */
  readonly metricsToken?: string | null;
  /** The modules loaded here: their inline tools run in this process (TaskServicesOptions.localTools). */
  readonly localTools?: ToolRegistry;
  /** The loaded tool modules: their routes are served under /v1. */
  readonly modules?: readonly ToolModule[];
  /** TASKGATE_CATALOG_WINDOW_MS. */
  readonly catalogWindowMs?: number;
  readonly catalogPollIntervalMs?: number;
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
  /** TASKGATE_REQUEST_TIMEOUT_MS. */
  readonly requestTimeoutMs?: number;
  /** Other roles' states and the process's shutdown flag, for /readyz. */
  readonly checks: () => Record<string, CheckState>;
  readonly stopping: () => boolean;
  /** Run the task sweeper in this role (default true; off when a worker in this process sweeps). */
  readonly sweep?: boolean;
  /** TASKGATE_MAX_QUEUE_MS. */
  readonly maxQueueMs?: number;
  /**
   * How long requests in flight get to finish once stop() begins (TASKGATE_SHUTDOWN_GRACE_MS,
   * default 3 s); then their connections are closed, which cancels a waiting call's request-mode
   * task as any closed stream does.
   */
  readonly graceMs?: number;
}

/** How long idempotency keys are remembered after their call committed, unless configured. */
const DEFAULT_IDEMPOTENCY_RETENTION_MS = 24 * 60 * 60 * 1000;

export interface ApiRole {
  readonly url: string;
  readonly app: FastifyInstance;
  stop(): Promise<void>;
}

/**
 * The API role built but not yet listening: its services are open and every route is registered,
 * a module's included, so a route that fails to register has failed before the caller starts
 * anything else (the worker role, which would otherwise already be claiming tasks).
 */
export interface PreparedApiRole {
  /** Starts listening; the returned role's stop() closes everything, as a failed listen does itself. */
  listen(): Promise<ApiRole>;
  /** Closes what prepare opened, for a start-up that ends before listen. */
  discard(): Promise<void>;
}

/** The API process role: the HTTP server and what it needs (a pool, a send-only pg-boss, the events hub). */
export async function startApiRole(options: ApiRoleOptions): Promise<ApiRole> {
  return (await prepareApiRole(options)).listen();
}

export async function prepareApiRole(options: ApiRoleOptions): Promise<PreparedApiRole> {
  const services = await openTaskServices({
    connectionString: options.connectionString,
    applicationName: 'taskgate-api',
    sessionSignals: true,
    logger: options.logger,
    ...(options.localTools ? { localTools: options.localTools } : {}),
    ...(options.catalogWindowMs === undefined ? {} : { catalogWindowMs: options.catalogWindowMs }),
    ...(options.catalogPollIntervalMs === undefined ? {} : { catalogPollIntervalMs: options.catalogPollIntervalMs }),
    listenNotify: options.listenNotify,
    ...(options.defaultTtlMs === undefined ? {} : { defaultTtlMs: options.defaultTtlMs }),
    ...(options.idempotencyRetentionMs === undefined ? {} : { idempotencyRetentionMs: options.idempotencyRetentionMs }),
    ...(options.clockCaps ? { clockCaps: options.clockCaps } : {}),
    ...(options.sweep === undefined ? {} : { sweep: options.sweep }),
    ...(options.maxQueueMs === undefined ? {} : { sweeper: { maxQueueMs: options.maxQueueMs } }),
  });
  // The database-wide gauges of /metrics, from this role's pool while it runs.
  const unwatch = processMetrics().watchDatabase(() => readMetricsSnapshot(services.db));
  const cleanup = async () => {
    unwatch();
    await services.stop();
  };
  const consoleSessions = new ConsoleSessions(services.db);
  let app: FastifyInstance;
  try {
    app = await createApiServer({
      logger: options.logger,
      readiness: () => readiness(services, options),
      ...(options.requestTimeoutMs === undefined ? {} : { requestTimeoutMs: options.requestTimeoutMs }),
      tasks: {
        service: services.service,
        ledger: services.ledger,
        db: services.db,
        hub: services.hub,
        ...(options.modules
          ? {
              modules: {
                loaded: options.modules,
                db: services.db,
                idempotencyRetentionMs: options.idempotencyRetentionMs ?? DEFAULT_IDEMPOTENCY_RETENTION_MS,
              },
            }
          : {}),
        auth: createAuthenticator({
          tokens: options.tokens,
          ...(options.operatorTokens ? { operatorTokens: options.operatorTokens } : {}),
          unauthenticatedTenant: options.unauthenticatedTenant,
          oauth: options.oauth ? { settings: options.oauth, verifier: createTokenVerifier(options.oauth) } : null,
          metricsToken: options.metricsToken ?? null,
          sessions: consoleSessions,
        }),
        consoleSessions,
        events: { pollMs: options.listenNotify ? 1_000 : 250 },
        mcp: {
          tools: services.tools,
          requestStateKey: services.requestStateKey,
          contentWatches: services.contentWatches,
          // The modules' resources and prompts are read here, in the request, like inline tools.
          ...(options.modules ? { content: options.modules.map((module) => module.content ?? {}) } : {}),
          allowedOrigins: options.allowedOrigins ?? [],
          loopbackOnly: isLoopback(options.host),
          ...(options.clockCaps ? { clockCaps: options.clockCaps } : {}),
          ...(options.mcpSseAfterMs === undefined ? {} : { sseAfterMs: options.mcpSseAfterMs }),
          ...(options.mcpTaskAfterMs === undefined ? {} : { taskAfterMs: options.mcpTaskAfterMs }),
          ...(options.graceMs === undefined ? {} : { shutdownGraceMs: options.graceMs }),
          // Sessions in Postgres: any API instance serves any session, across restarts.
          sessions: databaseSessionStore(services.db),
          ...(services.sessionSignals ? { signals: services.sessionSignals } : {}),
        },
      },
    });
    // Plugins load lazily: ready() is where a module's route plugin runs, and fails.
    await app.ready();
  } catch (error) {
    await cleanup();
    throw error;
  }
  return {
    discard: async () => {
      await app.close();
      await cleanup();
    },
    listen: async () => {
      // Read the catalog again first: a worker of this process published its tools after prepare
      // read it, and a client told "started" must find them (embedded, no NOTIFY would say so).
      await services.catalog.refresh();
      let url: string;
      try {
        url = await app.listen({ host: options.host, port: options.port });
      } catch (error) {
        await app.close().catch(() => {});
        await cleanup();
        throw new TaskgateError(
          'TG_STARTUP_FAILED',
          `the API could not listen on ${options.host}:${options.port}: ${(error as Error).message}`,
          { cause: error },
        );
      }
      return {
        url,
        app,
        stop: async () => {
          const closing = app.close();
          // MCP calls are answered at the end of the grace period (mcp-route); a second later, whatever
          // still holds a connection is cut.
          const cut = setTimeout(() => app.server.closeAllConnections(), (options.graceMs ?? 3_000) + 1_000);
          try {
            await closing;
          } finally {
            clearTimeout(cut);
          }
          await cleanup();
        },
      };
    },
  };
}

function readiness(services: TaskServices, options: ApiRoleOptions): Promise<ReadinessReport> {
  // Without its LISTEN connection the API still answers (every wait polls), but slower: a load
  // balancer should prefer an instance that hears notifications, until this one has reconnected.
  const listening = services.hub.connected;
  return readinessReport({
    roles: options.checks(),
    stopping: options.stopping(),
    database: services.pool,
    recentWork: () => workSucceededWithin(RECENT_WORK_MS),
    more: {
      // A view whose refreshes fail still answers with the last good catalog, which may list a
      // tool that is gone or miss a new one: likewise, an instance to avoid while others read it.
      catalog: services.catalog.failing ? 'failing' : 'ok',
      ...(listening === null ? {} : { notifications: listening ? 'ok' : 'failing' }),
    },
  });
}

/** Bound to loopback only: 127.0.0.0/8, ::1 or localhost (then /mcp also checks the Host header). */
function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127(\.\d{1,3}){3}$/.test(host);
}
