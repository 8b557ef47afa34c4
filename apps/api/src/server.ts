import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { type ReadinessProbe, registerHealthRoutes } from './health-routes.ts';

export interface ApiServerOptions {
  readonly logger: FastifyBaseLogger;
  readonly readiness: ReadinessProbe;
}

/** The HTTP API. Later issues add /mcp and /v1 here; the process wiring stays in apps/cli. */
export function createApiServer(options: ApiServerOptions): FastifyInstance {
  const app = Fastify({
    loggerInstance: options.logger,
    // Keep-alive connections that are idle are closed on shutdown; busy ones finish first.
    forceCloseConnections: 'idle',
    bodyLimit: 1024 * 1024,
  });
  registerHealthRoutes(app, options.readiness);
  return app;
}
