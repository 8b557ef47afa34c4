import pg from 'pg';

/**
 * A backend killed under a connection: DROP DATABASE … WITH (FORCE) in a file's teardown
 * (test/support/databases.ts) terminates every session of that database with 57P01, and a stopped
 * or restarted server ends them the same way (57P02, 57P03, or a socket that just closes).
 */
const TERMINATED = new Set(['57P01', '57P02', '57P03', 'ECONNRESET', 'EPIPE']);

export function isTerminated(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  return (
    (typeof code === 'string' && TERMINATED.has(code)) ||
    (typeof message === 'string' && /^Connection terminated( unexpectedly)?$/.test(message))
  );
}

/**
 * An idle connection has nobody to hand its error to, and an `error` event nobody listens to ends
 * the test process (vitest: "Unhandled error", exit 1 with every test passed). A backend killed
 * during teardown is expected; any other error is thrown on, still unhandled, so it is not hidden.
 */
function tolerateTermination(error: unknown): void {
  if (!isTerminated(error)) throw error;
}

/**
 * A pg.Pool for a test: its idle clients' errors (the pool's `error`) and its checked-out
 * clients' (each client's, from `connect` on) tolerate a killed backend.
 */
export function testPool(config: pg.PoolConfig): pg.Pool {
  const pool = new pg.Pool(config);
  pool.on('error', tolerateTermination);
  pool.on('connect', (client) => client.on('error', tolerateTermination));
  return pool;
}

/** A pg.Client for a test, with the same tolerance of a killed backend while it is idle. */
export function testClient(config: pg.ClientConfig): pg.Client {
  const client = new pg.Client(config);
  client.on('error', tolerateTermination);
  return client;
}
