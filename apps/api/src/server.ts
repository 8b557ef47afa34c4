import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { ToolRegistry } from '@taskgate/tools';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { type ReadinessProbe, registerHealthRoutes } from './health-routes.ts';
import type { TenantResolver } from './http/auth.ts';
import { registerOpenApi } from './http/openapi.ts';
import { installProblemHandlers } from './http/problem.ts';
import type { LedgerService } from './ledger/ledger-service.ts';
import { McpCore } from './mcp/mcp-core.ts';
import { registerMcpRoute } from './mcp/mcp-route.ts';
import { registerLedgerRoutes } from './routes/ledger-routes.ts';
import { ProblemSchema, TaskSchema } from './routes/task-schemas.ts';
import { registerTaskRoutes } from './routes/tasks-routes.ts';
import type { TaskEventsHub } from './tasks/task-events-hub.ts';
import type { ClockCaps, TaskService } from './tasks/task-service.ts';

export interface ApiServerOptions {
  readonly logger: FastifyBaseLogger;
  readonly readiness: ReadinessProbe;
  readonly version?: string;
  readonly tasks?: {
    readonly service: TaskService;
    readonly ledger: LedgerService;
    readonly hub: TaskEventsHub;
    readonly tenant: TenantResolver;
    readonly events?: { readonly keepaliveMs?: number; readonly pollMs?: number };
    /** POST /mcp: the tools the registry offers, guarded like ARCHITECTURE.md asks. */
    readonly mcp?: {
      readonly tools: ToolRegistry;
      readonly allowedOrigins: readonly string[];
      readonly loopbackOnly: boolean;
      readonly clockCaps?: ClockCaps;
      /** A tools/call still running after this long is answered as SSE (default 1 s). */
      readonly sseAfterMs?: number;
      /** A declaring client's call of a task-optional tool becomes a task after this long (500 ms). */
      readonly taskAfterMs?: number;
    };
  };
}

export const BODY_LIMIT_BYTES = 1024 * 1024;

/** The HTTP API: health, the /v1 REST API with its OpenAPI document, and (later) /mcp. */
export async function createApiServer(options: ApiServerOptions): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: options.logger,
    // Keep-alive connections that are idle are closed on shutdown; busy ones finish first.
    forceCloseConnections: 'idle',
    bodyLimit: BODY_LIMIT_BYTES,
    ajv: { customOptions: { removeAdditional: false, coerceTypes: 'array', useDefaults: true } },
  }).withTypeProvider<TypeBoxTypeProvider>();
  installProblemHandlers(app);
  // JSON only: anything else is 415, rather than a string body failing schema validation.
  app.removeContentTypeParser('text/plain');
  app.addSchema(TaskSchema);
  app.addSchema(ProblemSchema);
  await registerOpenApi(app, options.version ?? '0.1.0');
  registerHealthRoutes(app, options.readiness);
  if (options.tasks) {
    registerTaskRoutes(app, {
      service: options.tasks.service,
      hub: options.tasks.hub,
      tenant: options.tasks.tenant,
      events: {
        keepaliveMs: options.tasks.events?.keepaliveMs ?? 15_000,
        pollMs: options.tasks.events?.pollMs ?? 1_000,
        capacity: 4,
      },
    });
    if (options.tasks.mcp) {
      registerMcpRoute(app, {
        core: new McpCore({
          service: options.tasks.service,
          hub: options.tasks.hub,
          tools: options.tasks.mcp.tools,
          server: { name: 'taskgate', version: options.version ?? '0.1.0' },
          pollMs: options.tasks.events?.pollMs ?? 1_000,
          ...(options.tasks.mcp.clockCaps ? { clockCaps: options.tasks.mcp.clockCaps } : {}),
          ...(options.tasks.mcp.taskAfterMs === undefined ? {} : { taskAfterMs: options.tasks.mcp.taskAfterMs }),
        }),
        tenant: options.tasks.tenant,
        server: { name: 'taskgate', version: options.version ?? '0.1.0' },
        allowedOrigins: options.tasks.mcp.allowedOrigins,
        loopbackOnly: options.tasks.mcp.loopbackOnly,
        ...(options.tasks.events?.keepaliveMs === undefined ? {} : { keepaliveMs: options.tasks.events.keepaliveMs }),
        ...(options.tasks.mcp.sseAfterMs === undefined ? {} : { sseAfterMs: options.tasks.mcp.sseAfterMs }),
      });
    }
    registerLedgerRoutes(app, {
      service: options.tasks.service,
      ledger: options.tasks.ledger,
      tenant: options.tasks.tenant,
    });
  }
  return app;
}
