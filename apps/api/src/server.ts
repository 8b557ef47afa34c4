import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Database, SessionSignals } from '@taskgate/db';
import { processMetrics, processTracing, type TaskgateMetrics } from '@taskgate/metrics';
import type { ContentSet, ToolCatalog, ToolModule } from '@taskgate/tools';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import { registerConsoleRoutes } from './console/console-routes.ts';
import type { ConsoleSessions } from './console/console-sessions.ts';
import { type ReadinessProbe, registerHealthRoutes } from './health-routes.ts';
import { type Authenticator, authenticateScope } from './http/auth.ts';
import { checkDecodedInput } from './http/decoded-input.ts';
import { installJsonBodyParser } from './http/json-body.ts';
import { registerProtectedResourceRoutes } from './http/oauth/protected-resource.ts';
import { registerOpenApi } from './http/openapi.ts';
import { clientErrorHandler, frameworkErrors, installProblemHandlers } from './http/problem.ts';
import { installRequestGuard } from './http/request-guards.ts';
import { RequestLog } from './http/request-log.ts';
import type { LedgerService } from './ledger/ledger-service.ts';
import { createMcpCore } from './mcp/core-assembly.ts';
import type { RemoteWatches } from './mcp/methods/remote-watches.ts';
import type { SessionStore } from './mcp/transports/http/handshake-sessions.ts';
import { registerMcpRoute } from './mcp/transports/http/mcp-route.ts';
import { registerMetricsRoute } from './metrics-route.ts';
import { registerModuleRoutes } from './modules/module-routes.ts';
import { registerRootRoute } from './root-route.ts';
import { registerElicitationRoutes } from './routes/elicitation-routes.ts';
import { registerInstanceRoutes } from './routes/instances-routes.ts';
import { registerOutboxRoutes } from './routes/outbox-routes.ts';
import { registerReconciliationRoutes } from './routes/reconciliation-routes.ts';
import { registerTaskDetailRoutes } from './routes/task-detail-routes.ts';
import { ProblemSchema, TaskSchema } from './routes/task-schemas.ts';
import { registerTaskRoutes } from './routes/tasks-routes.ts';
import { registerTenantRoutes } from './routes/tenants-routes.ts';
import { registerToolRoutes, ToolSchema } from './routes/tools-routes.ts';
import type { TaskEventsHub } from './tasks/task-events-hub.ts';
import type { ClockCaps, TaskService } from './tasks/task-service.ts';

export interface ApiServerOptions {
  readonly logger: FastifyBaseLogger;
  readonly readiness: ReadinessProbe;
  readonly version?: string;
  /** How long a request's headers and body may take to arrive (TASKGATE_REQUEST_TIMEOUT_MS). */
  readonly requestTimeoutMs?: number;
  /** What GET /metrics serves (default: the process's metrics). */
  readonly metrics?: TaskgateMetrics;
  readonly tasks?: {
    readonly service: TaskService;
    readonly ledger: LedgerService;
    /** The pool the operations routes read (/v1/instances). */
    readonly db: Kysely<Database>;
    readonly hub: TaskEventsHub;
    /** Who may call: static tokens, OAuth access tokens, or (loopback only) anyone. */
    readonly auth: Authenticator;
    /** Console sign-in sessions (null or absent: the console can be used only without tokens). */
    readonly consoleSessions?: ConsoleSessions | null;
    readonly events?: { readonly keepaliveMs?: number; readonly pollMs?: number };
    /** Tool modules whose routes this API serves under /v1 (with the pool their routes use). */
    readonly modules?: {
      readonly loaded: readonly ToolModule[];
      readonly db: Kysely<Database>;
      readonly idempotencyRetentionMs: number;
    };
    /** POST /mcp: the tools offered (the catalog), guarded like ARCHITECTURE.md asks. */
    readonly mcp?: {
      readonly tools: ToolCatalog;
      /** The resources, templates and prompts of the modules loaded here. */
      readonly content?: readonly ContentSet[];
      /** Subscriptions to the catalog's watched resources, for the workers serving them. */
      readonly contentWatches?: RemoteWatches;
      /** The key that signs requestState, the same on every instance (default: this process's own). */
      readonly requestStateKey?: Buffer;
      /** With loopbackOnly, these configure the DNS-rebinding guard of every route, not only /mcp. */
      readonly allowedOrigins: readonly string[];
      readonly loopbackOnly: boolean;
      readonly clockCaps?: ClockCaps;
      /** A tools/call still running after this long is answered as SSE (default 1 s). */
      readonly sseAfterMs?: number;
      /** A declaring client's call of a task-optional tool becomes a task after this long (500 ms). */
      readonly taskAfterMs?: number;
      /** Calls still running when the server closes are answered after this long (3 s). */
      readonly shutdownGraceMs?: number;
      /** Where handshake-revision sessions are kept (default: this process's memory). */
      readonly sessions?: SessionStore;
      /** How POSTed cancels and responses reach the instance holding their request (default: none). */
      readonly signals?: SessionSignals;
    };
  };
}

