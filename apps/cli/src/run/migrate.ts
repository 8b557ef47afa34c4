import {
  assertKnownTarget,
  assertMigratable,
  loadMigrations,
  type MigrationReport,
  MigrationRunner,
  type MigrationStatus,
  PGBOSS_SCHEMA,
  PLATFORM_MODULE,
} from '@taskgate/db';
import { TaskgateError } from '@taskgate/errors';
import type { Config } from '../config.ts';
import { openDatabase } from '../database.ts';
import type { Logger } from '../logger.ts';
import { moduleMigrationsOf } from '../module-migrations.ts';
import { projectDefaults, toolModulesOf } from '../tool-modules.ts';

export interface MigrateArgs {
  readonly action: 'up' | 'down' | 'status' | 'plan';
  readonly to?: number;
  readonly all?: boolean;
  readonly json?: boolean;
  /** Tool module specs whose migrations are included (`--tools`, else TASKGATE_TOOLS, else the project's default modules). */
  readonly tools?: readonly string[];
  /** Where relative specs and package names resolve from. */
  readonly cwd?: string;
  /** `down --module NAME`: revert that tool module's migrations instead of Taskgate's. */
  readonly module?: string | undefined;
}

export interface Output {
  /** stdout: what the command is for (a table, SQL, what was applied). */
  readonly write: (line: string) => void;
  /** stderr: context around it, so `migrate plan > x.sql` holds only SQL. */
  readonly note: (line: string) => void;
}

/** `taskgate migrate up|down|status|plan`, against DATABASE_URL or the embedded database. */
export async function runMigrate(args: MigrateArgs, config: Config, logger: Logger, out: Output): Promise<number> {
  // Modules load before the database opens: a typo in --tools answers at once, embedded or not.
  const modules = await moduleMigrationsOf(await toolModulesOf(args.tools ?? [], config, args.cwd ?? process.cwd()));
  if (args.module !== undefined && !modules.some((entry) => entry.module === args.module)) {
    const loaded = modules.map((entry) => entry.module).join(', ') || 'none';
    throw new TaskgateError(
      'TG_USAGE',
      `--module ${args.module} names no loaded tool module with migrations (loaded: ${loaded}); name its file or package with --tools`,
    );
  }
  // A --to that names no migration is a usage error, answered before any database is opened.
  const migrations = await loadMigrations();
  const known =
    args.module === undefined ? migrations : (modules.find((entry) => entry.module === args.module)?.migrations ?? []);
  assertKnownTarget(known, args.to, {
    allowZero: args.action === 'down',
    module: args.module,
  });
  const database = await openDatabase(config, logger);
  try {
    const runner = new MigrationRunner({
      connectionString: database.connectionString,
      migrations,
      modules,
      logger: logger.child({ component: 'migrate' }),
    });
    const context = args.action === 'plan' ? out.note : out.write;
    if (!args.json) context(`database: ${database.description}`);
    if (!args.json && (args.tools ?? []).length === 0 && config.toolModules.length === 0) {
      // Said, so nobody applies the ledger's tables to a database of their own by following "run up",
      // and nobody wonders where their module's tables went after forgetting --tools.
      const defaults = projectDefaults(args.cwd ?? process.cwd());
      context(
        defaults !== null && defaults.tools.length > 0 && defaults.present
          ? `tool modules: none named (--tools, TASKGATE_TOOLS), so the default modules ${defaults.file} declares are included`
          : "tool modules: none named (--tools, TASKGATE_TOOLS), so only Taskgate's own migrations are included",
      );
    }
    switch (args.action) {
      case 'status': {
        const report = await runner.status();
        if (args.json) {
          out.write(JSON.stringify({ database: database.description, ...report }, null, 2));
        } else {
          for (const line of statusTable(report)) out.write(line);
        }
        // The table is printed first so the operator sees which rows are the problem; then the
        // status is refused like up and down would refuse it, with the same code and exit status.
        assertMigratable(report.status);
        for (const entry of report.modules) if (entry.loaded) assertMigratable(entry.status, entry.module);
        return 0;
      }
      case 'plan': {
        const steps = await runner.plan(args.to);
        if (steps.length === 0) out.write('-- nothing to apply: the database is up to date');
        for (const step of steps) {
          out.write(`-- ${step.label}`);
          out.write(step.sql.trimEnd());
          out.write('');
        }
        return 0;
      }
      case 'up': {
        const applied = await runner.up(args.to);
        for (const step of applied) out.write(`applied ${label(step)} (${step.durationMs} ms)`);
        out.write(applied.length === 0 ? 'up to date: nothing to apply' : `applied ${applied.length} migration(s)`);
        return 0;
      }
      case 'down': {
        if (args.all && args.to !== undefined) {
          throw new TaskgateError('TG_USAGE', 'migrate down takes --to or --all, not both');
        }
        const reverted = await runner.down(args.all ? 0 : args.to, { module: args.module });
        for (const step of reverted) out.write(`reverted ${label(step)} (${step.durationMs} ms)`);
        out.write(reverted.length === 0 ? 'nothing to revert' : `reverted ${reverted.length} migration(s)`);
        // pg-boss's schema is not one of Taskgate's migrations: it holds pg-boss's own jobs and
        // version, `up` reuses it as it is, and dropping it is the one step nobody can undo.
        if (args.all && args.module === undefined) out.write(PGBOSS_LEFT);
        return 0;
      }
    }
  } finally {
    await database.stop();
  }
}

