import { TaskgateError } from '@taskgate/errors';
import pg from 'pg';
import { describeTarget } from '../connection.ts';
import type { Migration } from './migration-files.ts';
import {
  type AppliedMigration,
  assertMigratable,
  compareMigrations,
  type MigrationStatus,
  pad,
  pendingMigrations,
  revertibleMigrations,
} from './migration-plan.ts';
import { installPgBossSchema, type PgBossSchemaState, pgBossPlan, readPgBossSchemaState } from './pgboss-schema.ts';

type LogFn = (fields: Record<string, unknown>, message: string) => void;
export interface MigrationLogger {
  readonly info: LogFn;
  readonly warn: LogFn;
}

export interface MigrationRunnerOptions {
  readonly connectionString: string;
  readonly migrations: readonly Migration[];
  readonly logger?: MigrationLogger;
  /** How long to wait for another runner's lock before giving up. */
  readonly lockTimeoutMs?: number;
  /** Install or upgrade pg-boss's schema after Taskgate's own migrations (default true). */
  readonly installPgBoss?: boolean;
  /** Test seams for forcing the order of two racing runners; never used in production. */
  readonly hooks?: {
    readonly onLockWait?: () => void;
    readonly afterLock?: () => Promise<void>;
  };
}

export interface MigrationReport {
  readonly status: MigrationStatus[];
  readonly pgBoss: PgBossSchemaState;
}

export interface AppliedStep {
  readonly version: number;
  readonly name: string;
  readonly durationMs: number;
}

export interface PlannedStep {
  readonly label: string;
  readonly sql: string;
}

/** Bookkeeping table; created by the runner itself, before migration 0001. */
const TABLE = 'taskgate_migrations';

/**
 * Session advisory lock key shared by every runner ("taskgate" in ASCII). Held for the whole run so
 * that two processes starting at once apply each migration exactly once, in order.
 */
const LOCK_KEY = '8386093285548106853';

const noopLogger: MigrationLogger = { info: () => {}, warn: () => {} };

export class MigrationRunner {
  readonly #options: MigrationRunnerOptions;
  readonly #log: MigrationLogger;

  constructor(options: MigrationRunnerOptions) {
    this.#options = options;
    this.#log = options.logger ?? noopLogger;
  }

