import type { FastifyInstance } from 'fastify';

export interface ReadinessReport {
  readonly ready: boolean;
  /** Why not ready, for the operator reading /readyz; absent when ready. */
  readonly reason?: string;
  readonly checks: Readonly<Record<string, 'ok' | 'failing' | 'starting' | 'stopping'>>;
}

export type ReadinessProbe = () => Promise<ReadinessReport>;

/**
 * /healthz answers "is the process alive" and never touches the database, so a database outage
 * does not get healthy processes restarted. /readyz answers "should traffic come here": every role
 * started, the database answering, and not shutting down (503 as soon as SIGTERM arrives, so a load
 * balancer drains this instance before it stops).
 */
export function registerHealthRoutes(app: FastifyInstance, readiness: ReadinessProbe): void {
  app.get('/healthz', { logLevel: 'warn' }, async () => ({ status: 'ok' }));
  app.get('/readyz', { logLevel: 'warn' }, async (_request, reply) => {
    const report = await readiness();
    reply.header('cache-control', 'no-store');
    return reply.code(report.ready ? 200 : 503).send({
      status: report.ready ? 'ready' : 'not_ready',
      ...(report.reason ? { reason: report.reason } : {}),
      checks: report.checks,
    });
  });
}
