import { loadMigrations, type ModuleMigrations } from '@taskgate/db';
import { isTaskgateError, TaskgateError } from '@taskgate/errors';
import type { ToolModule } from '@taskgate/tools';

/**
 * The migrations of the loaded tool modules that export a `migrations` folder, in load order
 * (the folder's files are named like Taskgate's: `NNNN_name.up.sql` + `.down.sql`); tracked under
 * each module's name, apart from Taskgate's own.
 */
export async function moduleMigrationsOf(modules: readonly ToolModule[]): Promise<ModuleMigrations[]> {
  const result: ModuleMigrations[] = [];
  for (const module of modules) {
    if (module.migrationsDir === null) continue;
    try {
      result.push({
        module: module.name,
        migrations: await loadMigrations(module.migrationsDir),
        dir: module.migrationsDir,
      });
    } catch (error) {
      if (!isTaskgateError(error, 'TG_MIGRATION_FILES_INVALID')) throw error;
      throw new TaskgateError('TG_MIGRATION_FILES_INVALID', `tool module ${module.file}: ${error.message}`, {
        cause: error,
      });
    }
  }
  return result;
}