  /** Read-only: what is applied, pending, edited or unknown, and pg-boss's schema version. */
  async status(): Promise<MigrationReport> {
    return this.#withClient(async (client) => ({
      status: compareMigrations(this.#options.migrations, await readApplied(client)),
      pgBoss: await readPgBossSchemaState(client),
    }));
  }

  /** Read-only: the SQL `up` would run, in order, without running it. */
  async plan(to?: number): Promise<PlannedStep[]> {
    return this.#withClient(async (client) => {
      const status = compareMigrations(this.#options.migrations, await readApplied(client));
      assertMigratable(status);
      const steps: PlannedStep[] = pendingMigrations(this.#options.migrations, status, to).map((migration) => ({
        label: `${pad(migration.version)}_${migration.name} (${migration.upFile})`,
        sql: migration.upSql,
      }));
      const pgBossSql = this.#options.installPgBoss === false ? null : pgBossPlan(await readPgBossSchemaState(client));
      if (pgBossSql) steps.push({ label: 'pg-boss schema', sql: pgBossSql });
      return steps;
    });
  }

  /** Applies pending migrations (up to `to`), then installs or upgrades pg-boss's schema. */
  async up(to?: number): Promise<AppliedStep[]> {
    return this.#withLock(async (client) => {
      const status = compareMigrations(this.#options.migrations, await readApplied(client));
      assertMigratable(status);
      const applied: AppliedStep[] = [];
      for (const migration of pendingMigrations(this.#options.migrations, status, to)) {
        applied.push(await this.#apply(client, migration, 'up'));
      }
      if (this.#options.installPgBoss !== false) {
        const before = await readPgBossSchemaState(client);
        if (before.installed !== before.required) {
          await installPgBossSchema(this.#options.connectionString);
          this.#log.info({ from: before.installed, to: before.required }, 'pg-boss schema installed');
        }
      }
      return applied;
    });
  }

  /** Reverts the newest applied migration, or every one above `to` (0 reverts all). */
  async down(to?: number): Promise<AppliedStep[]> {
    return this.#withLock(async (client) => {
      const status = compareMigrations(this.#options.migrations, await readApplied(client));
      assertMigratable(status);
      const reverted: AppliedStep[] = [];
      for (const migration of revertibleMigrations(this.#options.migrations, status, to)) {
        reverted.push(await this.#apply(client, migration, 'down'));
      }
      return reverted;
    });
  }

  async #apply(client: pg.Client, migration: Migration, direction: 'up' | 'down'): Promise<AppliedStep> {
    const label = `${pad(migration.version)}_${migration.name}`;
    const sql = direction === 'up' ? migration.upSql : migration.downSql;
    const started = performance.now();
    // One transaction per migration: a failure leaves the database exactly as the previous
    // migration left it, with nothing recorded.
    await client.query('BEGIN');
    try {
      await client.query(sql);
      if (direction === 'up') {
        await client.query(`INSERT INTO ${TABLE} (version, name, checksum) VALUES ($1, $2, $3)`, [
          migration.version,
          migration.name,
          migration.checksum,
        ]);
      } else {
        await client.query(`DELETE FROM ${TABLE} WHERE version = $1`, [migration.version]);
      }
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      const file = direction === 'up' ? migration.upFile : migration.downFile;
      throw new TaskgateError(
        'TG_MIGRATION_FAILED',
        `migration ${label} (${direction}) failed${lineOf(sql, error)}: ${messageOf(error)} — nothing from it was applied`,
        { cause: error, details: { version: migration.version, direction, file } },
      );
    }
    const durationMs = Math.round(performance.now() - started);
    this.#log.info(
      { version: migration.version, name: migration.name, direction, durationMs },
      `migration ${direction}`,
    );
    return { version: migration.version, name: migration.name, durationMs };
  }

  async #withLock<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
    return this.#withClient(async (client) => {
      await this.#acquireLock(client);
      try {
        await this.#options.hooks?.afterLock?.();
        await client.query(`CREATE TABLE IF NOT EXISTS ${TABLE} (
          version integer PRIMARY KEY,
          name text NOT NULL,
          checksum text NOT NULL,
          applied_at timestamptz NOT NULL DEFAULT now()
        )`);
        return await work(client);
      } finally {
        await client.query('SELECT pg_advisory_unlock($1)', [LOCK_KEY]).catch(() => {});
      }
    });
  }

  async #acquireLock(client: pg.Client): Promise<void> {
    const attempt = await client.query<{ locked: boolean }>('SELECT pg_try_advisory_lock($1) AS locked', [LOCK_KEY]);
    if (attempt.rows[0]?.locked) return;
    const timeoutMs = this.#options.lockTimeoutMs ?? 120_000;
    this.#log.info({ timeoutMs }, 'another migration runner holds the lock; waiting for it');
    this.#options.hooks?.onLockWait?.();
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

  async #withClient<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
    const client = new pg.Client({
      connectionString: this.#options.connectionString,
      application_name: 'taskgate-migrate',
      connectionTimeoutMillis: 5_000,
    });
    client.on('error', () => {});
    try {
      await client.connect();
    } catch (error) {
      throw new TaskgateError(
        'TG_DB_UNREACHABLE',
        `database unreachable at ${describeTarget(this.#options.connectionString)}: ${messageOf(error)}`,
        { cause: error },
      );
    }
    try {
      return await work(client);
    } finally {
      await client.end().catch(() => {});
    }
  }
}

async function readApplied(client: pg.ClientBase): Promise<AppliedMigration[]> {
  const exists = await client.query<{ present: string | null }>('SELECT to_regclass($1) AS present', [TABLE]);
  if (!exists.rows[0]?.present) return [];
  const result = await client.query<{ version: number; name: string; checksum: string; applied_at: Date }>(
    `SELECT version, name, checksum, applied_at FROM ${TABLE} ORDER BY version`,
  );
  return result.rows.map((row) => ({
    version: row.version,
    name: row.name,
    checksum: row.checksum,
    appliedAt: row.applied_at,
  }));
}

function messageOf(error: unknown): string {
  if (error instanceof AggregateError && error.errors.length > 0) return messageOf(error.errors[0]);
  return error instanceof Error ? error.message : String(error);
}

/** " at line N" from a Postgres error's character position in the migration file, if it has one. */
function lineOf(sql: string, error: unknown): string {
  const position = Number((error as { position?: string }).position);
  if (!Number.isInteger(position) || position < 1) return '';
  return ` at line ${sql.slice(0, position - 1).split('\n').length}`;
}
