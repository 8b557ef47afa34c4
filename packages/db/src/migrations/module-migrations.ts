import { TaskgateError } from '@taskgate/errors';
import type { Migration } from './migration-files.ts';
import { type AppliedMigration, compareMigrations, type MigrationStatus } from './migration-plan.ts';

/**
 * A tool module's own migrations, in the same file format as Taskgate's. They are recorded per
 * module in taskgate_module_migrations, so a module's 0001 never collides with Taskgate's 0001.
 */
export interface ModuleMigrations {
  /** The module's name, the key of its rows: `[a-z0-9][a-z0-9_.-]*` or `@scope/name`, at most 64 characters. */
  readonly module: string;
  readonly migrations: readonly Migration[];
  /** The folder they were loaded from, for messages and `status --json`. */
  readonly dir?: string;
}

/** A row of taskgate_module_migrations. */
export interface AppliedModuleMigration extends AppliedMigration {
  readonly module: string;
}

export interface ModuleStatus {
  readonly module: string;
  /**
   * false: the database has rows of this module but no module of that name was given to the
   * runner; its rows are reported as `unloaded` and left alone.
   */
  readonly loaded: boolean;
  readonly dir: string | null;
  readonly status: MigrationStatus[];
}

/** Labels Taskgate's own migrations in `status`; a module may not take it. */
export const PLATFORM_MODULE = 'taskgate';

const MAX_NAME_LENGTH = 64;
const SEGMENT = '[a-z0-9][a-z0-9_.-]*';
const NAME_PATTERN = new RegExp(`^(?:${SEGMENT}|@${SEGMENT}/${SEGMENT})$`);

/** Throws TG_TOOL_MODULE_INVALID unless `name` can key a module's migrations; `where` names its source. */
export function assertModuleName(name: unknown, where = ''): asserts name is string {
  const prefix = where ? `${where}: ` : '';
  if (typeof name !== 'string') {
    throw new TaskgateError(
      'TG_TOOL_MODULE_INVALID',
      `${prefix}a tool module's name must be a string (got ${typeof name})`,
    );
  }
  if (name.length > MAX_NAME_LENGTH || !NAME_PATTERN.test(name)) {
    throw new TaskgateError(
      'TG_TOOL_MODULE_INVALID',
      `${prefix}tool module name ${JSON.stringify(name)} must be 1-${MAX_NAME_LENGTH} characters of a-z, 0-9, "_", "." and "-" starting with a letter or digit, or @scope/name of those`,
    );
  }
  if (name === PLATFORM_MODULE) {
    throw new TaskgateError(
      'TG_TOOL_MODULE_INVALID',
      `${prefix}tool module name "${PLATFORM_MODULE}" is reserved for Taskgate's own migrations`,
    );
  }
}

/** Validates every name and refuses two modules of one name (their rows would be one history). */
export function assertModules(modules: readonly ModuleMigrations[]): void {
  const seen = new Set<string>();
  for (const entry of modules) {
    assertModuleName(entry.module, entry.dir);
    if (seen.has(entry.module)) {
      throw new TaskgateError('TG_TOOL_MODULE_INVALID', `two tool modules are named ${JSON.stringify(entry.module)}`);
    }
    seen.add(entry.module);
  }
}

/**
 * Joins each module's files with its rows, in the order the modules were given; then the modules
 * the database has rows of but that are not loaded, by name, with every row `unloaded`. Pure.
 */
export function compareModules(
  modules: readonly ModuleMigrations[],
  applied: readonly AppliedModuleMigration[],
): ModuleStatus[] {
  const byModule = new Map<string, AppliedModuleMigration[]>();
  for (const row of applied) byModule.set(row.module, [...(byModule.get(row.module) ?? []), row]);
  const loaded = modules.map((entry) => ({
    module: entry.module,
    loaded: true,
    dir: entry.dir ?? null,
    status: compareMigrations(entry.migrations, byModule.get(entry.module) ?? []),
  }));
  const names = new Set(modules.map((entry) => entry.module));
  const unloaded = [...byModule.keys()]
    .filter((module) => !names.has(module))
    .sort()
    .map((module) => ({
      module,
      loaded: false,
      dir: null,
      status: (byModule.get(module) ?? [])
        .map((row) => ({ version: row.version, name: row.name, state: 'unloaded' as const, appliedAt: row.appliedAt }))
        .sort((a, b) => a.version - b.version),
    }));
  return [...loaded, ...unloaded];
}