export const PGBOSS_LEFT = `pg-boss's schema "${PGBOSS_SCHEMA}" is left in place with its jobs (up reuses it); to remove it too: DROP SCHEMA ${PGBOSS_SCHEMA} CASCADE`;

function label(step: { version: number; name: string; module?: string }): string {
  const name = `${String(step.version).padStart(4, '0')}_${step.name}`;
  return step.module === undefined ? name : `${name} of tool module ${step.module}`;
}

/** One row per migration, each labelled with its module (Taskgate's own are `taskgate`). */
export function statusTable(report: Pick<MigrationReport, 'status' | 'pgBoss' | 'modules'>): string[] {
  const { status, pgBoss, modules } = report;
  const cells = (module: string, row: MigrationStatus) => [
    module,
    String(row.version).padStart(4, '0'),
    row.name,
    row.state,
    row.appliedAt ? row.appliedAt.toISOString() : '-',
  ];
  const rows = [
    ...status.map((row) => cells(PLATFORM_MODULE, row)),
    ...modules.flatMap((entry) => entry.status.map((row) => cells(entry.module, row))),
  ];
  const header = ['MODULE', 'VERSION', 'NAME', 'STATE', 'APPLIED AT'];
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => (row[column] as string).length)),
  );
  const format = (cells: string[]) =>
    cells
      .map((cell, column) => cell.padEnd(widths[column] as number))
      .join('  ')
      .trimEnd();
  const loadedRows = [status, ...modules.filter((entry) => entry.loaded).map((entry) => entry.status)].flat();
  const pending = loadedRows.filter((row) => row.state === 'pending').length;
  const troubled = loadedRows.filter((row) => row.state === 'edited' || row.state === 'unknown').length;
  const pgBossLine =
    pgBoss.installed === null
      ? `pg-boss schema: not installed (needs version ${pgBoss.required})`
      : pgBoss.installed === pgBoss.required
        ? `pg-boss schema: version ${pgBoss.installed} (current)`
        : `pg-boss schema: version ${pgBoss.installed}, needs ${pgBoss.required}`;
  const unloaded = modules
    .filter((entry) => !entry.loaded)
    .map(
      (entry) =>
        `tool module ${entry.module} is not loaded: its ${entry.status.length} applied migration(s) are left alone (name it with --tools to manage them)`,
    );
  return [
    format(header),
    ...rows.map(format),
    pgBossLine,
    ...unloaded,
    troubled > 0
      ? `${troubled} edited or unknown: the database does not match this code (see below)`
      : pending === 0
        ? 'all migrations applied'
        : `${pending} pending: run taskgate migrate up`,
  ];
}
