import { TaskgateError } from '@taskgate/errors';
import pg from 'pg';
import { describeTarget } from '../connection.ts';

type LogFn = (fields: Record<string, unknown>, message: string) => void;
export interface MigrationLogger {
  readonly info: LogFn;
  readonly warn: LogFn;
}

export interface MigrationSessionOptions {
  readonly connectionString: string;
  /** How long to wait for another runner's lock before giving up (default 120 s). */
  readonly lockTimeoutMs?: number | undefined;
  /** Test seams for forcing the order of two racing runners; never used in production. */
  readonly hooks?:
    | {
        readonly onLockWait?: () => void;
        readonly afterLock?: () => Promise<void>;
      }
    | undefined;
  readonly log: MigrationLogger;
}

/**
 * Session advisory lock key shared by every runner ("taskgate" in ASCII). Held for the whole run so
 * that two processes starting at once apply each migration exactly once, in order — Taskgate's own
 * and every tool module's alike: one lock, so a module's migration never runs beside Taskgate's.
 */
const LOCK_KEY = '8386093285548106853';

/** Runs `work` on one connection holding the migration lock, and releases it afterwards. */
export async function withMigrationLock<T>(
  options: MigrationSessionOptions,
  work: (client: pg.Client) => Promise<T>,
): Promise<T> {
  return withMigrationClient(options.connectionString, async (client) => {
    await acquireLock(client, options);
    try {
      await options.hooks?.afterLock?.();
      return await work(client);
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [LOCK_KEY]).catch(() => {});
    }
  });
}

async function acquireLock(client: pg.Client, options: MigrationSessionOptions): Promise<void> {
  const attempt = await client.query<{ locked: boolean }>('SELECT pg_try_advisory_lock($1) AS locked', [LOCK_KEY]);
  if (attempt.rows[0]?.locked) return;
  const timeoutMs = options.lockTimeoutMs ?? 120_000;
  options.log.info({ timeoutMs }, 'another migration runner holds the lock; waiting for it');
  options.hooks?.onLockWait?.();
  await client.query(`SET lock_timeout = ${Math.max(1, Math.floor(timeoutMs))}`);
  try {
    await client.query('SELECT pg_advisory_lock($1)', [LOCK_KEY]);
  } catch (error) {
    if ((error as { code?: string }).code === '55P03') {
      throw new TaskgateError(
        'TG_MIGRATION_LOCK_TIMEOUT',
        `another migration runner held the lock for more than ${timeoutMs} ms; check pg_locks for advisory lock ${LOCK_KEY}`,
        { cause: error },
      );
    }
    throw error;
  } finally {
    await client.query('RESET lock_timeout').catch(() => {});
  }
}

/** Runs `work` on a connection of its own, closed afterwards; an unreachable database is TG_DB_UNREACHABLE. */
export async function withMigrationClient<T>(
  connectionString: string,
  work: (client: pg.Client) => Promise<T>,
): Promise<T> {
  const client = new pg.Client({
    connectionString,
    application_name: 'taskgate-migrate',
    connectionTimeoutMillis: 5_000,
  });
  client.on('error', () => {});
  try {
    await client.connect();
  } catch (error) {
    throw new TaskgateError(
      'TG_DB_UNREACHABLE',
      `database unreachable at ${describeTarget(connectionString)}: ${messageOf(error)}`,
      { cause: error },
    );
  }
  try {
    return await work(client);
  } finally {
    await client.end().catch(() => {});
  }
}

export function messageOf(error: unknown): string {
  if (error instanceof AggregateError && error.errors.length > 0) return messageOf(error.errors[0]);
  return error instanceof Error ? error.message : String(error);
}
