import { TaskgateError } from '@taskgate/errors';
import type pg from 'pg';
import type { Migration } from './migration-files.ts';
import {
  type AppliedMigration,
  assertKnownTarget,
  assertMigratable,
  compareMigrations,
  type MigrationStatus,
  pad,
  pendingMigrations,
  revertibleMigrations,
} from './migration-plan.ts';
import {
  type MigrationLogger,
  type MigrationSessionOptions,
  messageOf,
  withMigrationClient,
  withMigrationLock,
} from './migration-session.ts';
import {
  createModuleMigrationTable,
  readModuleApplied,
  recordModuleDown,
  recordModuleUp,
} from './module-migration-table.ts';
import { assertModules, compareModules, type ModuleMigrations, type ModuleStatus } from './module-migrations.ts';
import { installPgBossSchema, type PgBossSchemaState, pgBossPlan, readPgBossSchemaState } from './pgboss-schema.ts';

export type { MigrationLogger };

export interface MigrationRunnerOptions {
  readonly connectionString: string;
  readonly migrations: readonly Migration[];
  readonly logger?: MigrationLogger;
  /** How long to wait for another runner's lock before giving up. */
  readonly lockTimeoutMs?: number;
  /** Install or upgrade pg-boss's schema after Taskgate's own migrations (default true). */
  readonly installPgBoss?: boolean;
  /**
   * Tool modules' own migrations, tracked apart from Taskgate's (taskgate_module_migrations) and
   * applied after Taskgate's and pg-boss's, module by module in this order, under the same lock.
   */
  readonly modules?: readonly ModuleMigrations[];
  /** Test seams for forcing the order of two racing runners; never used in production. */
  readonly hooks?: {
    readonly onLockWait?: () => void;
    readonly afterLock?: () => Promise<void>;
  };
}

export interface MigrationReport {
  /** Taskgate's own migrations. */
  readonly status: MigrationStatus[];
  readonly pgBoss: PgBossSchemaState;
  /** Each loaded module in the order given, then the modules with rows that are not loaded now. */
  readonly modules: ModuleStatus[];
}

export interface AppliedStep {
  readonly version: number;
  readonly name: string;
  readonly durationMs: number;
  /** The tool module the migration belongs to; absent for Taskgate's own. */
  readonly module?: string;
}

export interface PlannedStep {
  readonly label: string;
  readonly sql: string;
  readonly module?: string;
}

export interface DownOptions {
  /** Revert this loaded tool module's migrations instead of Taskgate's. */
  readonly module?: string;
}

/** Bookkeeping table; created by the runner itself, before migration 0001. */
const TABLE = 'taskgate_migrations';

const noopLogger: MigrationLogger = { info: () => {}, warn: () => {} };

export class MigrationRunner {
  readonly #options: MigrationRunnerOptions;
  readonly #modules: readonly ModuleMigrations[];
  readonly #log: MigrationLogger;