export const BODY_LIMIT_BYTES = 1024 * 1024;

/** TASKGATE_REQUEST_TIMEOUT_MS's default: a 1 MiB body at 35 KB/s still arrives in time. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;

/**
 * Node's bound on receiving a request (headers and body), which Fastify sets to 0 — none — by
 * default: a client that sends `Content-Length: 100` and 10 bytes held its socket and request for
 * ever. Node checks the bound every `connectionsCheckingInterval` (30 s by default, so a request
 * could wait twice its bound), hence a tenth of the bound, between 10 ms and 1 s. A request past
 * it is the clientError ERR_HTTP_REQUEST_TIMEOUT, answered 408 TG_REQUEST_TIMEOUT (problem.ts).
 */
export function requestTimeoutOptions(requestTimeoutMs: number) {
  const connectionsCheckingInterval = Math.max(10, Math.min(1_000, Math.floor(requestTimeoutMs / 10)));
  return {
    requestTimeout: requestTimeoutMs,
    http: {
      // request-guards.ts answers a missing Host itself, as problem+json (Node's is a bare 400).
      requireHostHeader: false,
      requestTimeout: requestTimeoutMs,
      headersTimeout: Math.min(60_000, requestTimeoutMs),
      connectionsCheckingInterval,
    },
  };
}

/**
 * Fastify's ajv, strict: no coercion (Fastify's default `coerceTypes: 'array'` made `true` a 1,
 * `"100"` a 100 and `null` a 0), no defaults filled in, nothing removed. A value is the type its
 * schema says or the request is 400; query strings are text and their schemas say so.
 */
export const AJV_OPTIONS = { removeAdditional: false, coerceTypes: false, useDefaults: false } as const;

