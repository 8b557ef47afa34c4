import { createHash, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { type CheckState, RECENT_WORK_MS, readinessReport } from '@taskgate/api';
import { createKysely, createPool, readMetricsSnapshot, workSucceededWithin } from '@taskgate/db';
import { TaskgateError } from '@taskgate/errors';
import { processMetrics } from '@taskgate/metrics';
import type { Logger } from './logger.ts';

export interface HealthServerOptions {
  readonly host: string;
  /** 0 picks a free one. */
  readonly port: number;
  readonly connectionString: string;
  /** The roles' states, as the API's /readyz reports them. */
  readonly checks: () => Record<string, CheckState>;
  readonly stopping: () => boolean;
  readonly logger: Logger;
  /**
   * TASKGATE_METRICS_TOKEN: /metrics here asks for it (null: open). An OAuth token is not
   * accepted on this port: the probe has no verifier, and a scraper of the probe is a service.
   */
  readonly metricsToken?: string | null;
  /**
   * Whether the process asks callers for tokens (TASKGATE_TOKENS or OAuth): then /metrics here is
   * not open either, as on the API's port; without a metrics token it answers 401 (default false).
   */
  readonly tokensRequired?: boolean;
}

export interface HealthServer {
  readonly url: string;
  stop(): Promise<void>;
}

/**
 * /healthz and /readyz for a process of any roles (TASKGATE_HEALTH_PORT). A worker or relay has no
 * HTTP server of its own, and a probe run as a separate command could only see the database, not
 * this process: whether its roles started, whether it is shutting down, whether its event loop
 * still answers. The answers are those of the API's routes (apps/api/src/health-routes.ts): /healthz
 * never touches the database, so an outage does not get live processes restarted; /readyz needs
 * every role started, the database answering and no shutdown under way.
 */
export async function startHealthServer(options: HealthServerOptions): Promise<HealthServer> {
  // One connection at most, opened at the first /readyz; the probe never competes with the roles.
  const pool = createPool(options.connectionString, { applicationName: 'taskgate-health', max: 1, probe: true });
  // /metrics reads through a connection of its own: a slow scrape must not make /readyz fail.
  const db = createKysely(
    createPool(options.connectionString, { applicationName: 'taskgate-metrics', max: 1, probe: true }),
  );
  const metrics = processMetrics();
  // A worker or relay alone has no API: its /metrics is here, with the database-wide gauges too.
  const unwatch = metrics.watchDatabase(() => readMetricsSnapshot(db));
  const server = http.createServer((request, response) => {
    let path: string;
    try {
      path = new URL(request.url ?? '/', 'http://probe').pathname;
    } catch {
      // `//` and the like are no path: a throw here would be uncaught, and end the process.
      return send(response, 400, { status: 'bad_request' });
    }
    if (path !== '/healthz' && path !== '/readyz' && path !== '/metrics') {
      return send(response, 404, { status: 'not_found' });
    }
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      response.setHeader('allow', 'GET, HEAD');
      return send(response, 405, { status: 'method_not_allowed' });
    }
    if (path === '/healthz') return send(response, 200, { status: 'ok' });
    if (path === '/metrics') {
      if (!metricsTokenSent(request, options.metricsToken ?? null, options.tokensRequired === true)) {
        response.setHeader('www-authenticate', 'Bearer realm="taskgate-metrics"');
        return send(response, 401, { status: 'unauthorized' });
      }
      void metrics.scrape().then(
        (text) => {
          response.writeHead(200, { 'content-type': metrics.contentType, 'cache-control': 'no-store' });
          response.end(request.method === 'HEAD' ? undefined : text);
        },
        (error: Error) => {
          options.logger.warn({ error: error.message }, 'collecting metrics failed');
          send(response, 500, { status: 'error' });
        },
      );
      return;
    }
    void readinessReport({
      roles: options.checks(),
      stopping: options.stopping(),
      database: pool,
      recentWork: () => workSucceededWithin(RECENT_WORK_MS),
    }).then((report) =>
      send(response, report.ready ? 200 : 503, {
        status: report.ready ? 'ready' : 'not_ready',
        ...(report.reason ? { reason: report.reason } : {}),
        checks: report.checks,
      }),
    );
  });
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port, options.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (error) {
    unwatch();
    await db.destroy();
    await pool.end();
    throw new TaskgateError(
      'TG_STARTUP_FAILED',
      `the health probe could not listen on ${options.host}:${options.port} (TASKGATE_HEALTH_PORT): ${(error as Error).message}`,
      { cause: error },
    );
  }
  const { port } = server.address() as AddressInfo;
  const url = `http://${options.host.includes(':') ? `[${options.host}]` : options.host}:${port}`;
  options.logger.info({ url }, 'health probe listening');
  return {
    url,
    stop: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // A prober's keep-alive connection must not hold the shutdown.
      server.closeAllConnections();
      await closed;
      unwatch();
      await db.destroy();
      await pool.end();
    },
  };
}

function metricsTokenSent(request: http.IncomingMessage, token: string | null, tokensRequired: boolean): boolean {
  // Open only where the API is: a process configured with tokens shows its figures to no one
  // until TASKGATE_METRICS_TOKEN says who may scrape.
  if (token === null) return !tokensRequired;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '');
  if (!match) return false;
  const digest = (text: string) => createHash('sha256').update(text).digest();
  return timingSafeEqual(digest(match[1] as string), digest(token));
}

function send(response: http.ServerResponse, status: number, body: Record<string, unknown>): void {
  const text = JSON.stringify(body);
  response.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
  });
  response.end(text);
}
