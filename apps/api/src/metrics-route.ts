import type { TaskgateMetrics } from '@taskgate/metrics';
import type { FastifyInstance } from 'fastify';

/**
 * GET /metrics: the process's metrics in the Prometheus text format (prom-client), unauthenticated
 * like /healthz so a scraper needs no tenant token; it names tools and counts, never tenants,
 * tasks or arguments. The database-wide gauges are read at each scrape, bounded by a statement
 * timeout; a database that does not answer still gets an answer (taskgate_metrics_database_up 0).
 */
export function registerMetricsRoute(app: FastifyInstance, metrics: TaskgateMetrics): void {
  app.get('/metrics', { logLevel: 'warn' }, async (_request, reply) => {
    const body = await metrics.scrape();
    reply.header('cache-control', 'no-store');
    return reply.type(metrics.contentType).send(body);
  });
}