/** The HTTP API: health, the /v1 REST API with its OpenAPI document, and (later) /mcp. */
export async function createApiServer(options: ApiServerOptions): Promise<FastifyInstance> {
  const metrics = options.metrics ?? processMetrics();
  const app = Fastify({
    loggerInstance: options.logger,
    // One line per request, with its outcome (http/request-log.ts), counted as it is logged.
    logController: new RequestLog({ durations: metrics.httpRequests }),
    // Keep-alive connections that are idle are closed on shutdown; busy ones finish first.
    forceCloseConnections: 'idle',
    bodyLimit: BODY_LIMIT_BYTES,
    ...requestTimeoutOptions(options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS),
    ajv: { customOptions: AJV_OPTIONS },
    frameworkErrors,
    clientErrorHandler,
  }).withTypeProvider<TypeBoxTypeProvider>();
  installProblemHandlers(app);
  // With tracing on, each request's server span is named by its route; off, no hook at all.
  const tracing = processTracing();
  if (tracing !== null) {
    app.addHook('onRequest', (request, _reply, done) => {
      const route = request.routeOptions.url;
      if (route !== undefined) tracing.nameRequestSpan(request.method, route);
      done();
    });
  }
  installRequestGuard(app, {
    allowedOrigins: options.tasks?.mcp?.allowedOrigins ?? [],
    loopbackOnly: options.tasks?.mcp?.loopbackOnly ?? false,
    acceptsUnauthenticated: options.tasks?.auth.acceptsUnauthenticated ?? false,
  });
  // JSON only: anything else is 415, rather than a string body failing schema validation.
  app.removeContentTypeParser('text/plain');
  installJsonBodyParser(app);
  app.addSchema(TaskSchema);
  app.addSchema(ProblemSchema);
  app.addSchema(ToolSchema);
  await registerOpenApi(app, options.version ?? '0.1.0');
  registerHealthRoutes(app, options.readiness);
  registerMetricsRoute(app, metrics, options.tasks?.auth ?? null);
  registerRootRoute(app, {
    name: 'taskgate',
    version: options.version ?? '0.1.0',
    links: {
      docs: '/docs',
      openapi: '/openapi.json',
      ...(options.tasks ? { console: '/ui', tasks: '/v1/tasks', tools: '/v1/tools' } : {}),
      ...(options.tasks?.mcp ? { mcp: '/mcp' } : {}),
      health: '/healthz',
      ready: '/readyz',
      metrics: '/metrics',
    },
  });
  const tasks = options.tasks;
  if (!tasks) return app;
  if (tasks.auth.oauth) registerProtectedResourceRoutes(app, tasks.auth.oauth);
  const server = { name: 'taskgate', version: options.version ?? '0.1.0' };
  await registerConsoleRoutes(app, { auth: tasks.auth, sessions: tasks.consoleSessions ?? null });
  // /v1: the tenant is resolved as the request arrives (401 before any 400, 413 or 415), and every
  // decoded value is checked before the schema runs.
  await app.register(async (v1) => {
    authenticateScope(v1, tasks.auth);
    checkDecodedInput(v1);
    registerTaskRoutes(v1, {
      service: tasks.service,
      hub: tasks.hub,
      events: {
        keepaliveMs: tasks.events?.keepaliveMs ?? 15_000,
        pollMs: tasks.events?.pollMs ?? 1_000,
        capacity: 4,
      },
    });
    registerTaskDetailRoutes(v1, { service: tasks.service });
    registerInstanceRoutes(v1, { db: tasks.db });
    registerTenantRoutes(v1, { db: tasks.db });
    registerOutboxRoutes(v1, { db: tasks.db });
    registerToolRoutes(v1, { tools: tasks.service.tools, db: tasks.db });
    registerReconciliationRoutes(v1, { ledger: tasks.ledger });
    if (tasks.modules) {
      await registerModuleRoutes(v1, tasks.modules.loaded, {
        db: tasks.modules.db,
        service: tasks.service,
        retentionMs: tasks.modules.idempotencyRetentionMs,
      });
    }
  });
  if (tasks.mcp) {
    const mcp = registerMcpRoute(app, {
      core: createMcpCore({
        service: tasks.service,
        hub: tasks.hub,
        tools: tasks.mcp.tools,
        ...(tasks.mcp.content ? { content: tasks.mcp.content } : {}),
        ...(tasks.mcp.contentWatches ? { contentWatches: tasks.mcp.contentWatches } : {}),
        ...(tasks.mcp.requestStateKey ? { requestStateKey: tasks.mcp.requestStateKey } : {}),
        server,
        pollMs: tasks.events?.pollMs ?? 1_000,
        logger: options.logger,
        ...(tasks.mcp.clockCaps ? { clockCaps: tasks.mcp.clockCaps } : {}),
        ...(tasks.mcp.taskAfterMs === undefined ? {} : { taskAfterMs: tasks.mcp.taskAfterMs }),
      }),
      auth: tasks.auth,
      server,
      ...(tasks.events?.keepaliveMs === undefined ? {} : { keepaliveMs: tasks.events.keepaliveMs }),
      ...(tasks.mcp.sseAfterMs === undefined ? {} : { sseAfterMs: tasks.mcp.sseAfterMs }),
      ...(tasks.mcp.shutdownGraceMs === undefined ? {} : { shutdownGraceMs: tasks.mcp.shutdownGraceMs }),
      ...(tasks.mcp.sessions ? { sessions: tasks.mcp.sessions } : {}),
      ...(tasks.mcp.signals ? { signals: tasks.mcp.signals } : {}),
    });
    // Beside /v1's other routes, authenticated the same way; it needs the MCP sessions above.
    await app.register(async (v1) => {
      authenticateScope(v1, tasks.auth);
      checkDecodedInput(v1);
      registerElicitationRoutes(v1, { complete: mcp.completeElicitation });
    });
  }
  return app;
}
