import type { FastifyInstance } from 'fastify';

export interface ReadinessReport {
  readonly ready: boolean;
  /** Why not ready, for the operator reading /readyz; absent when ready. */
  readonly reason?: string;
  readonly checks: Readonly<Record<string, 'ok' | 'failing' | 'starting' | 'stopping' | 'waiting for a connection'>>;
}

export type ReadinessProbe = () => Promise<ReadinessReport>;

export type CheckState = ReadinessReport['checks'][string];

/** How long /readyz waits for the database's answer before calling it failing (or busy). */
const DATABASE_CHECK_TIMEOUT_MS = 1_000;
/** How recent the roles' last finished statement must be for a check without a connection to read as busy. */
export const RECENT_WORK_MS = 15_000;
/** Postgres's too_many_connections: every slot (max_connections, or the role's limit) is taken. */
const TOO_MANY_CONNECTIONS = '53300';

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
  /**
   * Whether the roles' work got a connection and finished lately (workSucceededWithin): then a
   * check that cannot get one (the pool waits, or Postgres answers 53300) is the slots being
   * full, not the database being down, and the process stays ready.
   */
  readonly recentWork?: () => boolean;
}): Promise<ReadinessReport> {
  const checks: Record<string, CheckState> = {};
  for (const [name, state] of Object.entries(input.roles)) checks[name] = input.stopping ? 'stopping' : state;
  const answer = await databaseAnswers(input.database);
  checks.database =
    answer === 'ok'
      ? 'ok'
      : answer === 'no connection' && input.recentWork?.() === true
        ? 'waiting for a connection'
        : 'failing';
  Object.assign(checks, input.more);
  if (input.stopping) return { ready: false, reason: 'shutting down', checks };
  const notReady = Object.entries(checks).filter(
    ([name, state]) => state !== 'ok' && !(name === 'database' && state === 'waiting for a connection'),
  );
  if (notReady.length > 0) {
    return { ready: false, reason: notReady.map(([name, state]) => `${name} ${state}`).join(', '), checks };
  }
  return { ready: true, checks };
}

/**
 * `no connection`: the check got none — still waiting for one past the timeout (a full pool, or
 * a connect that hangs), the pool's own connect timeout, or Postgres's 53300; `failing`: any
 * other error (refused, authentication, the server shutting down).
 */
async function databaseAnswers(pool: {
  query(text: string): Promise<unknown>;
}): Promise<'ok' | 'no connection' | 'failing'> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'no connection'>((resolve) => {
    timer = setTimeout(() => resolve('no connection'), DATABASE_CHECK_TIMEOUT_MS);
  });
  try {
    return await Promise.race([
      pool.query('SELECT 1').then(
        () => 'ok' as const,
        (error: { code?: unknown; message?: unknown }) =>
          error?.code === TOO_MANY_CONNECTIONS ||
          (typeof error?.message === 'string' && error.message.includes('timeout exceeded when trying to connect'))
            ? ('no connection' as const)
            : ('failing' as const),
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
