import { TaskgateError } from '@taskgate/errors';
import pg from 'pg';
import { isSharedSession, PreparingClient } from './preparing-client.ts';

export interface PoolOptions {
  /** Shown in pg_stat_activity, so an operator can tell the roles' connections apart. */
  readonly applicationName: string;
  readonly max?: number;
  readonly connectTimeoutMs?: number;
  /** A probe's own pool (/readyz): its answers say nothing of whether the roles' work proceeds. */
  readonly probe?: boolean;
}

/** When a pool of this process last lent a connection that came back fine (performance.now()). */
let lastWorkAt = Number.NEGATIVE_INFINITY;

/**
 * Whether the roles' pools of this process got work done within the last `ms`: a /readyz whose
 * own check waits for a connection (the slots are full) while this holds sees a busy database,
 * not a down one.
 */
export function workSucceededWithin(ms: number, now: number = performance.now()): boolean {
  return now - lastWorkAt <= ms;
}

export function createPool(connectionString: string, options: PoolOptions): pg.Pool {
  const pool = new pg.Pool({
    Client: isSharedSession(connectionString) ? pg.Client : PreparingClient,
    connectionString,
    application_name: options.applicationName,
    max: options.max ?? 10,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 5_000,
    idleTimeoutMillis: 30_000,
  });
  // An idle client that loses its connection (database restart, network cut) emits 'error' on the
  // pool; unhandled, that would crash the process. The pool drops the client and the next query
  // gets a fresh connection, so there is nothing else to do here.
  pool.on('error', () => {});
  // A client given back without an error: a statement ran (its own error, if any, was an answer).
  if (options.probe !== true) {
    // pool.query() gives its client back with the query's error: null (not undefined) on success.
    pool.on('release', (error: Error | null | undefined) => {
      if (!error) lastWorkAt = performance.now();
    });
  }
  // A checked-out client has no listener of the pool's: pg-pool takes its idle listener off while
  // the client is lent out. A connection that breaks between two statements of a transaction (a
  // Postgres restart while a worker's final commit runs its effects) then emits 'error' on the
  // client itself, and an 'error' nobody listens to ends the process. The broken client's next
  // statement rejects (the transaction fails and is handled there), and on release the pool sees it
  // is no longer queryable and discards it, so the listener has nothing to do but exist.
  pool.on('connect', (client) => {
    client.on('error', () => {});
  });
  return pool;
}

/** The connection string without its password, safe for logs and error messages. */
export function redactConnectionString(connectionString: string): string {
  try {
    const url = new URL(connectionString);
    if (url.password) url.password = '***';
    return url.toString();
  } catch {
    return '<unparseable connection string>';
  }
}

/** host:port/database of a connection string, for one-line messages. */
export function describeTarget(connectionString: string): string {
  try {
    const url = new URL(connectionString);
    return `${url.hostname}:${url.port || '5432'}${url.pathname}`;
  } catch {
    return '<unparseable connection string>';
  }
}

/**
 * Connects once and runs `SELECT 1`, turning every way of failing into one TG_DB_UNREACHABLE
 * error whose message names the target and the cause, never the password.
 */
export async function probeDatabase(connectionString: string, source: string, timeoutMs = 5_000): Promise<void> {
  const client = new pg.Client({
    connectionString,
    connectionTimeoutMillis: timeoutMs,
    application_name: 'taskgate-probe',
  });
  // A connection that fails after connect() resolved would otherwise surface as an unhandled 'error'.
  client.on('error', () => {});
  try {
    await client.connect();
    await client.query('SELECT 1');
  } catch (error) {
    throw new TaskgateError(
      'TG_DB_UNREACHABLE',
      `database unreachable at ${describeTarget(connectionString)} (${source}): ${describeConnectError(error)}`,
      { cause: error, details: { target: describeTarget(connectionString), source } },
    );
  } finally {
    await client.end().catch(() => {});
  }
}

function describeConnectError(error: unknown): string {
  if (error instanceof AggregateError && error.errors.length > 0) {
    return describeConnectError(error.errors[0]);
  }
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return typeof code === 'string' && !error.message.includes(code) ? `${code} ${error.message}` : error.message;
  }
  return String(error);
}