  constructor(options: MigrationRunnerOptions) {
    this.#options = options;
    this.#modules = options.modules ?? [];
    assertModules(this.#modules);
    this.#log = options.logger ?? noopLogger;
  }

  /** Read-only: what is applied, pending, edited or unknown (per module too), and pg-boss's schema version. */
  async status(): Promise<MigrationReport> {
    return this.#withClient(async (client) => ({
      ...(await this.#compare(client)),
      pgBoss: await readPgBossSchemaState(client),
    }));
  }

  /** Read-only: the SQL `up` would run, in order, without running it. */
  async plan(to?: number): Promise<PlannedStep[]> {
    assertKnownTarget(this.#options.migrations, to);
    return this.#withClient(async (client) => {
      const { status, modules } = await this.#compare(client);
      assertAllMigratable(status, modules);
      const steps: PlannedStep[] = pendingMigrations(this.#options.migrations, status, to).map((migration) => ({
        label: `${pad(migration.version)}_${migration.name} (${migration.upFile})`,
        sql: migration.upSql,
      }));
      const pgBossSql = this.#options.installPgBoss === false ? null : pgBossPlan(await readPgBossSchemaState(client));
      if (pgBossSql) steps.push({ label: 'pg-boss schema', sql: pgBossSql });
      if (!this.#platformCurrentAfter(status, to)) return steps;
      for (const { module, migration } of this.#pendingModuleMigrations(modules)) {
        steps.push({
          label: `${module}: ${pad(migration.version)}_${migration.name} (${migration.upFile})`,
          sql: migration.upSql,
          module,
        });
      }
      return steps;
    });
  }

  /**
   * Applies Taskgate's pending migrations (up to `to`), installs or upgrades pg-boss's schema,
   * then applies each tool module's pending migrations — only once Taskgate's are all applied,
   * since a module's tables may refer to Taskgate's.
   */
  async up(to?: number): Promise<AppliedStep[]> {
    assertKnownTarget(this.#options.migrations, to);
    return this.#withLock(async (client) => {
      const { status, modules } = await this.#compare(client);
      // Everything is checked before anything runs: a module that is ahead or edited refuses the
      // whole run rather than leaving Taskgate upgraded and the module not.
      assertAllMigratable(status, modules);
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
      const modulePending = this.#pendingModuleMigrations(modules);
      if (!this.#platformCurrentAfter(status, to)) {
        if (modulePending.length > 0) {
          this.#log.warn(
            { to, pending: modulePending.length },
            "tool modules' migrations were not applied: Taskgate's own are not all applied yet",
          );
        }
        return applied;
      }
      for (const { module, migration } of modulePending) {
        applied.push(await this.#apply(client, migration, 'up', module));
      }
      return applied;
    });
  }

  /**
   * Reverts the newest applied migration, or every one above `to` (0 reverts all): Taskgate's
   * own, or with `module` that loaded tool module's.
   */
  async down(to?: number, options: DownOptions = {}): Promise<AppliedStep[]> {
    const { module } = options;
    const entry = module === undefined ? undefined : this.#modules.find((candidate) => candidate.module === module);
    if (module !== undefined && !entry) {
      throw new TaskgateError(
        'TG_USAGE',
        `tool module ${JSON.stringify(module)} is not loaded, so its migrations cannot be reverted; load it with --tools or TASKGATE_TOOLS`,
      );
    }
    assertKnownTarget(entry ? entry.migrations : this.#options.migrations, to, { allowZero: true, module });
    return this.#withLock(async (client) => {
      const { status, modules } = await this.#compare(client);
      const target = entry ? (modules.find((candidate) => candidate.module === entry.module) as ModuleStatus) : null;
      assertMigratable(target ? target.status : status, target?.module);
      const known = entry ? entry.migrations : this.#options.migrations;
      const reverted: AppliedStep[] = [];
      for (const migration of revertibleMigrations(known, target ? target.status : status, to)) {
        reverted.push(await this.#apply(client, migration, 'down', entry?.module));
      }
      return reverted;
    });
  }

  async #compare(client: pg.ClientBase): Promise<{ status: MigrationStatus[]; modules: ModuleStatus[] }> {
    return {
      status: compareMigrations(this.#options.migrations, await readApplied(client)),
      modules: compareModules(this.#modules, await readModuleApplied(client)),
    };
  }

  /** Whether `up(to)` leaves none of Taskgate's own migrations pending. */
  #platformCurrentAfter(status: readonly MigrationStatus[], to: number | undefined): boolean {
    return to === undefined || status.every((row) => row.state !== 'pending' || row.version <= to);
  }

  #pendingModuleMigrations(modules: readonly ModuleStatus[]): { module: string; migration: Migration }[] {
    return this.#modules.flatMap((entry) => {
      const status = modules.find((candidate) => candidate.module === entry.module)?.status ?? [];
      return pendingMigrations(entry.migrations, status).map((migration) => ({ module: entry.module, migration }));
    });
  }

  async #apply(
    client: pg.Client,
    migration: Migration,
    direction: 'up' | 'down',
    module?: string,
  ): Promise<AppliedStep> {
    const label = `${pad(migration.version)}_${migration.name}`;
    const sql = direction === 'up' ? migration.upSql : migration.downSql;
    const started = performance.now();
    // One transaction per migration: a failure leaves the database exactly as the previous
    // migration left it, with nothing recorded.
    await client.query('BEGIN');
    try {
      await client.query(sql);
      if (module !== undefined) {
        if (direction === 'up') await recordModuleUp(client, module, migration);
        else await recordModuleDown(client, module, migration.version);
      } else if (direction === 'up') {
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
      // A module's files live wherever its package does, so its message names the file itself.
      const what =
        module === undefined
          ? `migration ${label} (${direction}) failed${lineOf(sql, error)}`
          : `migration ${label} (${direction}) of tool module ${module} failed${lineOf(sql, error)} of ${file}`;
      throw new TaskgateError('TG_MIGRATION_FAILED', `${what}: ${messageOf(error)} — nothing from it was applied`, {
        cause: error,
        details: { version: migration.version, direction, file, ...(module === undefined ? {} : { module }) },
      });
    }
    const durationMs = Math.round(performance.now() - started);
    this.#log.info(
      {
        version: migration.version,
        name: migration.name,
        direction,
        durationMs,
        ...(module === undefined ? {} : { module }),
      },
      `migration ${direction}`,
    );
    const step = { version: migration.version, name: migration.name, durationMs };
    return module === undefined ? step : { ...step, module };
  }

  async #withLock<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
    return withMigrationLock(this.#sessionOptions(), async (client) => {
      await client.query(`CREATE TABLE IF NOT EXISTS ${TABLE} (
        version integer PRIMARY KEY,
        name text NOT NULL,
        checksum text NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT now()
      )`);
      // Only a run with modules creates the modules' table: an install without any keeps the
      // schema it always had (and `down --all` still leaves only taskgate_migrations).
      if (this.#modules.length > 0) await createModuleMigrationTable(client);
      return await work(client);
    });
  }

  async #withClient<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
    return withMigrationClient(this.#options.connectionString, work);
  }

  #sessionOptions(): MigrationSessionOptions {
    const { connectionString, lockTimeoutMs, hooks } = this.#options;
    return { connectionString, lockTimeoutMs, hooks, log: this.#log };
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

/** Taskgate's own first, then each loaded module's; unloaded modules are never refused. */
function assertAllMigratable(status: readonly MigrationStatus[], modules: readonly ModuleStatus[]): void {
  assertMigratable(status);
  for (const entry of modules) if (entry.loaded) assertMigratable(entry.status, entry.module);
}

/** " at line N" from a Postgres error's character position in the migration file, if it has one. */
function lineOf(sql: string, error: unknown): string {
  const position = Number((error as { position?: string }).position);
  if (!Number.isInteger(position) || position < 1) return '';
  return ` at line ${sql.slice(0, position - 1).split('\n').length}`;
}
