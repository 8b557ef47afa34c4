import type { FastifyInstance } from 'fastify';

export interface ReadinessReport {
  readonly ready: boolean;
  /** Why not ready, for the operator reading /readyz; absent when ready. */
  readonly reason?: string;
  readonly checks: Readonly<Record<string, 'ok' | 'failing' | 'starting' | 'stopping'>>;
}

export type ReadinessProbe = () => Promise<ReadinessReport>;

export type CheckState = ReadinessReport['checks'][string];

/** How long /readyz waits for the database's answer before calling it failing. */
const DATABASE_CHECK_TIMEOUT_MS = 1_000;

/**
 * The one readiness rule, for the API's /readyz and the health probe of processes without it: the
 * roles' states (all `stopping` once shutdown began), the database answering a `SELECT 1` within a
 * second, and any checks of the caller's own; ready when every one is ok and no shutdown is under way.
 */
export async function readinessReport(input: {
  readonly roles: Readonly<Record<string, CheckState>>;
  readonly stopping: boolean;
  readonly database: { query(text: string): Promise<unknown> };
  readonly more?: Readonly<Record<string, CheckState>>;
}): Promise<ReadinessReport> {
  const checks: Record<string, CheckState> = {};
  for (const [name, state] of Object.entries(input.roles)) checks[name] = input.stopping ? 'stopping' : state;
  checks.database = (await databaseAnswers(input.database)) ? 'ok' : 'failing';
  Object.assign(checks, input.more);
  if (input.stopping) return { ready: false, reason: 'shutting down', checks };
  const notReady = Object.entries(checks).filter(([, state]) => state !== 'ok');
  if (notReady.length > 0) {
    return { ready: false, reason: notReady.map(([name, state]) => `${name} ${state}`).join(', '), checks };
  }
  return { ready: true, checks };
}

async function databaseAnswers(pool: { query(text: string): Promise<unknown> }): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), DATABASE_CHECK_TIMEOUT_MS);
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

/**
 * /healthz answers "is the process alive" and never touches the database, so a database outage
 * does not get healthy processes restarted. /readyz answers "should traffic come here": every role
 * started, the database answering, and not shutting down (503 once SIGTERM has arrived; the API's
 * listener closes soon after, and the health probe of TASKGATE_HEALTH_PORT goes on answering 503
 * until the process exits).
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
