import type { TaskgateMetrics } from '@taskgate/metrics';
import type { FastifyInstance } from 'fastify';
import { type Authenticator, challengeOf } from './http/auth.ts';
import { sendProblem, toProblem } from './http/problem.ts';

/**
 * GET /metrics: the process's metrics in the Prometheus text format (prom-client). The figures
 * cover every tenant (they name tools and counts, never tenants, tasks or arguments), so a
 * tenant's token does not open them: with TASKGATE_METRICS_TOKEN or OAuth configured a scraper
 * sends that token or an access token with the metrics scope. It is open like /healthz only where
 * the API is (no tokens at all, loopback only): a server that asks callers for tokens refuses an
 * anonymous scrape even when no metrics token is configured. The database-wide gauges are read at
 * each scrape, bounded by a statement timeout; a database that does not answer still gets an
 * answer (taskgate_metrics_database_up 0).
 */
export function registerMetricsRoute(app: FastifyInstance, metrics: TaskgateMetrics, auth: Authenticator | null): void {
  app.get('/metrics', { logLevel: 'warn' }, async (request, reply) => {
    try {
      await auth?.authenticateMetrics(request);
    } catch (error) {
      const challenge = challengeOf(error);
      if (challenge === null) throw error;
      reply.header('www-authenticate', challenge);
      return sendProblem(reply, toProblem(error, request));
    }
    const body = await metrics.scrape();
    reply.header('cache-control', 'no-store');
    return reply.type(metrics.contentType).send(body);
  });
}
